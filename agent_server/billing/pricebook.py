"""What billing sells, priced in integer minor units from the content pack (converted once per load).

- **Plans**: ``plans.yaml`` ``price_monthly`` (null: negotiated, sold by contract, not online).
- **Catalogue items**, bought once: fixed-fee consulting packages, training seats and hardware.
- **Workspace seats**: one more member seat in the tenant's workspace (its organisation) for one
  month, at the monthly price of the tenant's plan; bought once like an item (docs/billing.md).
- **Model prices** per million tokens (``models.yaml``), pushed to the provider by ``sync-models``.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent_server.billing.money import to_minor
from agent_server.billing.port import Price
from agent_server.foundation.errors import ValidationFailed
from agent_server.knowledge.pack import ContentPack
from agent_server.knowledge.search import Knowledge

WORKSPACE_SEAT = "workspace-seat"
MAX_QUANTITY = {"consulting": 1, "training": 50, "hardware": 10, "workspace": 100}


@dataclass(frozen=True)
class Item:
    kind: str  # consulting, training, hardware, workspace
    id: str
    name: str
    unit_minor: int
    currency: str

    @property
    def max_quantity(self) -> int:
        return MAX_QUANTITY[self.kind]

    def price(self) -> Price:
        return Price(f"item:{self.id}", self.name, self.unit_minor, self.currency, interval=None)


def plan_lookup_key(plan_id: str) -> str:
    return f"plan:{plan_id}:month"


class PriceBook:
    """One load of the content pack's prices."""

    def __init__(self, pack: ContentPack) -> None:
        self.plan_names = {plan.id: plan.name for plan in pack.plans}
        self.issued_plans = {plan.id for plan in pack.plans if plan.anonymous_agents}  # never sold
        self.plans = {
            plan.id: Price(
                plan_lookup_key(plan.id),
                f"{plan.name} plan",
                to_minor(plan.price_monthly, plan.currency),
                plan.currency,
                "month",
            )
            for plan in pack.plans
            if plan.price_monthly is not None
        }
        items = [
            Item("consulting", c.id, c.name, to_minor(c.price, c.currency), c.currency)
            for c in pack.consulting
            if c.fixed_fee
        ]
        items += [
            Item("training", t.id, t.name, to_minor(t.price, t.currency), t.currency) for t in pack.training
        ]
        items += [
            Item("hardware", h.id, h.name, to_minor(h.price, h.currency), h.currency) for h in pack.hardware
        ]
        self.items = {item.id: item for item in items}
        self.quoted = {c.id for c in pack.consulting if not c.fixed_fee}
        # VAT on top of these (net) prices, by destination country: the content pack's tax.yaml.
        self.tax = pack.tax
        self.models = [
            Price(
                f"model:{m.id}:{direction}_mtok", f"{m.name}, 1M {direction} tokens", amount, m.currency, None
            )
            for m in pack.models
            for direction, amount in (
                ("input", to_minor(m.input_price_per_mtok, m.currency)),
                ("output", to_minor(m.output_price_per_mtok, m.currency)),
            )
        ]

    def plan_price(self, plan_id: str) -> Price:
        if plan_id not in self.plan_names:
            known = ", ".join(sorted(self.plan_names))
            raise ValidationFailed(
                f"Unknown plan '{plan_id}'. Plans: {known}.", code="unknown_plan", param="plan_id"
            )
        if plan_id in self.issued_plans:
            raise ValidationFailed(
                f"The {self.plan_names[plan_id]} plan is issued to agents by POST /agent/auth, not sold; "
                "choose another plan.",
                code="plan_not_purchasable",
                param="plan_id",
            )
        price = self.plans.get(plan_id)
        if price is None:
            raise ValidationFailed(
                f"The {self.plan_names[plan_id]} plan is priced by contract and cannot be bought online; "
                "contact sales.",
                code="plan_not_purchasable",
                param="plan_id",
            )
        return price

    def workspace_seat(self, plan_id: str) -> Item:
        """A seat priced at the tenant's plan's monthly price; negotiated plans buy seats by contract."""
        try:
            plan = self.plan_price(plan_id)
        except ValidationFailed as refused:
            raise ValidationFailed(
                f"Workspace seats follow the plan's price: {refused.message}",
                code=refused.code,
                param="seats",
            ) from None
        name = f"Workspace seat, {self.plan_names[plan_id]} plan, one month"
        return Item("workspace", WORKSPACE_SEAT, name, plan.amount_minor, plan.currency)

    def item(self, item_id: str, plan_id: str, kinds: tuple[str, ...], param: str = "item_id") -> Item:
        """The catalogue item ``item_id`` of one of ``kinds``; a clear 400 otherwise."""
        if item_id == WORKSPACE_SEAT and "workspace" in kinds:
            return self.workspace_seat(plan_id)
        item = self.items.get(item_id)
        if item is not None and item.kind in kinds:
            return item
        if item_id in self.quoted:
            raise ValidationFailed(
                f"'{item_id}' is quoted individually after a discovery call and cannot be bought online.",
                code="not_purchasable",
                param=param,
            )
        sold = sorted(i.id for i in self.items.values() if i.kind in kinds)
        if "workspace" in kinds:
            sold.append(WORKSPACE_SEAT)
        raise ValidationFailed(
            f"Unknown item '{item_id}' here. Items: {', '.join(sold)}.", code="unknown_item", param=param
        )

    def sync_prices(self) -> list[Price]:
        """What ``sync-models`` pushes: every plan with a list price, then every model's token prices."""
        return [*self.plans.values(), *self.models]


class PriceBooks:
    """The price book of the current content pack, rebuilt only when the pack is reloaded."""

    def __init__(self, knowledge: Knowledge) -> None:
        self.knowledge = knowledge
        self._book: PriceBook | None = None
        self._revision = -1

    def current(self) -> PriceBook:
        if self._book is None or self._revision != self.knowledge.revision:
            self._book, self._revision = PriceBook(self.knowledge.pack), self.knowledge.revision
        return self._book
