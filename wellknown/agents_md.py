"""Generated Markdown for agents: ``/AGENTS.md`` and the versioning policy (``/docs/versioning``).

Everything comes from the registry, settings, the content pack, the version registry and the
app's routes: a section about a route group appears only once its routes are served.
"""

from __future__ import annotations

from collections.abc import Iterable

from agent_server.capabilities.projections import DIALECTS
from agent_server.capabilities.registry import Registry, ToolSpec
from agent_server.foundation.settings import Settings
from agent_server.knowledge.pack import Company, Plan
from agent_server.mcp.versions import MCP_PROTOCOL_VERSION
from agent_server.policies.retry_guidance import NOT_RETRIED, RATE_LIMITED, SERVER_ERROR
from agent_server.policies.versions import FINAL_NOTICE_SECONDS, POLICY_PATH, VersionRegistry, http_date
from wellknown.acp import ACP_API_BASE, ACP_DISCOVERY_PATH, ACP_VERSION
from wellknown.mcp import MCP_PATH
from wellknown.oauth import AGENT_AUTH_PATH, PROTECTED_RESOURCE_PATH, REGISTER_PATH


def first_sentence(text: str) -> str:
    line = " ".join(text.split())
    end = line.find(". ")
    return line if end < 0 else line[: end + 1]


def _tool_line(spec: ToolSpec) -> str:
    hints = ["read-only" if spec.meta.read_only else "writes"]
    if spec.meta.open_world:
        hints.append("reaches outside services")
    if spec.meta.scope:
        hints.append(f"needs scope `{spec.meta.scope}`")
    return f"- `{spec.name}` — {first_sentence(spec.description)} ({', '.join(hints)})"


def _plan_line(plan: Plan) -> str:
    rate = (
        f"{plan.requests_per_minute} requests/minute per key"
        if plan.requests_per_minute
        else "negotiated rate"
    )
    if plan.anonymous_agents:
        return f"- {plan.name}: {rate}, keys from POST /agent/auth valid {plan.trial_days} days, scopes {', '.join(plan.scopes)}"
    return f"- {plan.name}: {rate}, {plan.trial_days}-day trial, scopes {', '.join(plan.scopes)}"


def _agent_auth_lines(base: str, settings: Settings, plans: list[Plan]) -> list[str]:
    """How agents get a key without a person at a keyboard: what POST /agent/auth issues today."""
    path, lines = f"{base}{AGENT_AUTH_PATH}", []
    free = next((plan for plan in plans if plan.anonymous_agents), None)
    if free is not None:
        quota = f", {free.monthly_token_quota:,} tokens a month" if free.monthly_token_quota else ""
        cap = f"; at most {free.max_keys} live keys per address" if free.max_keys else ""
        lines.append(
            f'- No account yet: `POST {path}` with `{{"identity_type": "anonymous", "email": ...}}` answers '
            f"201 `{{api_key, expires_at, scopes}}`: a {free.name}-plan key (scopes {', '.join(free.scopes)}; "
            f"models {', '.join(free.models)}; {free.requests_per_minute} requests per minute{quota}) that "
            f"works at once and expires after {free.trial_days} days{cap}. When that address registers an "
            "organisation, its live keys become the organisation's."
        )
    minutes = settings.agent_assertion_key_ttl_seconds // 60
    lines.append(
        f'- For a person of an organisation: `POST {path}` with `{{"identity_type": "identity_assertion", '
        '"assertion": "<ID-JAG>"}`, a JWT (typ `oauth-id-jag+jwt`) from the identity provider of the '
        "organisation's single sign-on, `aud` this service's issuer, with `client_id`, `sub`, `email`, "
        f"`exp`, `iat` and a `jti` used once: a key of that organisation for {minutes} minutes."
    )
    return lines


def agents_md(
    registry: Registry,
    settings: Settings,
    company: Company,
    plans: list[Plan],
    paths: Iterable[str],
    versions: VersionRegistry,
) -> str:
    base = settings.public_base_url.rstrip("/")
    served = set(paths)
    out: list[str] = [
        f"# {company.name}: AGENTS.md",
        "",
        f"{' '.join(company.tagline.split())} This file tells an agent how to use the service at {base}. "
        "It is generated from the running service, so it lists what is live.",
        "",
        "## Start here",
        "",
        f"- MCP endpoint: `{base}{MCP_PATH}` (streamable HTTP, JSON-RPC 2.0, protocol {MCP_PROTOCOL_VERSION}, "
        "stateless, no authentication). Send `Accept: application/json, text/event-stream`; "
        "`GET` on it returns the server card.",
        f"- Machine-readable description: `{base}/openapi.json` (OpenAPI 3.1).",
        f"- Catalogue of everything: `{base}/.well-known/api-catalog` (RFC 9727 linkset); "
        f"MCP server card `{base}/.well-known/mcp.json`; A2A card `{base}/.well-known/agent-card.json`; "
        f"skills `{base}/.well-known/agent-skills/index.json`.",
        "",
        "## Tools",
        "",
        *(_tool_line(t) for t in registry.tools),
        "",
    ]
    if registry.resources:
        out += ["## Resources (MCP `resources/read`)", ""]
        out += [f"- `{r.uri}` — {r.title}" for r in registry.resources] + [""]
    out += [
        "## Calling tools without MCP",
        "",
        f"- `GET {base}/api/tools.php?dialect=` one of {', '.join(DIALECTS)}: the `tools` array each "
        "vendor's function-calling request takes.",
        f'- `POST {base}/api/tools/call` with `{{"name": "<tool>", "arguments": {{...}}}}` runs one tool; '
        "an invalid argument is a 400 that names the field.",
        f"- `GET {base}/api/capabilities.php`: every tool and resource with its schemas.",
        "",
    ]
    if "/api/ask.php" in served:
        out += [
            "## Ask",
            "",
            f'- `POST {base}/api/ask.php` with `{{"query": "..."}}` answers a question in plain words. '
            "With `Prefer: streaming` and `Accept: text/event-stream` the answer streams as SSE. "
            "`GET` on it describes the endpoint.",
            "",
        ]
    if ACP_DISCOVERY_PATH in served:
        out += [
            "## Buying (Agentic Commerce Protocol)",
            "",
            f"- Agent platforms buy trainings, fixed-fee consulting packages and hardware over ACP {ACP_VERSION}: "
            f"REST under `{base}{ACP_API_BASE}/checkout_sessions` or the five `*_checkout_session` MCP "
            "tools, with the platform's credential (`Authorization: Bearer`, issued by the operator); "
            "on the MCP tools an OAuth access token with the scope `commerce:checkout` buys for its "
            "organisation instead.",
            "- Prices exclude VAT; a session adds it (the destination's standard rate, EU countries) once `fulfillment_details.address` names the "
            "country. Consulting packages that take your team's time are booked for a date range: "
            "choose one of their `local_delivery` options (`booking:<item>:<YYYY-MM-DD>`).",
            f"- Discovery: `GET {base}{ACP_DISCOVERY_PATH}`. Product feed: "
            f"`GET {base}{ACP_API_BASE}/feeds/catalogue/products`.",
            "",
        ]
    if served & {"/api/jobs.php", "/api/jobs"}:
        out += [
            "## Jobs",
            "",
            f'- `POST {base}/api/jobs.php` with `{{"type": "ask" | "faq_lookup" | "kb_refresh", "input": {{...}}}}` '
            "and an `Idempotency-Key` header starts a job; poll the returned `poll_url` "
            "(`/api/jobs?id=<job_id>`). Jobs expire 30 minutes after creation.",
            "",
        ]
    out += [
        "## Authentication",
        "",
        "- The public site API and the MCP endpoint need no credential.",
        "- Gateway routes `/v1/*`: an API key as `Authorization: Bearer <key>` or `X-API-Key: <key>`.",
        "- Administration `/admin/*`: `Authorization: Bearer <JWT>` from `POST /admin/auth/login`.",
        f'- Every 401 carries `WWW-Authenticate: Bearer ... resource_metadata="{base}{PROTECTED_RESOURCE_PATH}"`; '
        "follow its `authorization_servers`.",
        *_agent_auth_lines(base, settings, plans),
        f"- OAuth 2.1 for apps acting for a person: metadata at `{base}/.well-known/oauth-authorization-server`; "
        f"register at `POST {base}/oauth/register` (RFC 7591), authorization code with PKCE S256 at "
        f"`{base}/oauth/authorize` (the person signs in and consents in the dashboard), tokens at "
        f"`POST {base}/oauth/token` with `resource={base}`; the access token works on `/v1` like an API key "
        "(scopes chat, embeddings, files, models within the plan's; 15 minutes), the refresh token is "
        f"rotated on each use; `POST {base}/oauth/revoke` revokes. A client id may instead be the https URL "
        "of a Client ID Metadata Document. An agent holding an ID-JAG may also use it at the token "
        "endpoint as a JWT-bearer grant (`grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer`). "
        f"The same token on `{base}/api/mcp.php` adds the organisation's own tools to the public ones, each "
        "behind a scope: get_usage_this_month (usage:read), list_api_keys (keys:read), create_api_key "
        "(keys:write), get_recent_requests (logs:read), call_model (chat: a model call billed like "
        "/v1/chat/completions); calling one without a token answers 401 with the "
        "scope to ask for.",
        f"- Registration for people: `GET {base}{REGISTER_PATH}` describes it.",
        "",
        "## Errors",
        "",
        '- `/v1`, `/admin`, `/agent`: `{"error": {"type", "message", "code", "param"}}` (OpenAI style).',
        '- Everything else: `{"error": {"message", "type", "code", "param"?, "retry_after"?, '
        f'"documentation_url"}}`; codes are documented at `{base}/docs/errors`.',
        f"- {RATE_LIMITED}",
        f"- {SERVER_ERROR}",
        f"- {NOT_RETRIED}",
        "",
        "## Limits",
        "",
        *(_plan_line(p) for p in plans),
        f"- Request bodies: at most {settings.max_request_bytes} bytes (413 beyond).",
        f"- A tool call runs at most {settings.tool_timeout_seconds:g} seconds unless the tool says otherwise.",
        "",
        "## Versioning",
        "",
        f"- Responses carry `API-Version` (current: `{versions.current.name}`); send `API-Version: <date>` to pin "
        "one, or `YYYY-MM-DD-preview` for a preview.",
        f"- Deprecated versions answer with `Deprecation`, `Sunset` and `Link` headers; retired ones with 410. "
        f"Policy: `{base}{POLICY_PATH}`.",
        "",
        "## Health",
        "",
        f"- `{base}/health` (dependencies), `{base}/health/live`, `{base}/health/ready`.",
    ]
    if "/api/status.php" in served:
        out.append(f"- `{base}/api/status.php`: status in the IETF health-check format (unversioned).")
    return "\n".join(out) + "\n"


def versioning_policy(versions: VersionRegistry, settings: Settings, now: float) -> str:
    base = settings.public_base_url.rstrip("/")
    rows = []
    for v in versions.versions:
        dep = http_date(v.deprecated_at.timestamp()) if v.deprecated_at else "—"
        sun = http_date(v.sunset_at.timestamp()) if v.sunset_at else "—"
        rows.append(f"| `{v.name}` | {v.state(now)} | {dep} | {sun} | {v.successor or '—'} |")
    return (
        "\n".join(
            [
                f"# {settings.service_name} API versioning policy",
                "",
                "Versions are dates (`YYYY-MM-DD`); each is one immutable contract. Every response carries "
                f"`API-Version`. Send the header to pin a version; omit it for the current one (`{versions.current.name}`).",
                "A client pinning a version keeps working when a newer version ships, until that version's sunset.",
                "`YYYY-MM-DD-preview` versions are accepted and may change or vanish without notice. "
                "An unknown version gets 400 `unsupported_version`.",
                "",
                "| version | status | deprecated | sunset | successor |",
                "|---|---|---|---|---|",
                *rows,
                "",
                "## Schedule of a breaking change",
                "",
                "- Day 0: the new version ships and the old one is deprecated. Its responses carry `Deprecation` "
                "(an HTTP-date), `Sunset` (RFC 8594, an HTTP-date) and `Link` headers with "
                f'`rel="deprecation"` (this page) and `rel="successor-version"` (`{base}/openapi.json`).',
                "- Month 6: an e-mail reminder to the admins of tenants whose keys used the old version in the "
                "last 30 days.",
                f"- Month 11 (the last {FINAL_NOTICE_SECONDS // 86400} days): the final e-mail reminder to the same "
                "admins, and a `Warning: 299` header names the retirement date.",
                "- Month 12: the old version answers 410 Gone, code `version_gone`, with the successor and "
                "this guide in the body.",
                "",
                "## Migrating",
                "",
                f"Compare `{base}/openapi.json` with your client, switch the `API-Version` header to the successor, "
                "test, and deploy before the sunset.",
                "",
                f"The status document (`/api/status.php`) and the MCP protocol (`MCP-Version: {MCP_PROTOCOL_VERSION}`) "
                "are versioned on their own.",
            ]
        )
        + "\n"
    )
