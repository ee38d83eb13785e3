"""A2A agent cards: ``/.well-known/agent-card.json`` (A2A v1.0) and the legacy ``/.well-known/agent.json``
(A2A 0.3 shape), with one skill per registry tool.

The service speaks no A2A transport today. Its one interface is the MCP endpoint, named with the
open-form binding ``MCP`` (the A2A ``protocolBinding`` is an open string), so an A2A client skips it
instead of sending A2A calls the endpoint cannot answer, and an agent that speaks MCP finds it.
"""

from __future__ import annotations

from typing import Any

from agent_server.capabilities.registry import Registry, ToolSpec
from agent_server.foundation.settings import Settings
from agent_server.knowledge.pack import Company
from agent_server.mcp.versions import MCP_PROTOCOL_VERSION
from agent_server.policies.versions import CURRENT_VERSION
from wellknown.mcp import MCP_PATH

BINDING = "MCP"
MODES = ["application/json", "text/plain"]


def skill_tags(spec: ToolSpec, service: str) -> list[str]:
    tags = [service, "read-only" if spec.meta.read_only else "writes"]
    if spec.meta.open_world:
        tags.append("open-world")
    if spec.meta.scope:
        tags.append(f"scope:{spec.meta.scope}")
    return [*tags, *(t for t in spec.meta.tags if t not in tags)]


def _skills(registry: Registry, settings: Settings) -> list[dict[str, Any]]:
    return [
        {
            "id": t.name,
            "name": t.title,
            "description": t.description,
            "tags": skill_tags(t, settings.service_name),
            "inputModes": ["application/json"],
            "outputModes": ["application/json"],
        }
        for t in registry.tools
    ]


def _description(company: Company, base: str) -> str:
    return (
        f"{' '.join(company.description.split())} Tools are served over MCP at {base}{MCP_PATH} "
        f"(no A2A transport yet); see {base}/AGENTS.md."
    )


def agent_card(registry: Registry, settings: Settings, company: Company) -> dict[str, Any]:
    """The A2A v1.0 card (``a2a.types.a2a_pb2.AgentCard`` in JSON form)."""
    base = settings.public_base_url.rstrip("/")
    return {
        "name": company.name,
        "description": _description(company, base),
        "supportedInterfaces": [
            {"url": f"{base}{MCP_PATH}", "protocolBinding": BINDING, "protocolVersion": MCP_PROTOCOL_VERSION}
        ],
        "provider": {"organization": company.legal_name, "url": company.website},
        "version": CURRENT_VERSION,
        "documentationUrl": f"{base}/AGENTS.md",
        "capabilities": {"streaming": False, "pushNotifications": False, "extendedAgentCard": False},
        "defaultInputModes": MODES,
        "defaultOutputModes": MODES,
        "skills": _skills(registry, settings),
    }


def legacy_agent_card(registry: Registry, settings: Settings, company: Company) -> dict[str, Any]:
    """The A2A 0.3 card for clients that still read ``/.well-known/agent.json``."""
    base = settings.public_base_url.rstrip("/")
    skills = [
        {k: v for k, v in s.items() if k not in ("inputModes", "outputModes")}
        for s in _skills(registry, settings)
    ]
    return {
        "protocolVersion": "0.3.0",
        "name": company.name,
        "description": _description(company, base),
        "url": f"{base}{MCP_PATH}",
        "preferredTransport": BINDING,
        "provider": {"organization": company.legal_name, "url": company.website},
        "version": CURRENT_VERSION,
        "documentationUrl": f"{base}/AGENTS.md",
        "capabilities": {"streaming": False, "pushNotifications": False},
        "defaultInputModes": MODES,
        "defaultOutputModes": MODES,
        "skills": skills,
    }
