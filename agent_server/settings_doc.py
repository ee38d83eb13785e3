"""The settings reference (docs/settings.md), generated from the ``Settings`` model.

``agentgate settings --markdown`` prints it; a test fails when the file and the model disagree.
Each row comes from a field: its variable, type, default and description. Fields without a
description take their meaning from ``MEANINGS`` below, and the sections come from the comment
lines that group the fields in agent_server/foundation/settings.py. Secret settings never show a default.
"""

from __future__ import annotations

import inspect
import re
import textwrap
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from annotated_types import Ge, Gt, Le, Lt
from pydantic import AliasChoices, BaseModel, SecretStr
from pydantic.fields import FieldInfo
from pydantic_settings import NoDecode

from agent_server.foundation.settings import Settings

PREFIX = Settings.model_config["env_prefix"]
REGENERATE = "agentgate settings --markdown > docs/settings.md"

# The meaning of fields whose Field() has no description (a description in settings.py wins).
MEANINGS = {
    "mode": "`sandbox`: mock LLM, `sk_test_` keys, no charges. `production`: real upstreams, `sk_live_` keys.",
    "data_dir": "Holds the SQLite database, generated secrets and the mail outbox. A relative value is "
    "relative to the current directory.",
    "redis_url": "e.g. `redis://127.0.0.1:6379/0`. Shares limits, tokens, idempotency, usage and the job "
    "queue across processes; unset: in-process state (one process only).",
    "service_name": "Names the ask tool (`ask_<name>`) and the MCP server.",
    "public_base_url": "The public address used in discovery documents, links and the JWT issuer; its host "
    "always passes the Host check. Unset, `agentgate serve` uses the address it binds "
    "(`http://<host>:<port>`; `http://localhost:<port>` for a loopback or wildcard host).",
    "allowed_hosts": "Comma-separated Host values the MCP endpoint accepts (`host:*` for any port).",
    "allowed_origins": "Comma-separated browser origins (CORS, the MCP Origin check, chat tokens).",
    "max_request_bytes": "Request body limit; larger bodies get 413.",
    "tool_timeout_seconds": "How long one tool call may run.",
    "redis_timeout_seconds": "Bounds every Redis call; the breaker skips Redis after repeated failures.",
    "weather_provider": "`sandbox` (fixed data) or `open_meteo` (the two URLs below).",
    "weather_base_url": "Forecast API of the `open_meteo` weather provider.",
    "geocoding_base_url": "Geocoding API of the `open_meteo` weather provider.",
    "admin_email": "With the password: the platform administrator created at the first start.",
    "admin_password": "The first administrator's password (the password rules apply).",
    "log_level": "Level of the application log (`DEBUG`, `INFO`, `WARNING`, `ERROR`).",
    "jwt_ttl_seconds": "Lifetime of admin JWTs.",
    "chat_token_ttl_seconds": "Lifetime of a chat-proxy token.",
    "chat_token_min_age_seconds": "A chat token younger than this is refused (anti-bot).",
    "site_chat_limit": "Chat messages per client IP per window.",
    "site_chat_window_seconds": "Window of the chat limit.",
    "site_chat_model": "The model the public chat proxy uses.",
    "site_ask_limit": "Ask requests per client IP per window.",
    "site_ask_window_seconds": "Window of the ask limit.",
    "site_jobs_limit": "Jobs per client IP per hour.",
    "site_llm_tokens_per_day": "Upstream token budget of the public site per day.",
    "job_ttl_seconds": "How long a finished job's result is kept.",
    "job_concurrency": "Jobs a process runs at once.",
    "idempotency_ttl_seconds": "How long an idempotency key's answer is kept.",
    "idempotency_wait_seconds": "How long a repeat waits for the first request with its key to finish.",
    "health_timeout_seconds": "Bound of each dependency check of /health/ready.",
    "webhook_poll_seconds": "How often the delivery worker looks for due deliveries.",
    "webhook_timeout_seconds": "Timeout of one webhook delivery.",
    "webhook_retry_hours": "A delivery is retried with backoff for this long, then given up.",
    "webhook_max_per_tenant": "Webhook endpoints per tenant.",
    "usage_threshold_check_seconds": "How often usage thresholds are checked.",
    "audit_failed_login_window_seconds": "Window of the failed-login rule.",
    "csp_report_max_bytes": "Largest accepted CSP report.",
    "csp_reports_per_ip_per_hour": "CSP reports accepted per client IP per hour.",
    "llm_connect_timeout_seconds": "Connect timeout to an upstream.",
    "llm_retry_backoff_seconds": "Pause before a same-backend retry.",
    "registration_link_ttl_seconds": "Lifetime of a registration link.",
    "password_reset_ttl_seconds": "Lifetime of a password-reset link.",
    "invite_ttl_seconds": "Lifetime of an invitation link.",
    "password_breach_api_timeout_seconds": "Timeout of the breach range API.",
    "sso_state_ttl_seconds": "How long a single sign-on round trip may take.",
    "mail_poll_seconds": "How often the mail worker looks for queued mail.",
    "mail_timeout_seconds": "Timeout of one SMTP delivery.",
    "otel_traces_protocol": "OTLP transport of traces: `http/protobuf` or `grpc`.",
    "otel_traces_exporter": "Comma-separated exporters; traces are sent only when it names `otlp`.",
    "otel_sdk_disabled": "`true` turns tracing off whatever else is set.",
    "response_cache_ttl_seconds": "How long a cached answer is served.",
    "stripe_api_key": "Secret key of the payment provider (`billing_provider=stripe`).",
    "billing_webhook_tolerance_seconds": "How old a signed payment-provider event may be.",
    "billing_currency": "ISO 4217 currency of prices and invoices.",
}


@dataclass(frozen=True)
class SettingDoc:
    variable: str
    type: str
    default: str
    meaning: str
    secret: bool
    section: str

    def as_dict(self) -> dict[str, Any]:
        return {
            key: getattr(self, key) for key in ("variable", "type", "default", "meaning", "secret", "section")
        }


def settings_reference(model: type[BaseModel] = Settings) -> list[SettingDoc]:
    sections = _sections(model)
    docs = []
    for name, field in model.model_fields.items():
        meaning = field.description or MEANINGS.get(name, "")  # empty: test_settings_doc.py fails
        secret = _is_secret(field.annotation)
        docs.append(
            SettingDoc(
                variable=_variables(model.model_config.get("env_prefix", ""), name, field),
                type=_type(field),
                default="(secret)" if secret else _default(field),
                meaning=meaning,
                secret=secret,
                section=sections.get(name, "General"),
            )
        )
    return docs


def markdown(model: type[BaseModel] = Settings) -> str:
    prefix = model.model_config.get("env_prefix", "")
    lines = [
        "# Settings reference",
        "",
        f"<!-- Generated from agent_server/foundation/settings.py by `{REGENERATE}`; do not edit by hand. -->",
        "",
        f"Every setting is an environment variable with the prefix `{prefix}`, read once at start",
        "(`agent_server/foundation/settings.py`); a few read the standard variables their row names instead. Lists",
        "marked *comma-separated* take `a,b,c`; *JSON* values take a JSON document. Secret settings show",
        "no default: unset, they are generated into the data dir or their feature is off, as the meaning",
        "says.",
    ]
    section = None
    for doc in settings_reference(model):
        if doc.section != section:
            section = doc.section
            lines += ["", f"## {section}", "", "| variable | type | default | meaning |", "|---|---|---|---|"]
        cells = (f"`{doc.variable}`", doc.type, doc.default, doc.meaning)
        lines.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    """A table cell: pipes escaped everywhere, ``<`` outside code spans (it would open an HTML tag)."""
    parts = text.replace("|", "\\|").split("`")
    return "`".join(part if i % 2 else part.replace("<", "\\<") for i, part in enumerate(parts))


_SECTION = re.compile(r"^    # (?P<title>.+)$")
_FIELD = re.compile(r"^    (?P<name>[a-z_][a-z0-9_]*)\s*:")


def _sections(model: type[BaseModel]) -> dict[str, str]:
    """Field name -> the first sentence of the nearest comment line above it in the class body."""
    sections, title = {}, "General"
    for line in textwrap.dedent(inspect.getsource(model)).splitlines():
        if match := _SECTION.match(line):
            title = re.split(r"(?<=[a-z)])[.:] ", match["title"].rstrip("."), maxsplit=1)[0]
        elif (match := _FIELD.match(line)) and match["name"] in model.model_fields:
            sections[match["name"]] = title
    return sections


def _variables(prefix: str, name: str, field: FieldInfo) -> str:
    """The environment variable; a field with aliases is read from them instead (without the prefix)."""
    alias = field.validation_alias
    if alias is None:
        return prefix + name.upper()
    choices = [
        c for c in (alias.choices if isinstance(alias, AliasChoices) else [alias]) if isinstance(c, str)
    ]
    names = [c for c in choices if c.isupper()] or [c.upper() for c in choices]
    return "`, `".join(names)


def _is_secret(annotation: Any) -> bool:
    if annotation is SecretStr:
        return True
    if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        return any(_is_secret(field.annotation) for field in annotation.model_fields.values())
    return any(_is_secret(arg) for arg in get_args(annotation))


def _without_none(annotation: Any) -> Any:
    if get_origin(annotation) in (Union, types.UnionType):
        rest = [arg for arg in get_args(annotation) if arg is not type(None)]
        return rest[0] if len(rest) == 1 else annotation
    return annotation


def _type(field: FieldInfo) -> str:
    annotation = _without_none(field.annotation)
    if get_origin(annotation) is Literal:
        return " or ".join(f"`{choice}`" for choice in get_args(annotation))
    if get_origin(annotation) in (list, dict):
        return "comma-separated list" if NoDecode in field.metadata else "JSON"
    names = {bool: "boolean", int: "integer", float: "number", str: "text", Path: "path", SecretStr: "text"}
    text = names.get(annotation, getattr(annotation, "__name__", str(annotation)))
    bounds = {Ge: ("ge", "≥"), Gt: ("gt", ">"), Le: ("le", "≤"), Lt: ("lt", "<")}
    for item in field.metadata:
        for kind, (attribute, sign) in bounds.items():
            if isinstance(item, kind):
                text += f", {sign} {_value(getattr(item, attribute))}"
    return text


def _default(field: FieldInfo) -> str:
    factory = field.default_factory
    if factory is not None:
        if factory in (list, dict):
            return "empty" if NoDecode in field.metadata else f"`{_value(factory())}`"  # type: ignore[call-arg]
        return (factory.__doc__ or "computed").strip().splitlines()[0]
    if field.default is None:
        return "unset"
    return f"`{_value(field.default)}`"


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return str(value).removesuffix(".0")
    if isinstance(value, list):
        return ",".join(str(item) for item in value) if value else "[]"
    if isinstance(value, dict):
        return "{}"
    return str(value)
