"""A circuit breaker for a shared dependency (Redis): after a few failures in a row, calls fail at
once for a cool-down instead of each waiting for its own timeout (reliability-security.md 4.1).

After the cool-down the next call goes through (half-open): a success closes the breaker, a
failure opens it again for another cool-down. Real time (``time.monotonic``) on purpose: an outage
is measured in wall-clock seconds whatever the service clock of a test says.
"""

from __future__ import annotations

import time


class Breaker:
    def __init__(self, failures: int = 3, cooldown: float = 5.0) -> None:
        self.failures, self.cooldown = failures, cooldown
        self._count = 0
        self._open_until = 0.0

    @property
    def open(self) -> bool:
        return self._open_until > 0 and time.monotonic() < self._open_until

    def success(self) -> None:
        self._count = 0
        self._open_until = 0.0

    def failure(self) -> bool:
        """Count a failure; True when this one opened the breaker."""
        self._count += 1
        if self._count < self.failures:
            return False
        # Half-open after the cool-down: one more failure is enough to open it again.
        self._count = self.failures - 1
        self._open_until = time.monotonic() + self.cooldown
        return True
