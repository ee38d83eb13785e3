"""The key settings form of the dashboard (create, and change on the key page): what people type
turned into what ``POST`` / ``PATCH /admin/api-keys`` take, checked by the same rules.

Fields arrive as text and are read here: the budget in money of the deployment's currency (turned
into minor units exactly, as the API takes it), an expiry day, metadata as ``key=value`` lines. A
problem is a ``ValidationFailed`` naming the form field, so the page shows it next to the field and
keeps what was typed. The name rule, the allow-list entries and the metadata limits are those of
``key_settings`` (``KeyOptions`` validates the result like the API's body).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from pydantic import Field, ValidationError

from agent_server.billing.money import decimal_text, exponent, to_minor
from agent_server.foundation.errors import AgentError, ValidationFailed
from agent_server.gateway.key_settings import MAX_AMOUNT, KeyOptions, key_name
from agent_server.gateway.tables import ApiKey, unix
from http_facade.pages.dashboard.route import DashboardForm

PERIODS = (("month", "per month"), ("day", "per day"), ("total", "in total"))
SETTINGS = ("models", "budget", "expires_at", "metadata", "log_bodies_days")
# The form field that shows a problem of each API field.
FIELD_OF = {"name": "name", "scopes": "scopes", "models": "models", "expires_at": "expires_on",
            "metadata": "metadata", "budget": "budget_money", "budget.max_tokens": "budget_tokens",
            "budget.period": "budget_period", "log_bodies_days": "log_bodies_days"}  # fmt: skip


class KeyForm(DashboardForm):
    """The fields as sent; ``read`` checks them. Bounds here only keep absurd input out."""

    name: str = Field(default="", max_length=1000)
    scopes: list[str] = Field(default_factory=list, max_length=10)
    models: list[str] = Field(default_factory=list, max_length=500)
    budget_period: str = Field(default="month", max_length=10)
    budget_money: str = Field(default="", max_length=40)
    budget_tokens: str = Field(default="", max_length=40)
    expires_on: str = Field(default="", max_length=40)
    metadata: str = Field(default="", max_length=10_000)
    log_bodies_days: str = Field(default="", max_length=10)


def field_of(err: AgentError) -> str | None:
    """The form field an error is about, if any."""
    param = err.param or ""
    return FIELD_OF.get(param) or FIELD_OF.get(param.split(".", 1)[0])


def values_of(record: ApiKey, currency: str) -> dict[str, Any]:
    """A stored key as the form shows it (the comparison ``changes`` makes reads this too)."""
    return {
        "name": record.name,
        "scopes": list(record.scopes),
        "models": list(record.models or []),
        "budget_period": record.budget_period or "month",
        "budget_money": decimal_text(record.budget_spend, currency) if record.budget_spend else "",
        "budget_tokens": str(record.budget_tokens) if record.budget_tokens else "",
        "expires_on": _day(record.expires_at),
        "metadata": "\n".join(f"{k}={_text(v)}" for k, v in (record.key_metadata or {}).items()),
        "log_bodies_days": str(record.log_bodies_days) if record.log_bodies_days else "",
    }


def new_values(scopes: list[str]) -> dict[str, Any]:
    """The create form before anything is typed."""
    return {**KeyForm(scopes=scopes).model_dump(exclude={"csrf_token"})}


def submitted(form: KeyForm) -> dict[str, Any]:
    return form.model_dump(exclude={"csrf_token"})


def read(form: KeyForm, currency: str, now: float, only: Collection[str] = SETTINGS) -> KeyOptions:
    """The settings ``only`` of the form as ``KeyOptions`` (on create: all of them)."""
    readers: dict[str, Callable[[], Any]] = {
        "models": lambda: list(dict.fromkeys(m.strip() for m in form.models if m.strip())) or None,
        "budget": lambda: _budget(form, currency),
        "expires_at": lambda: _expiry(form.expires_on, now),
        "metadata": lambda: _metadata(form.metadata),
        "log_bodies_days": lambda: _days(form.log_bodies_days),
    }
    return _validated({field: readers[field]() for field in only})


@dataclass(frozen=True, slots=True)
class Change:
    """What the key page's form changes: None (or an unset option) where the person left the field
    as the page showed it, so what the page cannot show exactly (a time of day, a number in the
    metadata) stays as it is."""

    name: str | None
    scopes: list[str] | None
    options: KeyOptions


def changes(form: KeyForm, record: ApiKey, currency: str, now: float) -> Change:
    shown, sent = values_of(record, currency), submitted(form)
    name = key_name(form.name) if form.name.strip() != shown["name"] else None
    scopes = form.scopes if set(form.scopes) != set(shown["scopes"]) else None
    edited = [field for field in SETTINGS if _shown(field, shown) != _shown(field, sent)]
    return Change(name, scopes, read(form, currency, now, edited))


def _shown(field: str, values: dict[str, Any]) -> Any:
    """A setting's form fields, normalised as the comparison needs them."""
    if field == "models":
        return sorted({m.strip() for m in values["models"] if m.strip()})
    if field == "budget":
        return tuple(values[f].strip() for f in ("budget_period", "budget_money", "budget_tokens"))
    if field == "expires_at":
        return values["expires_on"].strip()
    if field == "log_bodies_days":
        return values["log_bodies_days"].strip()
    return _lines(values["metadata"])


def _validated(fields: dict[str, Any]) -> KeyOptions:
    try:
        return KeyOptions.model_validate(fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        param = ".".join(str(part) for part in first["loc"])
        message = str(first["msg"]).removeprefix("Value error, ")
        raise ValidationFailed(f"{_label(param)}: {message}.", param=param) from None


def _label(param: str) -> str:
    head = param.split(".", 1)[0]
    labels = {"models": "Models", "budget": "Budget", "expires_at": "Expiry", "metadata": "Metadata",
              "log_bodies_days": "Keep bodies"}  # fmt: skip
    return labels.get(head, param)


def _budget(form: KeyForm, currency: str) -> dict[str, Any] | None:
    money, tokens = form.budget_money.strip(), form.budget_tokens.strip()
    if not money and not tokens:
        return None
    if form.budget_period not in {period for period, _ in PERIODS}:
        raise ValidationFailed("Budget: choose per month, per day or in total.", param="budget.period")
    return {
        "period": form.budget_period,
        "max_spend": _minor(money, currency) if money else None,
        "max_tokens": _tokens(tokens) if tokens else None,
    }


def _minor(text: str, currency: str) -> int:
    """``"5"``, ``"5.5"`` or ``"5,50"`` of the currency in minor units, exactly; more decimals than the
    currency has are refused, not rounded."""
    places = exponent(currency)
    smallest = decimal_text(1, currency) if places else "1"
    plain = text.replace(" ", "").replace("\u00a0", "")
    if "," in plain and "." not in plain:
        plain = plain.replace(",", ".")
    try:
        amount = Decimal(plain)
        if not amount.is_finite() or not re.fullmatch(r"\d+(\.\d*)?|\.\d+", plain):
            raise InvalidOperation
        minor = to_minor(amount, currency)
    except (InvalidOperation, ValueError):
        raise ValidationFailed(
            f"Budget: write an amount in {currency} such as 25 or 12.50, in steps of {smallest} {currency}.",
            param="budget.max_spend",
        ) from None
    if not 1 <= minor <= MAX_AMOUNT:
        raise ValidationFailed(
            f"Budget: at least {smallest} {currency} and at most {decimal_text(MAX_AMOUNT, currency)} {currency}.",
            param="budget.max_spend",
        )
    return minor


def _tokens(text: str) -> int:
    plain = re.sub(r"[\s_,]", "", text)
    if not plain.isdigit() or not 1 <= int(plain) <= MAX_AMOUNT:
        raise ValidationFailed("Budget: tokens are a whole number from 1 up.", param="budget.max_tokens")
    return int(plain)


def _expiry(text: str, now: float) -> datetime | None:
    """A day (``YYYY-MM-DD``, what a date field sends): the key stops at 00:00 UTC on it."""
    text = text.strip()
    if not text:
        return None
    try:
        moment = datetime.combine(date.fromisoformat(text), datetime.min.time(), UTC)
    except ValueError:
        raise ValidationFailed("Expiry: choose a day (YYYY-MM-DD).", param="expires_at") from None
    if moment.timestamp() <= now:
        raise ValidationFailed(
            "Expiry: choose a day after today; the key stops at 00:00 UTC on that day.", param="expires_at"
        )
    return moment


def _metadata(text: str) -> dict[str, str] | None:
    """``key=value`` lines (blank lines skipped); values are text."""
    pairs: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        key, equals, value = line.partition("=")
        if not equals or not key.strip():
            raise ValidationFailed(f"Metadata, line {number}: write key=value.", param="metadata")
        if key.strip() in pairs:
            raise ValidationFailed(f"Metadata: the key '{key.strip()}' appears twice.", param="metadata")
        pairs[key.strip()] = value.strip()
    return pairs or None


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _day(value: datetime | None) -> str:
    return "" if value is None else datetime.fromtimestamp(unix(value), UTC).date().isoformat()


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _days(text: str) -> int | str | None:
    """Empty: bodies are not kept; a whole number is checked by ``KeyOptions`` (1 to 90)."""
    plain = text.strip()
    if not plain:
        return None
    return int(plain) if plain.isdigit() else plain  # the model refuses what is not a number
