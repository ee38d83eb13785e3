"""What a tenant admin may set on an API key besides name and scopes: a model allow-list, a budget,
an expiry date and free-form metadata (docs/models-and-keys.md). Every one is optional; a key
without them works exactly as keys always did.

These pydantic shapes are the request bodies' fields (so a bad value is a 400 naming the field) and
what the service and repository take; ``columns`` maps them onto ``api_keys``.
"""

from __future__ import annotations

import json
import unicodedata
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, Strict, model_validator
from pydantic_core import PydanticCustomError

from agent_server.foundation.errors import ValidationFailed
from agent_server.llm.grants import entry_problem

MAX_NAME = 200
# What a key gets when its creator names no scopes: calls, and the list of the models it may call
# (without ``models`` the SDKs' ``models.list()`` is a 403).
DEFAULT_SCOPES = ("chat", "models")
MAX_MODELS = 50
# Direction overrides would make a name shown in a table read as something else.
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
MAX_METADATA_KEYS = 16
MAX_METADATA_BYTES = 2048
MAX_AMOUNT = 10**12

Period = Literal["day", "month", "total"]
MetadataValue = str | int | float | bool | None


def name_problem(value: str) -> str | None:
    """Why ``value`` (already trimmed) cannot name a key; the one rule of the API, the page and the CLI."""
    if not value:
        return "must not be blank"
    if len(value) > MAX_NAME:
        return f"has at most {MAX_NAME} characters"
    if any(unicodedata.category(c) in ("Cc", "Zl", "Zp") or c in _BIDI for c in value):
        return "must not contain control characters or line breaks"
    return None


def key_name(value: str) -> str:
    """A key's name as stored: trimmed, checked; a bad one is a 400 naming ``name``."""
    name = value.strip()
    problem = name_problem(name)
    if problem is not None:
        raise ValidationFailed(f"The key's name {problem}.", param="name")
    return name


def _trimmed_name(value: object) -> object:
    if not isinstance(value, str):
        return value  # the str type reports it
    name = value.strip()
    problem = name_problem(name)
    if problem is not None:
        raise PydanticCustomError("key_name", problem)
    return name


def _grant_entry(entry: str) -> str:
    problem = entry_problem(entry)
    if problem is not None:
        raise ValueError(problem)
    return entry


def _small_metadata(value: dict[str, MetadataValue]) -> dict[str, MetadataValue]:
    if len(value) > MAX_METADATA_KEYS:
        raise ValueError(f"metadata holds at most {MAX_METADATA_KEYS} keys")
    if any(not 1 <= len(key) <= 64 for key in value):
        raise ValueError("metadata keys have 1 to 64 characters")
    if len(json.dumps(value, separators=(",", ":")).encode()) > MAX_METADATA_BYTES:
        raise ValueError(f"metadata is at most {MAX_METADATA_BYTES} bytes as JSON")
    return value


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)  # no offset: UTC


# Trimmed before the rule: a name of spaces is blank, one of 200 characters with spaces around fits.
KeyName = Annotated[
    str,
    BeforeValidator(_trimmed_name),
    Field(min_length=1, max_length=MAX_NAME, description="A label for people."),
]
ModelEntry = Annotated[str, AfterValidator(_grant_entry)]
Metadata = Annotated[dict[str, MetadataValue], AfterValidator(_small_metadata)]
Moment = Annotated[datetime, AfterValidator(_aware)]


class BudgetSpec(BaseModel):
    """Tokens and/or money a key may spend per period; the request that crosses it still completes,
    the next ones get 402 ``budget_exceeded`` until the period renews."""

    model_config = ConfigDict(extra="forbid")

    period: Period = Field(description="day and month are UTC calendar periods; total never renews.")
    max_tokens: int | None = Field(default=None, ge=1, le=MAX_AMOUNT, description="prompt + completion")
    max_spend: int | None = Field(
        default=None, ge=1, le=MAX_AMOUNT, description="minor units (cents) of the price currency"
    )

    @model_validator(mode="after")
    def _limits_something(self) -> BudgetSpec:
        if self.max_tokens is None and self.max_spend is None:
            raise ValueError("a budget sets max_tokens, max_spend or both")
        return self


class KeyOptions(BaseModel):
    """The optional settings of a key; on PATCH, a field that is sent replaces (null clears it)."""

    model_config = ConfigDict(extra="forbid")

    models: list[ModelEntry] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_MODELS,
        description="Model ids or patterns (gpt-4o*) this key may call, within the plan's; null: all of them.",
    )
    budget: BudgetSpec | None = None
    expires_at: Moment | None = Field(
        default=None, description="ISO 8601 or Unix seconds; from then on the key is refused (401)."
    )
    metadata: Metadata | None = Field(default=None, description="Free-form, for your own bookkeeping.")
    log_bodies_days: Annotated[int, Strict()] | None = Field(
        default=None,
        ge=1,
        le=90,
        description="Keep the request and response bodies of this key's requests in the request log "
        "for this many days (1-90); null: never store them.",
    )

    def columns(self, only: set[str] | None = None) -> dict[str, Any]:
        """``api_keys`` column values of the fields in ``only`` (all when None)."""
        wanted = set(type(self).model_fields) if only is None else only
        values: dict[str, Any] = {}
        if "models" in wanted:
            values["models"] = self.models
        if "budget" in wanted:
            budget = self.budget
            values["budget_period"] = budget.period if budget else None
            values["budget_tokens"] = budget.max_tokens if budget else None
            values["budget_spend"] = budget.max_spend if budget else None
        if "expires_at" in wanted:
            values["expires_at"] = self.expires_at
        if "metadata" in wanted:
            values["key_metadata"] = self.metadata
        if "log_bodies_days" in wanted:
            values["log_bodies_days"] = self.log_bodies_days
        return values
