"""Jinja2 templates and ``render``: the one way a page becomes a response (docs/pages.md).

Autoescaping is on for every template, undefined names fail loudly, and every page carries the
security headers of ``security.py``. Templates get the company of the content pack, the navigation
and ``static(path)`` (a URL with a content hash, so a changed file is fetched again).
"""

from __future__ import annotations

import hashlib
import re
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from markupsafe import Markup, escape
from starlette.requests import Request
from starlette.responses import HTMLResponse

from agent_server.billing.money import exponent
from http_facade.pages.form_state import FormState
from http_facade.pages.security import PAGE_HEADERS

if TYPE_CHECKING:
    from jinja2 import Environment

PACKAGE_DIR = Path(__file__).resolve().parent.parent
TEMPLATES_DIR = PACKAGE_DIR / "templates"
STATIC_DIR = PACKAGE_DIR / "static"
STATIC_PATH = "/static"
# (path, label): the site's main navigation, in order.
NAV: tuple[tuple[str, str], ...] = (
    ("/", "Home"),
    ("/pricing", "Pricing"),
    ("/catalogue", "Catalogue"),
    ("/faq", "FAQ"),
    ("/status-page", "Status"),
    ("/docs", "API docs"),
    ("/app", "Dashboard"),  # sign in there; signed in, the dashboard header names the person
)


@lru_cache(maxsize=256)
def static_url(path: str) -> str:
    """``/static/<path>?v=<hash>``; a file that does not exist is an error at render time, not a 404 later."""
    content = (STATIC_DIR / path).read_bytes()
    return f"{STATIC_PATH}/{path}?v={hashlib.sha256(content).hexdigest()[:10]}"


def money(amount: float | int | str | Decimal | None, currency: str = "EUR") -> str:
    """The one money format of the pages: ``3500.0`` -> ``3,500.00 EUR``, ``0.075`` -> ``0.075 EUR``
    (a price per million tokens keeps its digits), ``5000`` JPY -> ``5,000 JPY``. At least the
    currency's own decimals, more when the amount has them; the ISO code after it. None: negotiated."""
    if amount is None:
        return "Negotiated"
    exact = Decimal(str(amount))  # the text of the number: 0.1 stays 0.1
    needed = max(-exact.normalize().as_tuple().exponent, 0)  # type: ignore[operator]
    return f"{exact:,.{max(exponent(currency), needed)}f} {currency.upper()}"


def money_minor(amount_minor: int, currency: str) -> str:
    """Integer minor units in the same format: ``350000`` EUR -> ``3,500.00 EUR``."""
    return money(Decimal(amount_minor).scaleb(-exponent(currency)), currency)


def inline_code(text: str) -> Markup:
    """Escaped text whose `backticked` parts become <code> elements (the error catalogue's notation)."""
    return Markup(re.sub(r"`([^`]+)`", r"<code>\1</code>", str(escape(text))))


@lru_cache(maxsize=1)
def environment() -> Environment:
    """Made at the first page: a worker serving only the API never loads Jinja2 (docs/performance.md)."""
    from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

    made = Environment(
        loader=FileSystemLoader(TEMPLATES_DIR),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    made.globals["static"] = static_url
    made.globals["blank_form"] = FormState.blank  # a form not sent yet, for partials that hold one
    made.filters["money"] = money
    made.filters["money_minor"] = money_minor
    made.filters["inline_code"] = inline_code
    return made


def _current(path: str) -> str:
    """The navigation entry a path belongs to (``/catalogue/training`` is under ``/catalogue``)."""
    for href, _ in NAV[1:]:
        if path == href or path.startswith(href + "/"):
            return href
    return "/" if path == "/" else ""


def render(
    request: Request,
    template: str,
    context: dict[str, Any] | None = None,
    status: int = 200,
    *,
    headers: dict[str, str] | None = None,
) -> HTMLResponse:
    """The page ``template`` rendered with ``context``, with the security headers of every page."""
    services = request.app.state.services
    page = {
        "request": request,
        "company": services.knowledge.pack.company,
        "nav": NAV,
        "current": _current(request.url.path),
        **(context or {}),
    }
    body = environment().get_template(template).render(page)
    return HTMLResponse(body, status_code=status, headers={**PAGE_HEADERS, **(headers or {})})
