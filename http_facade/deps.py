"""FastAPI dependencies as ``Annotated`` aliases; routes declare what they need and nothing more."""

from __future__ import annotations

import re
from datetime import date
from typing import Annotated

from fastapi import Depends, Request
from pydantic import BeforeValidator

from agent_server.accounts.passkey_relying_party import origin_of
from agent_server.capabilities.context import ANONYMOUS, Principal, ToolContext
from agent_server.capabilities.registry import Registry
from agent_server.capabilities.services import Services
from agent_server.foundation.settings import Settings


def get_services(request: Request) -> Services:
    return request.app.state.services


def get_registry(request: Request) -> Registry:
    return request.app.state.registry


def get_settings(request: Request) -> Settings:
    return request.app.state.services.settings


def page_origin(request: Request) -> str:
    """The origin the browser sees this service at (scheme, host and port of the request): where a
    passkey ceremony takes place (agent_server/accounts/passkey_relying_party.py)."""
    return origin_of(str(request.base_url))


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


_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def _iso_day(value: object) -> object:
    # pydantic alone also reads a number as a Unix time: start=0 would be 1970-01-01, not a 400.
    if isinstance(value, str) and not _ISO_DAY.fullmatch(value):
        raise ValueError("expected a day as YYYY-MM-DD")
    return value


# A day in a query parameter: YYYY-MM-DD only, as the document's ``format: date`` says.
IsoDay = Annotated[date, BeforeValidator(_iso_day)]
