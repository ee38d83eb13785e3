"""API versions (spec 9): date-named immutable contracts, their lifecycle and the headers it implies.

A client pins a version with the ``API-Version`` request header. The registry answers, for a
requested version at a given time, which version serves the request, which headers the response
carries (``Deprecation`` and RFC 8594 ``Sunset`` as HTTP-dates, as the contract's section 9 writes
them, ``Link`` with ``rel="deprecation"`` and ``rel="successor-version"``, and in the final month
an RFC 7234 ``Warning``) or which error it gets (400 ``unsupported_version``, 410
``version_gone``). Pure: time comes in as epoch seconds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from email.utils import format_datetime
from typing import Literal

from agent_server.foundation.errors import AgentError, UnsupportedVersion, VersionGone

CURRENT_VERSION = "2026-05-18"
HEADER = "API-Version"
POLICY_PATH = "/docs/versioning"
OPENAPI_PATH = "/openapi.json"
# Spec 9: the final reminder comes in month 11 of 12, i.e. during the last month before the sunset.
FINAL_NOTICE_SECONDS = 30 * 86400
_FORMAT = re.compile(r"^(\d{4}-\d{2}-\d{2})(-preview)?$")

Status = Literal["current", "deprecated", "retired"]


def _epoch(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


def http_date(seconds: float) -> str:
    """An IMF-fixdate (RFC 9110), the format of ``Deprecation`` and ``Sunset``."""
    return format_datetime(datetime.fromtimestamp(seconds, tz=UTC), usegmt=True)


def valid_date(text: str) -> bool:
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class ApiVersion:
    """One contract. ``status`` is what was declared; dates move it on as time passes."""

    name: str
    status: Status = "current"
    deprecated_at: datetime | None = None
    sunset_at: datetime | None = None
    successor: str | None = None
    notes: str = ""

    def __post_init__(self) -> None:
        match = _FORMAT.match(self.name)
        if not match or match.group(2) or not valid_date(match.group(1)):
            raise ValueError(f"API version {self.name!r} is not a YYYY-MM-DD date")
        if self.status != "current" and self.successor is None:
            raise ValueError(f"API version {self.name} is {self.status} but names no successor")
        dep, sun = _epoch(self.deprecated_at), _epoch(self.sunset_at)
        if dep is not None and sun is not None and sun < dep:
            raise ValueError(f"API version {self.name}: the sunset precedes the deprecation")

    def state(self, now: float) -> Status:
        sunset, deprecated = _epoch(self.sunset_at), _epoch(self.deprecated_at)
        if self.status == "retired" or (sunset is not None and now >= sunset):
            return "retired"
        if self.status == "deprecated" or (deprecated is not None and now >= deprecated):
            return "deprecated"
        return "current"


@dataclass(frozen=True)
class Resolution:
    """What a request pinned to a version gets: the echoed name and extra headers, or an error."""

    version: str
    headers: list[tuple[str, str]] = field(default_factory=list)
    error: AgentError | None = None


class VersionRegistry:
    """The versions the service knows, newest contract first in ``current``."""

    def __init__(self, versions: Iterable[ApiVersion], current: str = CURRENT_VERSION) -> None:
        self._versions = {v.name: v for v in versions}
        if current not in self._versions:
            raise ValueError(f"the current API version {current} is not in the registry")
        self.current = self._versions[current]
        for version in self._versions.values():
            if version.successor is not None and version.successor not in self._versions:
                raise ValueError(f"API version {version.name} names an unknown successor")

    @property
    def versions(self) -> list[ApiVersion]:
        return sorted(self._versions.values(), key=lambda v: v.name, reverse=True)

    def get(self, name: str) -> ApiVersion | None:
        return self._versions.get(name)

    def supported(self, now: float) -> list[str]:
        """Versions a client may pin today (newest first), previews aside."""
        return [v.name for v in self.versions if v.state(now) != "retired"]

    def resolve(self, requested: str, now: float, base_url: str = "") -> Resolution:
        requested = requested.strip()
        if requested == self.current.name:
            return Resolution(requested)
        match = _FORMAT.match(requested)
        if match and match.group(2) and valid_date(match.group(1)):
            # Previews may change or vanish without notice; any well-formed one is served as is.
            return Resolution(requested)
        version = self._versions.get(requested)
        if version is None:
            return Resolution(self.current.name, error=self._unsupported(requested, now))
        state = version.state(now)
        if state == "retired":
            return Resolution(
                version.name, self.lifecycle_headers(version, now, base_url), self._gone(version, base_url)
            )
        if state == "deprecated":
            return Resolution(version.name, self.lifecycle_headers(version, now, base_url))
        return Resolution(version.name)

    def lifecycle_headers(self, version: ApiVersion, now: float, base_url: str) -> list[tuple[str, str]]:
        deprecated, sunset = _epoch(version.deprecated_at), _epoch(version.sunset_at)
        headers: list[tuple[str, str]] = []
        # The contract (spec 9) writes ``Deprecation: <http-date>``; without a declared date, the
        # deprecation counts from now on.
        headers.append(("Deprecation", http_date(deprecated if deprecated is not None else now)))
        if sunset is not None:
            headers.append(("Sunset", http_date(sunset)))
        links = [f'<{base_url}{POLICY_PATH}>; rel="deprecation"; type="text/markdown"']
        if sunset is not None:
            links.append(f'<{base_url}{POLICY_PATH}>; rel="sunset"; type="text/markdown"')
        if version.successor:
            links.append(
                f'<{base_url}{OPENAPI_PATH}>; rel="successor-version"; type="application/vnd.oai.openapi+json"'
            )
        headers.append(("Link", ", ".join(links)))
        if sunset is not None and now < sunset and sunset - now <= FINAL_NOTICE_SECONDS:
            text = (
                f"API version {version.name} will be retired on {http_date(sunset)}; "
                f"migrate to {version.successor}"
            )
            headers.append(("Warning", f'299 - "{text}" "{http_date(now)}"'))
        return headers

    def _unsupported(self, requested: str, now: float) -> UnsupportedVersion:
        supported = self.supported(now)
        shown = requested if _FORMAT.match(requested) else "that value"
        return UnsupportedVersion(
            f"API-Version {shown} is not supported. Send one of {', '.join(supported)} "
            "(or YYYY-MM-DD-preview), or omit the header for the current version.",
            param=HEADER,
            extra={"supported_versions": supported},
        )

    def _gone(self, version: ApiVersion, base_url: str) -> VersionGone:
        successor = version.successor or self.current.name
        sunset = _epoch(version.sunset_at)
        when = f" on {http_date(sunset)}" if sunset is not None else ""
        return VersionGone(
            f"API version {version.name} was retired{when}. Send API-Version: {successor} (or omit the "
            f"header) and follow the migration guide at {base_url}{POLICY_PATH}.",
            param=HEADER,
            extra={
                "successor_version": successor,
                "migration_guide": f"{base_url}{POLICY_PATH}",
                "openapi_url": f"{base_url}{OPENAPI_PATH}",
            },
        )


def default_versions() -> VersionRegistry:
    """The shipped registry: only the current contract."""
    return VersionRegistry([ApiVersion(CURRENT_VERSION, notes="First public contract.")])
