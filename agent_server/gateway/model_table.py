"""The one table of models the gateway knows: the content pack's catalogue (models.yaml) plus every
model declared in the upstream settings (``AGENTGATE_UPSTREAMS``), with its price in integer minor
units per million tokens and, for bring-your-own-key models, the provider whose key pays for it.

A model is priced in one place: models.yaml for catalogue models, the upstream settings for
declared ones; pricing one model twice with different figures stops the start. One deployment
charges in one currency, so spend can be summed and budgets compared without exchange rates.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from agent_server.foundation.settings_llm import DeclaredModel, UpstreamConfig
from agent_server.knowledge.pack import Model

# Creation time GET /v1/models shows (the catalogue has no per-model dates): 2026-01-01.
MODELS_CREATED = 1_767_225_600
PRICE_UNIT = "minor units per 1M tokens"
DEFAULT_CURRENCY = "EUR"
# Digits of the minor unit where it is not 2 (ISO 4217), to turn catalogue prices into minor units.
MINOR_DIGITS = {"JPY": 0, "KRW": 0, "ISK": 0, "CLP": 0, "VND": 0, "BHD": 3, "KWD": 3, "OMR": 3, "JOD": 3}


@dataclass(frozen=True, slots=True)
class ModelEntry:
    id: str
    owned_by: str
    input_price: int  # minor units per 1M prompt tokens
    output_price: int  # minor units per 1M completion tokens
    currency: str | None  # None: not priced (free)
    context_window: int | None = None
    capabilities: tuple[str, ...] = ("chat",)
    byok_provider: str | None = None  # called with the tenant's key for this provider
    byok_upstream: str | None = None  # the upstream (base URL) such a call goes to

    def as_object(self) -> dict[str, Any]:
        """The OpenAI model object, with what agents need to choose: context, capabilities, price."""
        body: dict[str, Any] = {
            "id": self.id,
            "object": "model",
            "created": MODELS_CREATED,
            "owned_by": self.owned_by,
            "context_window": self.context_window,
            "capabilities": list(self.capabilities),
        }
        if self.currency is not None:
            body["pricing"] = {
                "input": self.input_price,
                "output": self.output_price,
                "currency": self.currency,
                "unit": PRICE_UNIT,
            }
        if self.byok_provider is not None:
            body["byok_provider"] = self.byok_provider
        return body


def to_minor(price: float, currency: str, where: str) -> int:
    """A catalogue price (major units) in minor units; a fraction of a minor unit is refused."""
    minor = Decimal(str(price)).scaleb(MINOR_DIGITS.get(currency, 2))
    if minor != minor.to_integral_value():
        raise ValueError(f"{where}: {price} {currency} per MTok is not a whole number of minor units")
    return int(minor)


def format_money(minor: int, currency: str) -> str:
    """``500`` EUR as ``5.00 EUR``, for messages people read."""
    digits = MINOR_DIGITS.get(currency, 2)
    return f"{Decimal(minor).scaleb(-digits):.{digits}f} {currency}"


def _catalogue_entry(model: Model) -> ModelEntry:
    where = f"models.yaml, model {model.id}"
    prices = (
        to_minor(model.input_price_per_mtok, model.currency, where),
        to_minor(model.output_price_per_mtok, model.currency, where),
    )
    return ModelEntry(
        id=model.id,
        owned_by=model.vendor.lower(),
        input_price=prices[0],
        output_price=prices[1],
        currency=model.currency if any(prices) else None,
        context_window=model.context_window,
        capabilities=tuple(model.capabilities),
        byok_provider=model.provider if model.byok else None,
    )


def _declared_entry(model_id: str, upstream: UpstreamConfig, meta: DeclaredModel | None) -> ModelEntry:
    meta = meta or DeclaredModel()
    price = meta.price
    return ModelEntry(
        id=model_id,
        owned_by=meta.owned_by or upstream.provider_name,
        input_price=price.input if price else 0,
        output_price=price.output if price else 0,
        currency=(price.currency or "") if price else None,  # "" = the table's currency, set below
        context_window=meta.context_window,
        capabilities=meta.capabilities or ("chat",),
        byok_provider=upstream.provider_name if meta.byok else None,
        byok_upstream=upstream.name if meta.byok else None,
    )


def _merge(known: ModelEntry, declared: ModelEntry, meta: DeclaredModel, source: str) -> ModelEntry:
    """A model both catalogued (or declared before) and declared again: metadata the declaration
    gives wins, but a second, different price is a configuration error."""
    if meta.price is not None and known.currency is not None:
        same = (known.input_price, known.output_price) == (declared.input_price, declared.output_price)
        if not same or declared.currency not in ("", known.currency):
            raise ValueError(f"{source}: the model {known.id} is already priced; price it in one place")
    changes: dict[str, Any] = {}
    if meta.price is not None:
        changes.update(input_price=declared.input_price, output_price=declared.output_price)
        changes["currency"] = declared.currency
    for name in ("context_window", "capabilities", "owned_by"):
        if getattr(meta, name) is not None:
            changes[name] = getattr(declared, name)
    if meta.byok:
        changes.update(byok_provider=declared.byok_provider, byok_upstream=declared.byok_upstream)
    return replace(known, **changes)


class ModelTable:
    """Built once at start; every read on the request path is a dict lookup."""

    def __init__(self, catalogue: Iterable[Model], upstreams: Sequence[UpstreamConfig]) -> None:
        entries = {model.id: _catalogue_entry(model) for model in catalogue}
        for number, upstream in enumerate(upstreams):
            source = f"AGENTGATE_UPSTREAMS[{number}] ({upstream.name})"
            for model_id in upstream.models:
                meta = upstream.declared.get(model_id)
                declared = _declared_entry(model_id, upstream, meta)
                known = entries.get(model_id)
                if known is None:
                    entries[model_id] = declared
                elif meta is not None:
                    entries[model_id] = _merge(known, declared, meta, source)
        self.currency = _one_currency(entries.values())
        self.entries = {
            model_id: _resolved(entry, self.currency, upstreams) for model_id, entry in entries.items()
        }
        self.prices = {
            e.id: (e.input_price, e.output_price) for e in self.entries.values() if e.currency is not None
        }
        self.byok = {e.id: e.byok_provider for e in self.entries.values() if e.byok_provider}
        self.providers = frozenset(self.byok.values()) | {u.provider_name for u in upstreams}
        self._objects = {model_id: entry.as_object() for model_id, entry in self.entries.items()}

    def __contains__(self, model_id: object) -> bool:
        return model_id in self.entries

    def cost(self, model_id: str, prompt_tokens: int, completion_tokens: int) -> int:
        """Millionths of a minor unit: tokens times the price per million tokens, exact."""
        price = self.prices.get(model_id)
        if price is None:
            return 0
        return prompt_tokens * price[0] + completion_tokens * price[1]

    def object(self, model_id: str) -> dict[str, Any]:
        """The model object; a model only the routing table names gets the bare OpenAI fields."""
        known = self._objects.get(model_id)
        if known is not None:
            return known
        return {"id": model_id, "object": "model", "created": MODELS_CREATED, "owned_by": "system"}


def _one_currency(entries: Iterable[ModelEntry]) -> str:
    currencies = {e.currency for e in entries if e.currency}
    if len(currencies) > 1:
        raise ValueError(f"model prices use several currencies ({', '.join(sorted(currencies))}); use one")
    return currencies.pop() if currencies else DEFAULT_CURRENCY


def _resolved(entry: ModelEntry, currency: str, upstreams: Sequence[UpstreamConfig]) -> ModelEntry:
    """The table's currency filled in, and a BYOK model's upstream: the first of its provider that
    declares it, else the first of its provider (the public id then goes upstream unchanged)."""
    if entry.currency == "":
        entry = replace(entry, currency=currency)
    if entry.byok_provider is None or entry.byok_upstream is not None:
        return entry
    own = [u for u in upstreams if u.provider_name == entry.byok_provider]
    chosen = next((u for u in own if entry.id in u.models), own[0] if own else None)
    return replace(entry, byok_upstream=chosen.name if chosen else None)
