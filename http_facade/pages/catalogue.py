"""Catalogue pages and checkout buttons: the documents of ``/api/*.json`` and the service of
``/api/checkout.php``, as pages and a plain HTML form (no JavaScript needed). The discovery call has
a module of its own (discovery_call.py).

The form posts to ``/checkout``, which starts the order and redirects (303) to ``/checkout/<id>``:
reloading the order page never buys twice, and the page links to the provider's checkout URL.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Path, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from pydantic import BaseModel, ConfigDict, EmailStr, Field

from agent_server.billing.checkout import CheckoutBody, order_view
from agent_server.site import catalogue as documents
from agent_server.site.build import Site
from http_facade.pages.error_page import error_page
from http_facade.pages.form_state import FormState, redisplays
from http_facade.pages.limits import count_page_hit
from http_facade.pages.openapi import page_responses
from http_facade.pages.route import PageRoute
from http_facade.pages.security import refuse_cross_site
from http_facade.pages.templating import render
from http_facade.routes.site_common import SiteDep

router = APIRouter(tags=["pages"], route_class=PageRoute, default_response_class=HTMLResponse)
TITLES: dict[documents.CatalogueName, str] = {
    "consulting": "Consulting packages",
    "training": "Trainings",
    "hardware": "Hardware",
}


def _base(site: Site) -> str:
    return site.services.settings.public_base_url.rstrip("/")


@router.get("/catalogue", summary="Catalogue page: consulting, trainings, hardware and the discovery call")
async def catalogue_index(request: Request, site: SiteDep) -> HTMLResponse:
    pack = site.services.knowledge.pack
    counts = {
        "consulting": len(pack.consulting),
        "training": len(pack.training),
        "hardware": len(pack.hardware),
    }
    return render(
        request, "catalogue_index.html", {"titles": TITLES, "counts": counts, "call": pack.discovery_call}
    )


def _catalogue_page(
    request: Request, site: Site, name: documents.CatalogueName, checkout: FormState | None = None
) -> HTMLResponse:
    """A catalogue; ``checkout``: the checkout form of one of its items, sent and refused."""
    k = site.services.knowledge
    document = documents.catalogue(k.pack, name, k.revision, _base(site))
    context = {"name": name, "title": TITLES[name], "document": document, "checkout": checkout}
    return render(request, "catalogue.html", context, checkout.status if checkout else 200)


def _catalogue_route(name: documents.CatalogueName) -> None:
    async def page(request: Request, site: SiteDep) -> HTMLResponse:
        return _catalogue_page(request, site, name)

    page.__name__ = f"catalogue_{name}_page"
    router.add_api_route(
        f"/catalogue/{name}", page, methods=["GET"], summary=f"Catalogue page: {TITLES[name].lower()}"
    )


for _name in TITLES:
    _catalogue_route(_name)


class CheckoutForm(BaseModel):
    """The checkout button's form: the fields of ``POST /api/checkout.php``."""

    model_config = ConfigDict(extra="forbid")

    item_id: str = Field(min_length=1, max_length=100)
    quantity: int = Field(default=1, ge=1, le=50)
    email: EmailStr
    name: str = Field(default="", max_length=200)


async def _checkout_again(request: Request, form: FormState) -> HTMLResponse:
    """The catalogue of the item whose checkout form was refused, that form open with its messages."""
    site: Site = request.app.state.site
    sold = documents.purchasable(site.services.knowledge.pack).get(form.value("item_id"))
    if sold is None or form.problem is None:  # no such form on any page: say what went wrong
        assert form.problem is not None
        return error_page(request, form.problem)
    return _catalogue_page(request, site, sold[0], form)  # type: ignore[arg-type]


@router.post(
    "/checkout",
    summary="Checkout form: start an order, then see it at /checkout/{order_id}",
    status_code=303,
    response_class=RedirectResponse,
    responses={303: {"description": "The order page."}, **page_responses(429)},
)
@redisplays(_checkout_again)
async def checkout(
    request: Request, form: Annotated[CheckoutForm, Form()], site: SiteDep
) -> RedirectResponse:
    refuse_cross_site(request)
    await count_page_hit(request, site, "forms")
    body = CheckoutBody(
        item_id=form.item_id, quantity=form.quantity, email=form.email, name=form.name or None
    )
    order = await site.checkout.start(body)
    return RedirectResponse(f"/checkout/{order.id}", status_code=303)


@router.get(
    "/checkout/{order_id}",
    summary="Order page: status, amount and the link to pay",
    responses=page_responses(404),
)
async def order_page(
    request: Request, site: SiteDep, order_id: Annotated[str, Path(min_length=1, max_length=40)]
) -> HTMLResponse:
    order = order_view(await site.checkout.get(order_id))
    return render(request, "order.html", {"order": order}, headers={"Cache-Control": "no-store"})
