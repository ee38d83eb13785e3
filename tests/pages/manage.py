"""Helpers of the tests of the settings pages (webhooks, usage alerts, provider keys, single sign-on):
the checks every dashboard page passes, and reading what a page shows."""

from __future__ import annotations

import html
import re
from urllib.parse import urlsplit

import httpx

from http_facade.pages.security import CONTENT_SECURITY_POLICY
from tests.pages.html import parse
from tests.pages.test_dashboard_pages import structure_problems
from tests.pages.test_pages import SERVICE_HOST, inline_problems


def assert_page(response: httpx.Response, status: int = 200) -> str:
    """A dashboard page: the status, the headers, no inline script or style, an accessible structure,
    nothing from another host, a CSRF token in every POST form. Returns its HTML."""
    where = f"{response.request.method} {response.request.url.path}"
    assert response.status_code == status, (where, response.status_code, response.text[:800])
    assert response.headers["content-type"] == "text/html; charset=utf-8", where
    assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY, where
    assert response.headers["cache-control"] == "no-store", where
    page = parse(response.text)
    assert inline_problems(page) == [], where
    assert structure_problems(page) == [], where
    for element in page.elements:
        for attribute in ("src", "href", "action"):
            assert urlsplit(element.attrs.get(attribute, "")).netloc in ("", SERVICE_HOST), (
                where,
                element.attrs,
            )
    forms = re.findall(r"<form[^>]*method=\"post\"[\s\S]*?</form>", response.text)
    assert all('name="csrf_token"' in form for form in forms), where
    return response.text


def error_message(text: str) -> str:
    """The words of the page's form error: its summary, with the fields' messages it lists."""
    found = re.search(r'<div class="form-error"[^>]*data-test="form-error"[^>]*>(.*?)</div>', text, re.S)
    assert found, "no form error on the page"
    return html.unescape(" ".join(re.sub(r"<[^>]+>", " ", found.group(1)).split()))


def notice(text: str) -> str:
    found = re.search(r'class="confirmation" role="status"[^>]*>(.*?)</p>', text, re.S)
    assert found, "no notice on the page"
    return html.unescape(found.group(1))


def field(text: str, test_id: str) -> str:
    """The value of the input with ``data-test=test_id`` (the first one)."""
    found = re.search(rf'<input[^>]*value="([^"]*)"[^>]*data-test="{test_id}"', text)
    assert found, f"no input {test_id}"
    return html.unescape(found.group(1))


def disabled_fieldset(text: str, action: str) -> bool:
    """Whether the form posting to ``action`` has its fields in a disabled fieldset (the plan gate)."""
    start = text.index(f'action="{action}"')
    form = text[start : text.index("</form>", start)]
    return bool(re.search(r"<fieldset[^>]*\sdisabled", form))
