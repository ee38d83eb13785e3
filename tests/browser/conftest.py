"""Fixtures of the browser tests: one Chromium for all of them, a fresh context per person, the app on
``http://localhost:<port>`` with a fresh data dir and a real SMTP server.

Chromium or axe-core missing: the tests skip with the reason, or fail when CI=true.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, sync_playwright

from agent_server.foundation.settings import Settings
from tests.accounts.smtp import SmtpServer
from tests.browser import chromium
from tests.browser.first_hour import open_at, quickstart  # noqa: F401  (fixtures of the first-hour journeys)
from tests.browser.harness import ARTIFACTS, Visitor
from tests.browser.live import ThreadedServer, app_server
from tests.conftest import require_service

OpenVisitor = Callable[..., Visitor]


@pytest.fixture(scope="package")
def browser() -> Iterator[Browser]:
    """One Chromium for every browser test; each test opens contexts of its own."""
    require_service("Chromium", chromium.missing())
    with sync_playwright() as playwright:
        playwright.selectors.set_test_id_attribute("data-test")  # the pages' hooks (docs/pages.md)
        launched = chromium.launch(playwright)
        yield launched
        launched.close()


@pytest.fixture
def smtp() -> Iterator[SmtpServer]:
    with SmtpServer() as server:
        yield server


@pytest.fixture
def server(settings: Settings, smtp: SmtpServer) -> Iterator[ThreadedServer]:
    with app_server(settings, smtp_url=smtp.url) as live:
        yield live


@pytest.fixture
def artifacts(request: pytest.FixtureRequest) -> Path:
    """The test's screenshot folder, emptied first (tests/browser/artifacts/<test>/, git-ignored)."""
    folder = ARTIFACTS / request.node.name.replace("[", "-").replace("]", "")
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder


@pytest.fixture
def open_visitor(browser: Browser, server: ThreadedServer, artifacts: Path) -> Iterator[OpenVisitor]:
    """Opens a person's browser context on the server (or on ``origin``); every one is closed after
    the test, and one whose pages did not load cleanly fails it."""
    visitors: list[Visitor] = []

    def open_one(origin: str | None = None, **context_options: Any) -> Visitor:
        folder = artifacts if not visitors else artifacts / f"person-{len(visitors) + 1}"
        folder.mkdir(exist_ok=True)
        visitor = Visitor(browser, origin or server.url, folder, **context_options)
        visitors.append(visitor)
        return visitor

    yield open_one
    for visitor in visitors:
        visitor.close()
    for visitor in visitors:
        visitor.assert_clean()


@pytest.fixture
def visitor(open_visitor: OpenVisitor) -> Visitor:
    return open_visitor()
