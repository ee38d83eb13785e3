"""Mail as ``make run`` leaves it: the readable ``<id>.txt`` files of ``<data_dir>/outbox`` (the
dashboard world's mail worker is off, so the test sends what is queued itself)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from tests.pages.dashboard import Dash

LINK = re.compile(r"https?://\S+")


@dataclass(frozen=True)
class Letter:
    to: str
    subject: str
    text: str

    def link(self, path: str) -> str:
        [found] = [url for url in LINK.findall(self.text) if path in url]
        return found


async def letters(dash: Dash, to: str | None = None) -> list[Letter]:
    """Every message sent so far (queued ones are sent first), or those to ``to``."""
    while await dash.app.state.accounts.mailer.worker.tick():
        pass
    found = []
    for path in sorted((dash.settings.data_dir / "outbox").glob("*.txt"), key=lambda p: p.stat().st_mtime_ns):
        head, _, body = path.read_text().partition("\n\n")
        headers = dict(line.split(": ", 1) for line in head.splitlines())
        found.append(Letter(headers["To"], headers["Subject"], body))
    return [letter for letter in found if to is None or letter.to == to]
