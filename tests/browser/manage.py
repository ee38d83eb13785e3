"""What the settings journeys (tests/browser/test_manage_*.py) share: a page checked at both widths."""

from __future__ import annotations

from tests.browser.harness import HEIGHT, WIDTH, Visitor

WIDE = 1280


def check_both(visitor: Visitor, name: str) -> None:
    """axe-core, no sideways scrolling and a screenshot at 375 px, then the same at 1280 px."""
    visitor.check(name)
    visitor.page.set_viewport_size({"width": WIDE, "height": 900})
    try:
        visitor.check(f"{name} at {WIDE} px")
    finally:
        visitor.page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
