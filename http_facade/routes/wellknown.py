"""Discovery routes: well-known documents, ``/AGENTS.md``, the versioning policy, the OpenAPI override
and the OAuth metadata (the OAuth and agent-auth endpoints themselves: routes/oauth.py, agent_auth.py).

Every document is built per request by a pure builder in ``wellknown/`` from the registry, the
settings, the content pack, the version registry and the app's routes, so it follows what is served.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import APIRouter, FastAPI, Request
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute, iter_route_contexts
from starlette.responses import Response

from agent_server.commerce.offer import Offer
from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import NotFound
from agent_server.foundation.settings import Settings
from agent_server.policies.versions import POLICY_PATH, VersionRegistry
from http_facade.deps import RegistryDep, ServicesDep, SettingsDep
from http_facade.errors import uses_gateway_envelope
from http_facade.gateway_deps import admin_claims, user_claims
from http_facade.versioning import SELF_VERSIONED_PREFIXES, UNVERSIONED
from wellknown import agent_card as cards
from wellknown import catalog, oauth, skills
from wellknown.acp import ACP_DISCOVERY_PATH, acp_discovery
from wellknown.agents_md import agents_md, versioning_policy
from wellknown.mcp import CARD_PATHS, MCP_PATH, mcp_manifest, mcp_openapi_operations
from wellknown.openapi import RawRoute, build_openapi

router = APIRouter(tags=["discovery"])
F = TypeVar("F", bound=Callable[..., Any])
OBJECT = {"type": "object"}
MARKDOWN = {200: {"content": {"text/markdown": {"schema": {"type": "string"}}}, "description": "Markdown."}}


def served_paths(app: Any) -> set[str]:
    return {c.path_format for c in iter_route_contexts(app.routes) if c.path_format}


def document(
    request: Request, body: bytes, media_type: str, headers: dict[str, str] | None = None
) -> Response:
    """A public discovery document: CORS for any origin, short caching and a weak ETag (304 on match)."""
    etag = 'W/"' + hashlib.sha256(body).hexdigest()[:32] + '"'
    common = {
        "Access-Control-Allow-Origin": "*",
        "Cache-Control": "public, max-age=300",
        "ETag": etag,
        **(headers or {}),
    }
    if etag in request.headers.get("if-none-match", ""):
        return Response(status_code=304, headers=common)
    return Response(body, media_type=media_type, headers=common)


def json_document(request: Request, doc: Any, media_type: str = "application/json", **kw: Any) -> Response:
    return document(request, json.dumps(doc, ensure_ascii=False).encode(), media_type, **kw)


def get_and_head(path: str, **options: Any) -> Callable[[F], F]:
    """GET and HEAD as two routes, so each has its own operation id (FastAPI would share one)."""

    def register(endpoint: F) -> F:
        for method in ("GET", "HEAD"):
            name = f"{endpoint.__name__}_{method.lower()}"
            router.add_api_route(path, endpoint, methods=[method], operation_id=name, **options)
        return endpoint

    return register


def _json_responses(media_type: str = "application/json") -> dict[int | str, dict[str, Any]]:
    return {200: {"content": {media_type: {"schema": OBJECT}}, "description": "The document."}}


@get_and_head(
    catalog.CATALOG_PATH,
    summary="API catalog (RFC 9727 linkset)",
    response_class=Response,
    responses=_json_responses("application/linkset+json"),
)
async def api_catalog(request: Request, settings: SettingsDep, services: ServicesDep) -> Response:
    title = f"{services.knowledge.pack.company.name} OpenAPI description"
    doc = catalog.api_catalog(settings, title, served_paths(request.app))
    link = {"Link": catalog.catalog_link_header()}
    return json_document(request, doc, catalog.MEDIA_TYPE, headers=link)


def _card_route(path: str, legacy: bool = False) -> None:
    async def card(
        request: Request, registry: RegistryDep, settings: SettingsDep, services: ServicesDep
    ) -> Response:
        company = services.knowledge.pack.company
        build = cards.legacy_agent_card if legacy else cards.agent_card
        return json_document(request, build(registry, settings, company))

    summary = "A2A agent card (legacy 0.3 shape)" if legacy else "A2A agent card (v1.0)"
    router.add_api_route(
        path, card, methods=["GET"], summary=summary, response_class=Response, responses=_json_responses()
    )


_card_route("/.well-known/agent-card.json")
_card_route("/.well-known/agent.json", legacy=True)


def _mcp_card_route(path: str) -> None:
    async def server_card(
        request: Request, registry: RegistryDep, settings: SettingsDep, services: ServicesDep
    ) -> Response:
        company = services.knowledge.pack.company
        doc = mcp_manifest(registry, settings, company.name, company.tagline, website=company.website)
        return json_document(request, doc)

    router.add_api_route(
        path,
        server_card,
        methods=["GET"],
        summary="MCP server card",
        response_class=Response,
        responses=_json_responses(),
    )


for _path in CARD_PATHS:
    _mcp_card_route(_path)


def _skill_documents(request: Request) -> dict[str, bytes]:
    app = request.app
    services = app.state.services
    company = services.knowledge.pack.company
    overview = _agents_text(request)
    return skills.skill_documents(app.state.registry, services.settings, overview, company.tagline)


@get_and_head(
    skills.INDEX_PATH,
    summary="Agent skills index (discovery v0.2.0)",
    response_class=Response,
    responses=_json_responses(),
)
async def skills_index(request: Request) -> Response:
    return json_document(request, skills.skills_index(_skill_documents(request)))


@get_and_head(
    "/.well-known/agent-skills/{name}/SKILL.md",
    summary="One skill (SKILL.md)",
    response_class=Response,
    responses=MARKDOWN,
)
async def skill_file(request: Request, name: str) -> Response:
    body = _skill_documents(request).get(name)
    if body is None:
        raise NotFound(f"No skill named '{name}'. The list is at {skills.INDEX_PATH}.", param="name")
    return document(request, body, "text/markdown; charset=utf-8")


def _agents_text(request: Request) -> str:
    app = request.app
    services = app.state.services
    pack = services.knowledge.pack
    return agents_md(
        app.state.registry, services.settings, pack.company, pack.plans, served_paths(app), app.state.versions
    )


@router.get(
    "/AGENTS.md", summary="How an agent uses this service", response_class=Response, responses=MARKDOWN
)
async def agents(request: Request) -> Response:
    return document(request, _agents_text(request).encode(), "text/markdown; charset=utf-8")


@router.get(
    ACP_DISCOVERY_PATH,
    summary="Agentic Commerce Protocol discovery (versions, transports, capabilities)",
    response_class=Response,
    responses=_json_responses(),
)
async def acp_json(request: Request, settings: SettingsDep, services: ServicesDep) -> Response:
    currencies = Offer(services.knowledge.pack).currencies
    hour = {"Cache-Control": "public, max-age=3600"}  # the discovery RFC's minimum
    return json_document(request, acp_discovery(settings, currencies), headers=hour)


@router.get(POLICY_PATH, summary="API versioning policy", response_class=Response, responses=MARKDOWN)
async def policy(request: Request, services: ServicesDep) -> Response:
    text = versioning_policy(request.app.state.versions, services.settings, services.clock.now())
    return document(request, text.encode(), "text/markdown; charset=utf-8")


@router.get(
    oauth.AUTHORIZATION_SERVER_PATH,
    summary="OAuth authorization server metadata (RFC 8414)",
    response_class=Response,
    responses=_json_responses(),
)
async def authorization_server(request: Request, settings: SettingsDep) -> Response:
    return json_document(request, oauth.authorization_server_metadata(settings))


@router.get(
    oauth.PROTECTED_RESOURCE_PATH,
    summary="OAuth protected resource metadata (RFC 9728)",
    response_class=Response,
    responses=_json_responses(),
)
async def protected_resource(request: Request, settings: SettingsDep, services: ServicesDep) -> Response:
    name = f"{services.knowledge.pack.company.name} API"
    return json_document(request, oauth.protected_resource_metadata(settings, name))


def _asks_for_jwt(dependant: Dependant) -> bool:
    return dependant.call in (admin_claims, user_claims) or any(
        _asks_for_jwt(sub) for sub in dependant.dependencies
    )


def signed_in_operations(app: FastAPI) -> frozenset[tuple[str, str]]:
    """(path, method) of every route whose dependencies ask for the admin JWT: the document's
    security then says exactly what the code checks, whatever the path."""
    found = set()
    for context in iter_route_contexts(app.routes):
        route = context.original_route
        if isinstance(route, APIRoute) and context.methods and _asks_for_jwt(route.dependant):
            found.update((context.path_format, method.lower()) for method in context.methods)
    return frozenset(found)


def openapi_override(
    app: FastAPI, settings: Settings, versions: VersionRegistry, clock: Clock
) -> Callable[[], dict]:
    """``app.openapi`` replacement: FastAPI's schema completed by ``build_openapi``, cached per input."""
    generated = app.openapi
    cache: dict[str, Any] = {}

    def raw_routes() -> list[RawRoute]:
        this = {
            "get": {
                "tags": ["discovery"],
                "summary": "This OpenAPI 3.1 description",
                "operationId": "openapi_get",
                "responses": {
                    "200": {
                        "description": "The document.",
                        "content": {"application/json": {"schema": OBJECT}},
                    }
                },
            }
        }
        raws = [RawRoute("/openapi.json", frozenset({"GET"}), operations=this)]
        for context in iter_route_contexts(app.routes):
            route = context.original_route
            if isinstance(route, APIRoute) or not getattr(route, "include_in_schema", True):
                continue
            if context.path_format and context.methods:
                path = context.path_format
                ops = (
                    mcp_openapi_operations("_alias" if path != MCP_PATH else "", settings.mcp_sessions)
                    if path.rstrip("/") == MCP_PATH
                    else None
                )
                doc = (getattr(context.endpoint, "__doc__", "") or "").strip().split("\n")[0]
                raws.append(RawRoute(path, frozenset(context.methods), doc, ops))
        return raws

    def openapi() -> dict:
        base = generated()
        supported = versions.supported(clock.now())
        key = (id(base), tuple(supported), len(app.routes))
        if cache.get("key") != key:
            doc = build_openapi(
                base,
                settings,
                current_version=versions.current.name,
                versions=supported,
                raw_routes=raw_routes(),
                uses_gateway_envelope=uses_gateway_envelope,
                unversioned=UNVERSIONED,
                signed_in=signed_in_operations(app),
                own_contract=SELF_VERSIONED_PREFIXES,
            )
            cache.update(key=key, doc=doc)
        return cache["doc"]

    return openapi
