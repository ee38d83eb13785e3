"""Checks of a page at both widths the dashboard is made for: a phone (375 px) and a desktop (1280 px)."""

from __future__ import annotations

from collections.abc import Callable

from playwright.sync_api import Page

from tests.browser.harness import HEIGHT, WIDTH, Visitor

WIDE = {"width": 1280, "height": 900}


def check_both_widths(visitor: Visitor, name: str, also: Callable[[Page, str], None] | None = None) -> None:
    """``visitor.check`` (axe-core, no sideways scroll, a screenshot) and ``also`` at 375 px, then at
    1280 px; the page is left at 375 px."""
    page = visitor.page
    for width, size in ((WIDTH, {"width": WIDTH, "height": HEIGHT}), (WIDE["width"], WIDE)):
        page.set_viewport_size(size)
        visitor.check(f"{name} at {width} px")
        if also is not None:
            also(page, f"{name} at {width} px")
    page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
