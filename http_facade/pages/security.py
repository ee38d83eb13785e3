"""Security headers of every page: a strict Content-Security-Policy and its companions.

No ``unsafe-inline`` anywhere: templates hold no inline ``<script>``, ``style=`` or ``on*=``
attributes, so behaviour lives in ES modules and styles in CSS files under ``/static``. Violations
are reported to the existing collector, which takes anonymous browser reports.
"""

from __future__ import annotations

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
