"""One person in the browser: a Playwright context that reaches only the service under test, records
everything that went wrong on its pages, and checks each page it is asked to (axe-core, 375 px).

Every request to another origin is aborted and recorded, so a page that needs a CDN fails its test.
A failed load, an HTTP error the test did not announce, a console error (a CSP violation is one) and
an uncaught exception are recorded too; ``assert_clean`` fails the test naming them.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from playwright.sync_api import Browser, ConsoleMessage, Frame, Page, Request, Response, Route

from tests.browser.chromium import AXE_SCRIPT

WIDTH, HEIGHT = 375, 812  # a small phone: every page must work this narrow
FAILING_IMPACTS = {"serious", "critical"}
ARTIFACTS = Path(__file__).parent / "artifacts"
LOAD_FAILED = "Failed to load resource: the server responded with a status of"


@dataclass
class Problems:
    outside: list[str] = field(default_factory=list)  # requests to another origin (aborted)
    failed: list[str] = field(default_factory=list)  # requests that did not complete
    http_errors: list[str] = field(default_factory=list)  # 4xx/5xx answers nobody announced
    console: list[str] = field(default_factory=list)  # console errors, CSP violations among them
    exceptions: list[str] = field(default_factory=list)  # uncaught errors in the page's scripts

    def report(self) -> list[str]:
        named = {
            "request to another origin": self.outside,
            "request failed": self.failed,
            "unexpected HTTP error": self.http_errors,
            "console error": self.console,
            "uncaught exception": self.exceptions,
        }
        return [f"{kind}: {entry}" for kind, entries in named.items() for entry in entries]


class Visitor:
    """A fresh browser context (375 px wide) whose pages may load only from ``origin``."""

    def __init__(self, browser: Browser, origin: str, artifacts: Path, **context_options: Any) -> None:
        self.origin = origin.rstrip("/")
        self.artifacts = artifacts
        self.problems = Problems()
        self._announced: list[tuple[str, int]] = []
        # Loads the browser cancels because their page navigated away are no failure: the count of
        # navigations of each request's frame when it started tells them apart.
        self._navigations: dict[Frame, int] = defaultdict(int)
        self._started: dict[Request, int] = {}
        self._aborted: list[Request] = []
        self._inflight: set[Request] = set()  # requests of the pages not yet answered (``quiet``)
        self._shots = 0
        self.context = browser.new_context(
            viewport={"width": WIDTH, "height": HEIGHT}, base_url=self.origin, **context_options
        )
        # Waits end when the page is ready; the bound only stops a test that hangs (a loaded machine
        # may take longer than Playwright's 30 s default to serve a page).
        self.context.set_default_timeout(90_000)
        self.context.route("**/*", self._only_the_service)
        self.context.on("console", self._on_console)
        self.context.on("request", self._on_request)
        self.context.on("requestfailed", self._on_failed)
        self.context.on("requestfinished", self._on_finished)
        self.context.on("response", self._on_response)
        self.context.on("weberror", lambda error: self.problems.exceptions.append(str(error.error)))
        self.page = self.context.new_page()
        self.page.on("framenavigated", self._on_navigated)

    # What the test announces it expects to fail.

    def announce(self, path: str, status: int) -> None:
        """A refusal the test provokes on purpose (e.g. the chat token while it is too young)."""
        self._announced.append((path, status))

    def _is_announced(self, url: str, status: int) -> bool:
        path = urlsplit(url).path
        return any(path == p and status == s for p, s in self._announced)

    # The guards.

    def _only_the_service(self, route: Route, request: Request) -> None:
        parts = urlsplit(request.url)
        if f"{parts.scheme}://{parts.netloc}" == self.origin or parts.scheme in {"data", "blob"}:
            route.continue_()
        else:
            self.problems.outside.append(request.url)
            route.abort("blockedbyclient")

    def _on_console(self, message: ConsoleMessage) -> None:
        if message.type != "error":
            return
        url = message.location.get("url", "")
        status = re.search(rf"{LOAD_FAILED} (\d+)", message.text)
        if status and self._is_announced(url, int(status.group(1))):
            return
        self.problems.console.append(f"{message.text} ({url})" if url else message.text)

    def _on_navigated(self, frame: Frame) -> None:
        self._navigations[frame] += 1

    def _on_request(self, request: Request) -> None:
        self._started[request] = self._navigations[request.frame]
        self._inflight.add(request)

    def _on_finished(self, request: Request) -> None:
        self._inflight.discard(request)

    def _on_failed(self, request: Request) -> None:
        self._inflight.discard(request)
        if request.url in self.problems.outside:
            return
        if request.failure == "net::ERR_ABORTED":
            self._aborted.append(request)  # judged in report(), once the navigation may have happened
        else:
            self.problems.failed.append(f"{request.method} {request.url}: {request.failure}")

    def _on_response(self, response: Response) -> None:
        if response.status >= 400 and not self._is_announced(response.url, response.status):
            self.problems.http_errors.append(f"{response.status} {response.request.method} {response.url}")

    # Pages.

    def quiet(self, window_ms: int = 150) -> None:
        """The page has loaded and made every request it makes: none has been in flight for
        ``window_ms``. Playwright's ``networkidle`` asks for 500 ms of quiet after every page, which
        was most of the time of the tests that visit every page."""
        self.page.wait_for_load_state("load")
        quiet_for = 0
        while quiet_for < window_ms:
            self.page.wait_for_timeout(25)  # Playwright delivers the request events while it waits
            quiet_for = 0 if self._inflight else quiet_for + 25

    def open(self, path: str, status: int = 200) -> Page:
        response = self.page.goto(path)
        assert response is not None and response.status == status, (path, response and response.status)
        return self.page

    def check(self, name: str) -> None:
        """The current page passes axe-core, has no horizontal scroll at 375 px, and is kept as a PNG."""
        self.screenshot(name)
        assert_no_horizontal_scroll(self.page, name)
        assert_accessible(self.page, name)

    def screenshot(self, name: str) -> Path:
        self._shots += 1
        path = self.artifacts / f"{self._shots:02d}-{re.sub(r'[^a-z0-9]+', '-', name.lower()).strip('-')}.png"
        self.page.screenshot(path=path, full_page=True)
        return path

    def report(self) -> list[str]:
        """Everything that went wrong, a line each."""
        cancelled = [
            f"{r.method} {r.url}: {r.failure} (its page did not navigate away)"
            for r in self._aborted
            if self._navigations[r.frame] == self._started.get(r, -1)
        ]
        return self.problems.report() + [f"request failed: {line}" for line in cancelled]

    def assert_clean(self) -> None:
        problems = self.report()
        assert not problems, "the pages did not load cleanly:\n" + "\n".join(problems)

    def close(self) -> None:
        self.context.close()


# The page's scroll width, and (to say where to look) the outermost elements that reach past the
# viewport without a scrolling box of their own around them.
OVERFLOW = """() => {
  const width = document.documentElement.clientWidth;
  const clipped = (e) => {
    // An absolutely positioned box escapes every scrolling box up to its containing block.
    let escaping = getComputedStyle(e).position === "absolute";
    for (let p = e.parentElement; p && p !== document.body; p = p.parentElement) {
      const style = getComputedStyle(p);
      if (escaping && style.position === "static") continue;
      if (style.overflowX !== "visible") return true;
      escaping = style.position === "absolute";
    }
    return false;
  };
  const wide = [...document.querySelectorAll("body *")]
    .filter((e) => getComputedStyle(e).position !== "fixed")
    .filter((e) => e.getBoundingClientRect().right > width + 1 && !clipped(e))
    .filter((e, _, all) => !all.includes(e.parentElement))
    .slice(0, 5)
    .map((e) => `${e.tagName.toLowerCase()}${e.id ? "#" + e.id : ""}${[...e.classList].map((c) => "." + c).join("")}`
      + ` (right edge ${Math.round(e.getBoundingClientRect().right)} px)`);
  return { scroll: document.documentElement.scrollWidth, width, wide };
}"""


def assert_no_horizontal_scroll(page: Page, name: str) -> None:
    seen = page.evaluate(OVERFLOW)
    assert seen["scroll"] <= seen["width"], f"{name}: scrolls sideways at {WIDTH} px: {seen}"


@cache
def axe_source() -> str:
    return AXE_SCRIPT.read_text()


def assert_accessible(page: Page, name: str) -> None:
    """axe-core's serious and critical findings. The script is evaluated through the DevTools protocol,
    which the page's Content-Security-Policy does not govern, so the policy stays on while axe runs."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(axe_source())
    violations = page.evaluate(
        """async () => (await axe.run(document, { resultTypes: ["violations"] })).violations.map((v) => ({
            id: v.id, impact: v.impact, help: v.help,
            nodes: v.nodes.slice(0, 3).map((n) => `${n.target.join(" ")}: ${n.failureSummary}`),
        }))"""
    )
    failing = [v for v in violations if v["impact"] in FAILING_IMPACTS]
    assert not failing, f"{name}: axe-core finds {len(failing)} serious or critical problems: {failing}"
