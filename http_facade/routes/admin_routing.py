"""``/admin/llm-routing/``: the platform-wide LLM routing table (platform:admin only).

GET returns the table with ``ETag: "rev-N"``; PATCH needs that value in ``If-Match`` (or the body's
``revision``) and answers 409 when another edit came first; DELETE resets to the seeded defaults.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from agent_server.admin import routing
from http_facade.routes.admin_common import PlatformDep, audit_note

router = APIRouter(tags=["admin: llm routing"])
PATH = "/admin/llm-routing/"


class RoutingPatch(BaseModel):
    model_config = ConfigDict(extra="forbid")

    routes: dict[str, list[dict[str, Any]] | None] = Field(
        description="{model: [{backend, weight, priority}]} replaces a model's route; null removes the model."
    )
    revision: int | None = Field(default=None, ge=0, description="Alternative to the If-Match header.")


def _answer(response: Response, view: dict[str, Any]) -> dict[str, Any]:
    response.headers["ETag"] = routing.etag(view["revision"])
    return view


@router.get(PATH, summary="The LLM routing table and its revision")
async def get_routing(actor: PlatformDep, request: Request, response: Response) -> dict[str, Any]:
    services = request.app.state.services
    table = await routing.current(services)
    return _answer(response, routing.table_view(table, list(routing.router_of(services).backends)))


@router.patch(PATH, summary="Change models' routes (needs If-Match)")
async def patch_routing(
    body: RoutingPatch,
    actor: PlatformDep,
    request: Request,
    response: Response,
    if_match: Annotated[str | None, Header()] = None,
) -> dict[str, Any]:
    services = request.app.state.services
    expected = routing.parse_revision(if_match, body.revision)
    table = await routing.patch(services, body.routes, expected)
    audit_note(
        request,
        action="llm_routing.patch",
        details={"models": sorted(body.routes), "revision": table.revision},
    )
    return _answer(response, routing.table_view(table, list(routing.router_of(services).backends)))


@router.delete(PATH, summary="Reset the routing table to the seeded defaults")
async def reset_routing(
    actor: PlatformDep, request: Request, response: Response, if_match: Annotated[str | None, Header()] = None
) -> dict[str, Any]:
    services = request.app.state.services
    table = await routing.reset(services, routing.parse_revision(if_match, None))
    audit_note(request, action="llm_routing.reset", details={"revision": table.revision})
    return _answer(response, routing.table_view(table, list(routing.router_of(services).backends)))
