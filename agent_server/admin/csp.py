"""Content-Security-Policy violation reports: parsing both browser formats, storing, aggregating.

Browsers send reports without credentials, so the collector is unauthenticated, size-limited,
rate-limited per IP and keeps only what the aggregate needs. URIs lose their query string and
fragment before storage: those can carry tokens or personal data.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlunsplit

from sqlalchemy import func, select

from agent_server.admin.tables import CspReportRecord
from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import ValidationFailed
from agent_server.foundation.urls import split_url
from agent_server.storage.db import Database
from agent_server.webhooks.repository import iso, utc

LEGACY_TYPE = "application/csp-report"
REPORTING_TYPE = "application/reports+json"
MAX_REPORTS_PER_REQUEST = 20


@dataclass(frozen=True)
class Violation:
    directive: str
    blocked_uri: str
    document_uri: str
    disposition: str
    body: dict[str, Any]


def _clean_uri(value: object) -> str:
    text = str(value or "")[:500]
    if "://" not in text:
        return text  # keywords such as 'inline', 'eval', 'self'
    parts = split_url(text)
    if parts is None:  # not a URL urllib can split: still without its query and fragment
        return text.partition("?")[0].partition("#")[0]
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))[:500]


def _first(body: dict[str, Any], *names: str) -> Any:
    return next((body[n] for n in names if body.get(n)), "")


def _violation(body: dict[str, Any]) -> Violation:
    directive = str(_first(body, "effective-directive", "effectiveDirective", "violated-directive"))
    directive = directive.split(" ", 1)[0][:200] or "unknown"
    kept = {k: v for k, v in body.items() if k not in ("original-policy", "originalPolicy", "script-sample")}
    dumped = json.dumps(kept, default=str)
    return Violation(
        directive=directive,
        blocked_uri=_clean_uri(_first(body, "blocked-uri", "blockedURL")) or "unknown",
        document_uri=_clean_uri(_first(body, "document-uri", "documentURL")),
        disposition=str(body.get("disposition") or "enforce")[:16],
        body=json.loads(dumped) if len(dumped) <= 4000 else {},
    )


def parse_reports(content_type: str, raw: bytes) -> list[Violation]:
    """Both formats: ``{"csp-report": {...}}`` (report-uri) and ``[{type, body}]`` (Reporting API)."""
    media = content_type.split(";", 1)[0].strip().lower()
    if media not in (LEGACY_TYPE, REPORTING_TYPE, "application/json"):
        raise ValidationFailed(f"Unsupported report type {media or 'none'}.", param="content-type")
    try:
        document = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValidationFailed("The report is not valid JSON.", code="invalid_json", param="body") from exc
    if isinstance(document, dict) and isinstance(document.get("csp-report"), dict):
        return [_violation(document["csp-report"])]
    if isinstance(document, list):
        reports = [
            item["body"]
            for item in document[:MAX_REPORTS_PER_REQUEST]
            if isinstance(item, dict)
            and item.get("type") == "csp-violation"
            and isinstance(item.get("body"), dict)
        ]
        if reports or not document:
            return [_violation(body) for body in reports]
    raise ValidationFailed("Not a CSP report.", param="body")


class CspReports:
    def __init__(self, db: Database, clock: Clock) -> None:
        self.db, self.clock = db, clock

    async def store(self, violations: list[Violation], ip: str | None) -> int:
        at = utc(self.clock.now())
        async with self.db.session() as session:
            for v in violations:
                session.add(
                    CspReportRecord(
                        directive=v.directive,
                        blocked_uri=v.blocked_uri,
                        document_uri=v.document_uri,
                        disposition=v.disposition,
                        ip=ip,
                        body=v.body,
                        at=at,
                    )
                )
        return len(violations)

    async def aggregate(self, limit: int = 100) -> list[dict[str, Any]]:
        """Counts grouped by (directive, blocked URI), most frequent first."""
        query = (
            select(
                CspReportRecord.directive,
                CspReportRecord.blocked_uri,
                func.count().label("count"),
                func.min(CspReportRecord.at).label("first_seen"),
                func.max(CspReportRecord.at).label("last_seen"),
            )
            .group_by(CspReportRecord.directive, CspReportRecord.blocked_uri)
            .order_by(func.count().desc(), CspReportRecord.directive)
            .limit(limit)
        )
        async with self.db.session() as session:
            rows = (await session.execute(query)).all()
        return [
            {
                "directive": row.directive,
                "blocked_uri": row.blocked_uri,
                "count": int(row.count),
                "first_seen": iso(row.first_seen) if not isinstance(row.first_seen, str) else row.first_seen,
                "last_seen": iso(row.last_seen) if not isinstance(row.last_seen, str) else row.last_seen,
            }
            for row in rows
        ]
