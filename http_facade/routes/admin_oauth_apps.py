"""The caller's connected apps (docs/oauth.md): the OAuth clients they allowed, and revoking one,
which forgets the consent and revokes every token the client holds for them at once. Thin routes
over ``OAuthService``; the dashboard's "Connected apps" page calls the same."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response, status

from http_facade.routes.admin_common import ActorDep

router = APIRouter(tags=["admin: connected apps"])
NO_STORE = {"Cache-Control": "no-store"}
ClientId = Annotated[str, Query(min_length=1, max_length=2000)]


@router.get("/admin/oauth/apps", summary="The OAuth clients you allowed to act for you")
async def list_apps(request: Request, actor: ActorDep, response: Response) -> dict[str, Any]:
    response.headers.update(NO_STORE)
    return {"object": "list", "data": await request.app.state.oauth.connected_apps(actor.user_id)}


@router.delete(
    "/admin/oauth/apps",
    status_code=status.HTTP_204_NO_CONTENT,
    summary="Disconnect an app: its consent and every token it holds for you end at once",
    responses={404: {"description": "No such connected app."}},
)
async def disconnect(request: Request, actor: ActorDep, client_id: ClientId) -> Response:
    """``client_id`` is a query parameter: a client's id may be the URL of its metadata document."""
    await request.app.state.oauth.disconnect(actor.user_id, client_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
