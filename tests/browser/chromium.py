"""Debian's Chromium driven by Playwright: where it is, how it starts, and what is missing when it cannot.

Playwright's own browser download cannot work here and is never attempted: the browser is the
system's (`tests/support/deps/chromium.sh` installs it), launched by its path. The tests run
headless, so they take Debian's headless shell of the same Chromium (package
chromium-headless-shell, the headless mode Playwright itself uses) where it is installed: 35 % less
browser CPU than the full browser for the same pages, screenshots and axe-core results
(docs/performance.md). ``AGENTGATE_TEST_CHROMIUM`` names another build, e.g. the full browser.
"""

from __future__ import annotations

import os
from pathlib import Path

from playwright.sync_api import Browser, Playwright

HEADLESS_SHELL, FULL_BROWSER = Path("/usr/bin/chromium-headless-shell"), Path("/usr/bin/chromium")
_DEFAULT = HEADLESS_SHELL if os.access(HEADLESS_SHELL, os.X_OK) else FULL_BROWSER
CHROMIUM = Path(os.environ.get("AGENTGATE_TEST_CHROMIUM", str(_DEFAULT)))
# Nothing of Chromium's own (updates, sync, field trials, QUIC probes) may reach the network.
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
AXE_SCRIPT = Path(__file__).parent / "node" / "node_modules" / "axe-core" / "axe.min.js"


def missing() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    if not os.access(CHROMIUM, os.X_OK):
        return f"no Chromium at {CHROMIUM} (tests/support/deps/chromium.sh installs it)"
    if not AXE_SCRIPT.is_file():
        return f"no axe-core at {AXE_SCRIPT} (tests/support/deps/axe.sh installs it)"
    return None


def launch(playwright: Playwright) -> Browser:
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
