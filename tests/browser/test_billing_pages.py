"""The plan and billing journey in Chromium: a new organisation subscribes during its trial through the
sandbox provider's checkout page and comes back to the billing page, which says when the first charge
happens; the pages pass axe-core at 375 and 1280 px, and no other site can frame the checkout."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from playwright.sync_api import Browser, expect

from tests.accounts.smtp import SmtpServer
from tests.browser.conftest import OpenVisitor
from tests.browser.dashboard import go_to, register
from tests.browser.harness import HEIGHT, WIDTH, Visitor

pytestmark = pytest.mark.browser


def check_wide_and_narrow(visitor: Visitor, name: str) -> None:
    visitor.page.set_viewport_size({"width": 1280, "height": 900})
    visitor.check(f"{name}, 1280 px")
    visitor.page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
    visitor.check(name)


@contextmanager
def framing_site(url: str) -> Iterator[str]:
    """Another origin on loopback (a real server on its own port) whose page frames ``url``."""
    page = (
        f'<!doctype html><html lang="en"><title>Framer</title><iframe src="{url}"></iframe></html>'.encode()
    )

    class Framer(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Framer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def framed_pay_buttons(browser: Browser, url: str) -> int:
    """How many Pay buttons another origin shows when it frames ``url`` (the browser's own count)."""
    context = browser.new_context()
    try:
        with framing_site(url) as framer:
            page = context.new_page()
            page.goto(framer)
            page.wait_for_load_state("load")
            [frame] = [f for f in page.frames if f is not page.main_frame]
            return frame.locator("button", has_text="Pay").count()
    finally:
        context.close()


def test_subscribe_in_the_trial_and_see_when_the_first_charge_happens(
    open_visitor: OpenVisitor, smtp: SmtpServer, browser: Browser
) -> None:
    visitor = open_visitor()
    page = visitor.page
    register(visitor, smtp, "grace@hopper.example", "Hopper Compilers")
    go_to(page, "billing")
    expect(page.get_by_test_id("billing-next-charge")).to_contain_text("if you subscribe now, on ")
    expect(page.get_by_test_id("billing-next-charge")).to_contain_text("when the free trial ends")
    expect(page.get_by_test_id("billing-vat")).to_contain_text("added to each invoice")
    check_wide_and_narrow(visitor, "billing in the trial")

    page.get_by_test_id("plan-professional").click()
    page.wait_for_url("**/sandbox/checkout/*")
    expect(page.locator("body")).to_contain_text("nothing is charged today")
    expect(page.locator("body")).to_contain_text("Due today: 0.00 EUR")
    check_wide_and_narrow(visitor, "sandbox checkout")
    assert page.get_by_role("button", name="Pay").count() == 1
    assert framed_pay_buttons(browser, page.url) == 0  # frame-ancestors 'none'

    page.get_by_role("button", name="Pay").click()
    page.wait_for_url("**/app/billing?session_ref=*")
    expect(page.get_by_test_id("checkout-result")).to_contain_text(
        "The checkout is complete for the Professional plan; the subscription is in its free trial"
    )
    charge = page.get_by_test_id("billing-next-charge")
    expect(charge).to_contain_text("399.00 EUR plus VAT on ")
    expect(charge).to_contain_text("when the free trial ends; nothing is charged before")
    expect(page.get_by_test_id("invoices-table")).to_contain_text("0.00 EUR")
    check_wide_and_narrow(visitor, "billing after subscribing")
