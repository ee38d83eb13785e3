"""FastAPI dependencies as ``Annotated`` aliases; routes declare what they need and nothing more."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from agent_server.context import ANONYMOUS, Principal, ToolContext
from agent_server.registry import Registry
from agent_server.services import Services
from agent_server.settings import Settings


def get_services(request: Request) -> Services:
    return request.app.state.services


def get_registry(request: Request) -> Registry:
    return request.app.state.registry


def get_settings(request: Request) -> Settings:
    return request.app.state.services.settings


def client_ip(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def public_context(request: Request) -> ToolContext:
    """The context of an anonymous caller of the public site API."""
    principal = Principal(ANONYMOUS.subject, client_ip=client_ip(request))
    # The site's view of the services: model calls spend the site's budget, as on /api/ask.php.
    return ToolContext(request.app.state.site.services, principal, surface="http")


ServicesDep = Annotated[Services, Depends(get_services)]
RegistryDep = Annotated[Registry, Depends(get_registry)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
PublicContextDep = Annotated[ToolContext, Depends(public_context)]
