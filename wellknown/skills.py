"""Agent Skills discovery (``/.well-known/agent-skills/index.json``, Cloudflare draft v0.2.0).

One skill for the whole service (its body is the generated AGENTS.md) and one per registry tool.
Each skill is a SKILL.md (YAML front matter with ``name`` and ``description``) served beside the
index; the index carries the SHA-256 of the exact bytes served.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import yaml

from agent_server.capabilities.registry import Registry, ToolSpec
from agent_server.foundation.settings import Settings
from wellknown.mcp import MCP_PATH

INDEX_PATH = "/.well-known/agent-skills/index.json"
SKILL_PATH = "/.well-known/agent-skills/{name}/SKILL.md"
INDEX_SCHEMA = "https://schemas.agentskills.io/discovery/0.2.0/schema.json"


def skill_name(text: str) -> str:
    """A valid skill name: lower-case letters and digits joined by single hyphens, at most 64."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:64].strip("-") or "skill"


def one_line(text: str, limit: int = 1024) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def _document(name: str, description: str, body: str) -> bytes:
    front = yaml.safe_dump({"name": name, "description": description}, sort_keys=False, allow_unicode=True)
    return f"---\n{front}---\n{body.rstrip()}\n".encode()


def _tool_body(spec: ToolSpec, settings: Settings) -> str:
    base = settings.public_base_url.rstrip("/")
    call = json.dumps({"name": spec.name, "arguments": {}})
    rpc = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": spec.name, "arguments": {}}}
    )
    return "\n".join(
        [
            f"# {spec.title}",
            "",
            spec.description,
            "",
            "## How to call it",
            "",
            f"- MCP: `POST {base}{MCP_PATH}` with `{rpc}` (fill in the arguments).",
            f"- HTTP: `POST {base}/api/tools/call` with `{call}`.",
            f"- Function calling: the definition is in `GET {base}/api/tools.php?dialect=openai` "
            "(or `anthropic`, `gemini`).",
            "",
            "## Arguments (JSON Schema)",
            "",
            "```json",
            json.dumps(spec.input_schema, indent=2, ensure_ascii=False),
            "```",
            "",
            "## Result (JSON Schema)",
            "",
            "```json",
            json.dumps(spec.output_schema, indent=2, ensure_ascii=False),
            "```",
        ]
    )


def skill_documents(registry: Registry, settings: Settings, overview: str, tagline: str) -> dict[str, bytes]:
    """Every SKILL.md by skill name; ``overview`` is the AGENTS.md text."""
    service = skill_name(settings.service_name)
    docs = {service: _document(service, one_line(f"Use {settings.service_name}: {tagline}"), overview)}
    for spec in registry.tools:
        name = skill_name(spec.name)
        if name not in docs:
            docs[name] = _document(name, one_line(spec.description), _tool_body(spec, settings))
    return docs


def _front_description(document: bytes) -> str:
    front = document.decode().split("---\n", 2)[1]
    return str(yaml.safe_load(front)["description"])


def skills_index(documents: dict[str, bytes]) -> dict[str, Any]:
    return {
        "$schema": INDEX_SCHEMA,
        "skills": [
            {
                "name": name,
                "type": "skill-md",
                "description": _front_description(body),
                "url": SKILL_PATH.format(name=name),
                "digest": "sha256:" + hashlib.sha256(body).hexdigest(),
            }
            for name, body in documents.items()
        ],
    }
