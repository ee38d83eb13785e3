"""``PageRoute``: a route class whose errors a browser sees as a page, and a program as the envelope.

A form's route marked with ``@redisplays(draw)`` (form_state.py) answers refused input with the page
that holds the form, its fields' messages and the typed values, instead of an error page.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response

from agent_server.foundation.errors import AgentError
from http_facade.errors import validation_error
from http_facade.pages.error_page import error_page
from http_facade.pages.form_state import REDISPLAYED_STATUSES, FormState, in_words, redisplay_of, sent_form
from http_facade.pages.negotiation import wants_html
from http_facade.pages.security import refuse_cross_site


class PageRoute(APIRoute):
    """Errors of a page route: an HTML page for a browser, the site envelope for anyone else."""

    # The dashboard's forms answer every client that sends them (they carry a token only a page holds).
    redisplay_for_everyone = False

    def check_before_redisplay(self, request: Request, raw: FormData) -> None:
        """What a refused form must pass before its values are shown again: here, that it came from a
        page of this site (the dashboard checks its CSRF token instead)."""
        refuse_cross_site(request)

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        draw = redisplay_of(self.endpoint)

        async def again(request: Request, state: Callable[[FormData], FormState]) -> Response:
            raw = await sent_form(request)
            try:
                self.check_before_redisplay(request, raw)
            except AgentError as refused:
                if not wants_html(request):
                    raise
                return error_page(request, refused)
            assert draw is not None
            form = state(raw)
            response = await draw(request, form)
            if form.problem is not None:  # Retry-After of a 429, WWW-Authenticate of a 401
                response.headers.update(form.problem.headers)
            return response

        async def page_handler(request: Request) -> Response:
            try:
                return await handler(request)
            except RequestValidationError as exc:
                errors, browser = list(exc.errors()), wants_html(request)
                if draw is not None and request.method == "POST" and (browser or self.redisplay_for_everyone):
                    return await again(request, lambda raw: FormState.refused(raw, errors))
                if not browser:
                    raise
                invalid = validation_error(errors)
                invalid.message = in_words(errors)  # a person reads it: no validator's wording
                return error_page(request, invalid)
            except AgentError as exc:
                problem, browser = exc, wants_html(request)
                form_refused = (
                    draw is not None and request.method == "POST" and exc.http_status in REDISPLAYED_STATUSES
                )
                if form_refused and (browser or self.redisplay_for_everyone):
                    return await again(request, lambda raw: FormState.sent(raw, problem))
                if not browser:
                    raise
                return error_page(request, exc)

        return page_handler
