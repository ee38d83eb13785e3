"""Catalogues and site metadata (spec 4.5): read-only JSON from the content pack, cacheable by ETag."""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response

from agent_server.foundation.settings import Settings
from agent_server.policies.versions import CURRENT_VERSION
from agent_server.site import catalogue as docs
from agent_server.site.build import Site
from http_facade.deps import SettingsDep
from http_facade.errors import JSON_UTF8
from http_facade.pages.negotiation import VARY_ACCEPT, wants_html
from http_facade.pages.openapi import negotiated_ok
from http_facade.pages.site import home_page
from http_facade.routes.site_common import SiteDep

router = APIRouter(tags=["catalogues"])


def _cached(request: Request, document: dict[str, Any]) -> Response:
    """The document with a strong ETag; a matching If-None-Match gets 304 without a body."""
    payload = json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode()
    etag = '"' + hashlib.sha256(payload).hexdigest()[:32] + '"'
    headers = {"ETag": etag, "Cache-Control": "public, max-age=300"}
    if etag in request.headers.get("if-none-match", ""):
        return Response(status_code=304, headers=headers)
    return Response(payload, headers=headers, media_type=JSON_UTF8)


def _base(site: Site) -> str:
    return site.services.settings.public_base_url.rstrip("/")


@router.get("/api/consulting.json", summary="Consulting packages with prices", response_model=None)
async def consulting(request: Request, site: SiteDep) -> Response:
    k = site.services.knowledge
    return _cached(request, docs.catalogue(k.pack, "consulting", k.revision, _base(site)))


@router.get("/api/training.json", summary="Trainings with prices", response_model=None)
async def training(request: Request, site: SiteDep) -> Response:
    k = site.services.knowledge
    return _cached(request, docs.catalogue(k.pack, "training", k.revision, _base(site)))


@router.get("/api/hardware.json", summary="Hardware offerings with prices", response_model=None)
async def hardware(request: Request, site: SiteDep) -> Response:
    k = site.services.knowledge
    return _cached(request, docs.catalogue(k.pack, "hardware", k.revision, _base(site)))


@router.get(
    "/api/discovery-call.json", summary="Booking metadata of the free discovery call", response_model=None
)
async def discovery_call(request: Request, site: SiteDep) -> Response:
    k = site.services.knowledge
    return _cached(request, docs.discovery_call(k.pack, k.revision, _base(site)))


def _site_meta(site: Site, settings: Settings) -> dict[str, Any]:
    k = site.services.knowledge
    return docs.site_meta(k.pack, settings, k.revision, CURRENT_VERSION, site.policies.describe())


@router.get("/api/site-meta.json", summary="Agent-readable site metadata", response_model=None)
async def site_meta(request: Request, site: SiteDep, settings: SettingsDep) -> Response:
    return _cached(request, _site_meta(site, settings))


@router.get(
    "/",
    summary="The site: the home page for a browser, JSON otherwise; ?mode=agent gives the site metadata",
    response_model=None,
    responses=negotiated_ok("The home page (text/html) or a JSON pointer to the site metadata."),
)
async def home(
    request: Request,
    site: SiteDep,
    settings: SettingsDep,
    mode: Annotated[str | None, Query(description="'agent' for machine-readable site metadata.")] = None,
) -> Response:
    if mode == "agent":
        return _cached(request, _site_meta(site, settings))
    if wants_html(request):  # a browser: the same site as a page (docs/pages.md)
        return await home_page(request, site)
    company = site.services.knowledge.pack.company
    base = settings.public_base_url.rstrip("/")
    pointer = {
        "name": company.name,
        "tagline": company.tagline,
        "for_agents": base + "/?mode=agent",
        "site_meta": base + "/api/site-meta.json",
        "documentation": base + "/docs",
    }
    return JSONResponse(pointer, media_type=JSON_UTF8, headers=VARY_ACCEPT)
