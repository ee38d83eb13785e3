"""A first request in one minute: the gateway's base URL and copy-paste snippets (curl, Python and
JavaScript ``openai``, Python ``anthropic``) with a key filled in.

``first_request(...)`` is the context of ``dashboard/partials/first_request.html``; any page that
shows a key (or a placeholder) includes the partial with it::

    context["first_request"] = first_request(settings.public_base_url, key=full, model=model)
    {% include "dashboard/partials/first_request.html" %}

``chat_model(...)`` picks the model the snippets call: one the key may call and a backend serves.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent_server.gateway.grants import ModelGrant
from agent_server.gateway.plans import PlanInfo

if TYPE_CHECKING:
    from agent_server.gateway.service import Gateway

PLACEHOLDER = "YOUR_API_KEY"
FALLBACK_MODEL = "agentgate-mock-small"  # the sandbox mock answers it whatever the table says
PROMPT = "Say hello in five words."


@dataclass(frozen=True, slots=True)
class Snippet:
    id: str  # the element id and the test hook (snippet-<id>)
    label: str
    code: str


def first_request(public_base_url: str, *, key: str | None, model: str) -> dict[str, Any]:
    """The base URL and the snippets, with ``key`` (or a placeholder when the page has none)."""
    base = public_base_url.rstrip("/")
    secret = key or PLACEHOLDER
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": PROMPT}]})
    snippets = [
        Snippet(
            "curl",
            "curl",
            f"curl {base}/v1/chat/completions \\\n"
            f'  -H "Authorization: Bearer {secret}" \\\n'
            '  -H "Content-Type: application/json" \\\n'
            f"  -d '{body}'",
        ),
        Snippet(
            "python-openai",
            "Python (openai)",
            "from openai import OpenAI\n\n"
            f'client = OpenAI(base_url="{base}/v1", api_key="{secret}")\n'
            "completion = client.chat.completions.create(\n"
            f'    model="{model}",\n'
            f'    messages=[{{"role": "user", "content": "{PROMPT}"}}],\n'
            ")\n"
            "print(completion.choices[0].message.content)",
        ),
        Snippet(
            "javascript-openai",
            "JavaScript (openai)",
            'import OpenAI from "openai";\n\n'
            f'const client = new OpenAI({{ baseURL: "{base}/v1", apiKey: "{secret}" }});\n'
            "const completion = await client.chat.completions.create({\n"
            f'  model: "{model}",\n'
            f'  messages: [{{ role: "user", content: "{PROMPT}" }}],\n'
            "});\n"
            "console.log(completion.choices[0].message.content);",
        ),
        Snippet(
            "python-anthropic",
            "Python (anthropic, the Messages API)",
            "import anthropic\n\n"
            f'client = anthropic.Anthropic(base_url="{base}", api_key="{secret}")\n'
            "message = client.messages.create(\n"
            f'    model="{model}",\n'
            "    max_tokens=256,\n"
            f'    messages=[{{"role": "user", "content": "{PROMPT}"}}],\n'
            ")\n"
            "print(message.content[0].text)",
        ),
    ]
    return {"base_url": f"{base}/v1", "has_key": key is not None, "snippets": snippets}


async def chat_model(gateway: Gateway, plan: PlanInfo, allowed: list[str] | None) -> str:
    """A chat model of the table the plan grants and ``allowed`` (a key's allow-list) permits, and
    that is served: any for sandbox keys (the mock), a routed one for live keys; BYOK models need
    the tenant's own provider key, so they are left out."""
    table, own = gateway.models, ModelGrant(allowed) if allowed else None
    candidates = [
        model
        for model, entry in table.entries.items()
        if "chat" in entry.capabilities
        and model not in table.byok
        and plan.grant.allows(model)
        and (own is None or own.allows(model))
    ]
    if gateway.environment == "live":
        listing = getattr(gateway.services.llm, "models", None)  # the router knows what it routes
        if listing is not None:
            routed = set(await listing())
            candidates = [model for model in candidates if model in routed]
    return candidates[0] if candidates else FALLBACK_MODEL
