"""Security headers of every page: a strict Content-Security-Policy and its companions.

No ``unsafe-inline`` anywhere: templates hold no inline ``<script>``, ``style=`` or ``on*=``
attributes, so behaviour lives in ES modules and styles in CSS files under ``/static``. Violations
are reported to the existing collector, which takes anonymous browser reports.
"""

from __future__ import annotations

from starlette.requests import Request

from agent_server.accounts.passkey_relying_party import origin_of
from agent_server.foundation.errors import PermissionDenied

CSP_REPORT_PATH = "/admin/csp-report/"
CSP_DIRECTIVES = (
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",  # the vendored API explorer's stylesheet draws its icons as data: URIs
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
    f"report-uri {CSP_REPORT_PATH}",
)
CONTENT_SECURITY_POLICY = "; ".join(CSP_DIRECTIVES)
PAGE_HEADERS: dict[str, str] = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    # Links to other sites (a booking page, a payment provider) learn nothing about the visitor's path.
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",  # frame-ancestors for browsers that predate it
    "Cross-Origin-Opener-Policy": "same-origin",
}
# Static files are not documents: no CSP needed, but never sniffed as another type.
STATIC_HEADERS: dict[str, str] = {
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "public, max-age=3600",
}


def refuse_cross_site(request: Request) -> None:
    """The public forms (newsletter, checkout, discovery call) take posts from this site's pages only:
    the browser's ``Sec-Fetch-Site`` or ``Origin`` must not name another site. Programs send neither and
    use the JSON routes' limits; a form of another site cannot sign a visitor up for anything."""
    fetch_site = request.headers.get("sec-fetch-site")
    origin = request.headers.get("origin")
    own = {origin_of(str(request.base_url)), origin_of(request.app.state.services.settings.public_base_url)}
    if fetch_site == "cross-site" or (origin is not None and origin_of(origin) not in own):
        raise PermissionDenied(
            "This form was sent from another site. Open the form on this site and send it from there.",
            code="cross_site_form",
        )
