"""Booking date ranges for consulting packages that take the buyer's team's time (the content pack's
``booking_days``), in ACP 2026-04-17 terms: the seller offers each start as a fulfillment option of
type ``local_delivery`` whose ``delivery_window`` is the range, the agent picks one with
``selected_fulfillment_options`` (the spec's own way to choose among the seller's options).

Option ids read ``booking:<item id>:<YYYY-MM-DD>`` (the first working day). The Mondays of the next
weeks are listed; any weekday start within the limits may be selected by its id. A range is valid
when it starts on a weekday at least ``LEAD_DAYS`` and at most ``HORIZON_DAYS`` ahead (Berlin time);
it covers ``booking_days`` working days (Monday to Friday), 09:00 to 17:00 Europe/Berlin. Validity is
judged when read, so a range that has come too close stops the payment again."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from agent_server.foundation.errors import ValidationFailed
from agent_server.foundation.timeutil import iso

PREFIX = "booking:"
LEAD_DAYS = 14  # preparation (interviews, access) before the first day
HORIZON_DAYS = 180
LISTED_WEEKS = 8  # Monday starts listed as options
ZONE = ZoneInfo("Europe/Berlin")  # where the consultants work; the discovery call's zone too
DAY_START, DAY_END = time(9), time(17)
_ID = re.compile(r"^booking:([A-Za-z0-9_-]{1,100}):(\d{4}-\d{2}-\d{2})$")


@dataclass(frozen=True)
class Booking:
    item_id: str
    start: date
    days: int

    @property
    def option_id(self) -> str:
        return f"{PREFIX}{self.item_id}:{self.start.isoformat()}"

    @property
    def end(self) -> date:
        """The last of ``days`` working days from ``start`` (a weekday)."""
        day, left = self.start, self.days - 1
        while left:
            day += timedelta(days=1)
            if day.weekday() < 5:
                left -= 1
        return day

    def window(self) -> dict[str, str]:
        return {
            "start": iso(datetime.combine(self.start, DAY_START, ZONE)),
            "end": iso(datetime.combine(self.end, DAY_END, ZONE)),
        }

    def text(self) -> str:
        first, last = self.start, self.end
        return f"{first:%a %-d %b %Y} to {last:%a %-d %b %Y}, {self.days} working days"

    def problem(self, now: datetime) -> str | None:
        """Why this range cannot be booked now; None: it can."""
        today = now.astimezone(ZONE).date()
        if self.start.weekday() >= 5:
            return f"{self.start.isoformat()} is a {self.start:%A}; a booking starts on a weekday (Monday to Friday)."
        if self.start < today + timedelta(days=LEAD_DAYS):
            return (
                f"A booking starts at least {LEAD_DAYS} days ahead: the earliest start is "
                f"{earliest(now).isoformat()}."
            )
        if self.start > today + timedelta(days=HORIZON_DAYS):
            return f"A booking starts at most {HORIZON_DAYS} days ahead: choose a start before {today + timedelta(days=HORIZON_DAYS + 1)}."
        return None


def earliest(now: datetime) -> date:
    day = now.astimezone(ZONE).date() + timedelta(days=LEAD_DAYS)
    while day.weekday() >= 5:
        day += timedelta(days=1)
    return day


def parse(option_id: str, days: dict[str, int], param: str) -> Booking:
    """A booking option id as a Booking of an item that needs one; a clear 400 otherwise."""
    found = _ID.match(option_id)
    start = None
    if found:
        try:
            start = date.fromisoformat(found.group(2))
        except ValueError:
            start = None
    if found is None or start is None:
        raise ValidationFailed(
            "A booking option id reads 'booking:<item id>:<YYYY-MM-DD>' (the first day, a real date).",
            code="invalid_fulfillment_option",
            param=param,
        )
    item_id = found.group(1)
    if item_id not in days:
        raise ValidationFailed(
            f"'{item_id}' is not booked for dates; only these packages are: {', '.join(sorted(days)) or 'none'}.",
            code="invalid_fulfillment_option",
            param=param,
        )
    return Booking(item_id, start, days[item_id])


def options(item_id: str, days: int, name: str, now: datetime, chosen: date | None) -> list[dict[str, Any]]:
    """The listed starts (Mondays) for one item, plus the chosen start when it is not among them."""
    first = earliest(now)
    monday = first + timedelta(days=(7 - first.weekday()) % 7)
    starts = [monday + timedelta(weeks=week) for week in range(LISTED_WEEKS)]
    if chosen is not None and chosen not in starts:
        starts = sorted([*starts, chosen])
    return [option(Booking(item_id, start, days), name) for start in starts]


def option(booking: Booking, name: str) -> dict[str, Any]:
    return {
        "type": "local_delivery",
        "id": booking.option_id,
        "title": f"{name}: {booking.text()}",
        "description": (
            "Booked with your team, on site or remote, 09:00-17:00 Europe/Berlin. Another weekday start "
            f"at least {LEAD_DAYS} and at most {HORIZON_DAYS} days ahead: select "
            f"'{PREFIX}{booking.item_id}:<YYYY-MM-DD>'."
        ),
        "delivery_window": booking.window(),
        "totals": [{"type": "total", "display_text": "Included", "amount": 0}],
    }
