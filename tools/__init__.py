"""Every tool, listed explicitly; ``build_registry`` is the single source of all surfaces."""

from __future__ import annotations

from agent_server.capabilities.registry import Registry
from agent_server.foundation.settings import Settings
from tools import ask, catalogue, commerce, faq, tenant, tenant_model, weather


def build_registry(settings: Settings) -> Registry:
    import resources

    registry = Registry(default_timeout=settings.tool_timeout_seconds)
    # The ask tool carries the service's name, e.g. ask_agentgate.
    registry.add_tool(ask.ask, name=f"ask_{settings.service_name}")
    registry.add_tool(catalogue.list_models)
    registry.add_tool(catalogue.get_pricing)
    registry.add_tool(faq.faq_lookup)
    registry.add_tool(weather.get_weather)
    registry.add_tool(catalogue.get_company_info)
    # The Agentic Commerce Protocol's MCP binding: checkout sessions for agent platforms.
    for acp_tool in commerce.ACP_TOOLS:
        registry.add_tool(acp_tool)
    resources.register(registry)
    return registry


def build_tenant_registry(settings: Settings) -> Registry:
    """The tools that answer for the organisation of an OAuth access token, each behind a scope:
    served on /api/mcp.php to such callers only (docs/oauth.md), never on the public projections."""
    registry = Registry(default_timeout=settings.tool_timeout_seconds)
    for fn in (*tenant.TENANT_TOOLS, tenant_model.call_model):
        registry.add_tool(fn)
    return registry
