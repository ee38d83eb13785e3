"""The public chat proxy (spec 4.5, 5.8): an ephemeral token, then chat-completion style answers.

The token travels in the header ``<header_prefix>Token`` (``X-Platform-Token`` unless the deployment
maps the prefix), so ``chat_router(settings)`` builds the routes per app: the header is what the
route reads, what the token answer names and what the OpenAPI document declares.
"""

# No ``from __future__ import annotations``: the header's alias is a local of chat_router, and
# FastAPI resolves string annotations against the module's globals only.
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Header, Query, Request, Response

from agent_server.foundation.errors import AuthFailed
from agent_server.foundation.settings import Settings
from agent_server.policies.retry_guidance import BACKOFF, SITE_RESET
from agent_server.site.chat import PublicChatRequest, reply
from agent_server.site.chat_token import check_origin
from http_facade.deps import SettingsDep, client_ip
from http_facade.idempotency import IdempotentRoute
from http_facade.routes.site_common import SiteDep, count_hit

PATH = "/api/chat-completion.php"
NEXT_STEPS = [
    "Wait the Retry-After seconds, then send the message again with the same Idempotency-Key; if it is "
    f"refused again, back off {BACKOFF} between further tries, never waiting past {SITE_RESET}.",
    "Ask without the chat: POST /api/ask.php answers from the FAQ, the weather tool or a model.",
    "Get an API key for the gateway (/v1/chat/completions) for higher, per-key limits.",
]


def token_header(settings: Settings) -> str:
    return f"{settings.header_prefix}Token"


def chat_router(settings: Settings) -> APIRouter:
    """Both routes of the chat proxy, reading the token from this deployment's header."""
    header = token_header(settings)
    router = APIRouter(tags=["site"], route_class=IdempotentRoute)

    @router.get(PATH, summary="Get an ephemeral chat token (send an Origin header)")
    async def chat_token(
        request: Request,
        response: Response,
        site: SiteDep,
        settings: SettingsDep,
        action: Annotated[Literal["token"], Query(description="The only action: 'token'.")],
    ) -> dict[str, Any]:
        check_origin(request.headers.get("origin"), settings, request.headers.get("sec-fetch-site"))
        token = site.tokens.issue(client_ip(request), request.headers.get("user-agent", ""))
        response.headers["Cache-Control"] = "no-store"
        return {
            "token": token,
            "expires_in": settings.chat_token_ttl_seconds,
            "usable_after": settings.chat_token_min_age_seconds,
            "header": header,
        }

    @router.post(PATH, summary="Chat with the site assistant (modes chat, concise, faq)")
    async def chat(
        request: Request,
        response: Response,
        body: PublicChatRequest,
        site: SiteDep,
        settings: SettingsDep,
        platform_token: Annotated[str | None, Header(alias=header)] = None,
    ) -> dict[str, Any]:
        if not platform_token:
            raise AuthFailed(
                f"Send the chat token as header {header} and as body field session_token.",
                code="missing_token",
            )
        if platform_token != body.session_token:
            raise AuthFailed(f"The {header} header and session_token differ.", code="token_mismatch")
        site.tokens.verify(platform_token, client_ip(request), request.headers.get("user-agent", ""))
        # Counted after the token check: only requests that could reach the model use the IP's quota.
        await count_hit(request, response, site, "chat", next_steps=NEXT_STEPS)
        s = site.services
        return await reply(body, s.knowledge, site.llm, settings.site_chat_model, s.clock.now())

    return router
