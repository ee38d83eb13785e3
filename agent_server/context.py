"""What a capability receives besides its arguments: who calls, through which surface, and the services."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_server.capabilities.services import Services


@dataclass(frozen=True)
class Principal:
    """The caller: an anonymous visitor, a tenant's API key or an admin user."""

    subject: str
    scopes: frozenset[str] = frozenset()
    tenant_id: str | None = None
    client_ip: str | None = None


ANONYMOUS = Principal(subject="anonymous")


@dataclass(frozen=True)
class ToolContext:
    services: Services
    principal: Principal = ANONYMOUS
    surface: str = "internal"
    request_id: str | None = None
    extra: dict[str, str] = field(default_factory=dict)
