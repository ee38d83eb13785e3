"""The public site's pages: home, pricing, FAQ, terms, privacy and status, rendered from the content pack.

Each page reads what the JSON routes and tools read (``agent_server/site/catalogue.py``,
``tools/catalogue.py:price_items``, ``agent_server/site/health.py``), so a page cannot disagree
with its JSON twin.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from agent_server.gateway.plans import subscription_plans
from agent_server.policies.versions import CURRENT_VERSION
from agent_server.site.build import Site
from agent_server.site.health import health
from http_facade.deps import ServicesDep
from http_facade.pages.negotiation import VARY_ACCEPT
from http_facade.pages.openapi import page_responses
from http_facade.pages.route import PageRoute
from http_facade.pages.templating import render
from http_facade.routes.site_common import SiteDep
from tools.catalogue import price_items

router = APIRouter(tags=["pages"], route_class=PageRoute, default_response_class=HTMLResponse)


async def home_page(request: Request, site: Site) -> HTMLResponse:
    """``/`` for a browser (the JSON pointer and ``?mode=agent`` stay in site_catalogue.py)."""
    pack = site.services.knowledge.pack
    offers = [
        ("/catalogue/consulting", "Consulting", len(pack.consulting), "packages"),
        ("/catalogue/training", "Trainings", len(pack.training), "courses"),
        ("/catalogue/hardware", "Hardware", len(pack.hardware), "appliances"),
    ]
    context = {
        "offers": offers,
        "plans": price_items(pack, "plans"),
        "call": pack.discovery_call,
    }
    return render(request, "home.html", context, headers=VARY_ACCEPT)


@router.get("/pricing", summary="Pricing page: plans with trial and limits, models with token prices")
async def pricing(request: Request, site: SiteDep) -> HTMLResponse:
    pack = site.services.knowledge.pack
    models = {m.id: m for m in pack.models}
    context = {
        "plans": subscription_plans(pack.plans),  # Free is described with POST /agent/auth
        "models": pack.models,
        "model_names": {k: m.name for k, m in models.items()},
    }
    return render(request, "pricing.html", context)


@router.get("/faq", summary="FAQ page: every question of the content pack")
async def faq(request: Request, site: SiteDep) -> HTMLResponse:
    return render(request, "faq.html", {"entries": site.services.knowledge.pack.faq})


@router.get("/terms", summary="Terms of use: the content pack's legal.yaml (terms)")
async def terms(request: Request, site: SiteDep) -> HTMLResponse:
    return render(request, "legal.html", {"document": site.services.knowledge.pack.terms})


@router.get("/privacy", summary="Privacy policy: the content pack's legal.yaml (privacy)")
async def privacy(request: Request, site: SiteDep) -> HTMLResponse:
    return render(request, "legal.html", {"document": site.services.knowledge.pack.privacy})


@router.get(
    "/status-page",
    summary="Status page: the checks of /api/status.php for people",
    responses=page_responses(),
)
async def status_page(request: Request, services: ServicesDep) -> HTMLResponse:
    document, _ = await health(
        services, version=CURRENT_VERSION, timeout=services.settings.health_timeout_seconds
    )
    checks = [detail for details in document["checks"].values() for detail in details]
    # The page answers 200 whatever the checks say: it is the report; programs read /api/status.php.
    return render(
        request, "status.html", {"health": document, "checks": checks}, headers={"Cache-Control": "no-store"}
    )
