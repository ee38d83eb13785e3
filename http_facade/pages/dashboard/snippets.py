"""A first request in one minute: the base URL and copy-paste snippets (curl, Python ``openai``,
JavaScript ``openai``, Python ``anthropic``) for ``partials/first_request.html``.

With a key (the page that shows a new one), the snippets carry it; without one (the overview, the
usage page's empty state) they read it from ``AGENTGATE_API_KEY``, so they still work as pasted
once that is set. The model is the first chat model of the table that the plan grants, the key may
call and the gateway can serve to the key's environment (any model for sandbox keys, the routing
table's for live ones); BYOK models are left out, as they need the tenant's own provider key.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from starlette.requests import Request

from agent_server.gateway.plans import PlanInfo
from agent_server.llm.grants import ModelGrant

ENV_VAR = "AGENTGATE_API_KEY"
QUESTION = "Say hello in five words."


@dataclass(frozen=True, slots=True)
class Snippet:
    id: str
    label: str
    code: str

    @property
    def lines(self) -> int:
        return self.code.count("\n") + 1


@dataclass(frozen=True, slots=True)
class FirstRequest:
    base_url: str  # what OpenAI clients take: <public base URL>/v1
    anthropic_base_url: str  # what Anthropic clients take: the SDK adds /v1/messages
    model: str | None  # None: the plan offers no chat model this key may call
    key: str | None  # None: the snippets read ENV_VAR
    env_var: str
    snippets: list[Snippet]


async def chat_model(
    request: Request, plan: PlanInfo, *, allowed: ModelGrant | None = None, environment: str | None = None
) -> str | None:
    """The first model of the table a key of ``plan`` (limited to ``allowed``) may chat with."""
    gateway = request.app.state.gateway
    served: set[str] | None = None
    if (environment or gateway.environment) == "live":
        listing = getattr(gateway.services.llm, "models", None)
        served = set(await listing()) if listing is not None else None
    for model_id, entry in gateway.models.entries.items():
        if "chat" not in entry.capabilities or entry.byok_provider is not None:
            continue
        if not plan.grant.allows(model_id) or (allowed is not None and not allowed.allows(model_id)):
            continue
        if served is None or model_id in served:
            return model_id
    return None


def _shell(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def snippets(base_url: str, anthropic_base_url: str, model: str, key: str | None) -> list[Snippet]:
    """The four snippets; string values are written as JSON (valid Python and JavaScript too)."""
    q = json.dumps
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": QUESTION}]})
    bearer = key if key is not None else f"${ENV_VAR}"
    py_key = q(key) if key is not None else f"os.environ[{q(ENV_VAR)}]"
    py_import = "" if key is not None else "import os\n\n"
    js_key = q(key) if key is not None else f"process.env.{ENV_VAR}"
    message = f'[{{"role": "user", "content": {q(QUESTION)}}}]'
    return [
        Snippet(
            "curl",
            "curl",
            f"curl {base_url}/chat/completions \\\n"
            f'  -H "Authorization: Bearer {bearer}" \\\n'
            '  -H "Content-Type: application/json" \\\n'
            f"  -d {_shell(body)}",
        ),
        Snippet(
            "python-openai",
            "Python (openai)",
            f"{py_import}from openai import OpenAI\n\n"
            f"client = OpenAI(base_url={q(base_url)}, api_key={py_key})\n"
            "reply = client.chat.completions.create(\n"
            f"    model={q(model)},\n"
            f"    messages={message},\n"
            ")\n"
            "print(reply.choices[0].message.content)",
        ),
        Snippet(
            "js-openai",
            "JavaScript (openai)",
            'import OpenAI from "openai";\n\n'
            f"const client = new OpenAI({{ baseURL: {q(base_url)}, apiKey: {js_key} }});\n"
            "const reply = await client.chat.completions.create({\n"
            f"  model: {q(model)},\n"
            f'  messages: [{{ role: "user", content: {q(QUESTION)} }}],\n'
            "});\n"
            "console.log(reply.choices[0].message.content);",
        ),
        Snippet(
            "python-anthropic",
            "Python (anthropic)",
            f"{py_import}from anthropic import Anthropic\n\n"
            f"client = Anthropic(base_url={q(anthropic_base_url)}, api_key={py_key})\n"
            "message = client.messages.create(\n"
            f"    model={q(model)},\n"
            "    max_tokens=256,\n"
            f"    messages={message},\n"
            ")\n"
            "print(message.content[0].text)",
        ),
    ]


async def first_request(
    request: Request,
    plan: PlanInfo,
    *,
    key: str | None = None,
    allowed: ModelGrant | None = None,
    environment: str | None = None,
) -> FirstRequest:
    """The context of ``partials/first_request.html`` (as ``first_request``)."""
    site = request.app.state.services.settings.public_base_url.rstrip("/")
    model = await chat_model(request, plan, allowed=allowed, environment=environment)
    found = snippets(f"{site}/v1", site, model, key) if model is not None else []
    return FirstRequest(f"{site}/v1", site, model, key, ENV_VAR, found)
