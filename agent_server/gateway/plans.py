"""Plans and entitlements: seeded from the content pack, held in memory for the hot path.

A plan with a list price (``plans.yaml`` ``price_monthly``) is self-serve: registration offers it and
a checkout sells it. A plan without one (``price_monthly: null``) is negotiated: only a platform
administrator sets it, with a contract end (docs/billing.md, "Plans").
"""

from __future__ import annotations

from collections.abc import Container, Iterable
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from agent_server.foundation.errors import ModelNotFound, PlanLimitExceeded, ValidationFailed
from agent_server.foundation.timeutil import utc
from agent_server.gateway.tables import PlanRecord
from agent_server.knowledge.pack import Plan
from agent_server.llm.grants import ModelGrant
from agent_server.storage.db import Database

ALL_SCOPES = frozenset({"chat", "embeddings", "files", "models", "admin"})


@dataclass(frozen=True, slots=True)
class PlanInfo:
    id: str
    name: str
    requests_per_minute: int | None
    trial_days: int
    scopes: frozenset[str]
    grant: ModelGrant  # the models of plans.yaml: ids and patterns
    features: frozenset[str]
    max_keys: int | None = None  # active API keys per tenant; None: no limit
    self_serve: bool = True  # False: negotiated, set by a platform administrator with a contract end

    def limit_for(self, tenant_override: int | None, negotiated_default: int) -> int:
        """Per-key requests per window: the tenant's negotiated value, else the plan's, else the default."""
        if tenant_override is not None:
            return tenant_override
        return self.requests_per_minute if self.requests_per_minute is not None else negotiated_default


def self_serve(plan: Plan) -> bool:
    """Registration offers the plan: it has a list price. ``price_monthly: null`` is sold by negotiation;
    the plan of anonymous agents' keys (``anonymous_agents``) is issued by POST /agent/auth, not sold."""
    return plan.price_monthly is not None and not plan.anonymous_agents


def self_serve_plans(plans: Iterable[Plan]) -> list[Plan]:
    return [plan for plan in plans if self_serve(plan)]


def subscription_plans(plans: Iterable[Plan]) -> list[Plan]:
    """The plans an organisation may be on: every plan but the one of anonymous agents' keys."""
    return [plan for plan in plans if not plan.anonymous_agents]


def anonymous_plan(plans: Iterable[Plan]) -> Plan | None:
    """The plan of the keys POST /agent/auth issues to anonymous agents; None: not offered."""
    return next((plan for plan in plans if plan.anonymous_agents), None)


def check_scopes(plan: PlanInfo, scopes: Iterable[str]) -> list[str]:
    """The sorted scopes of a new key: known scopes (400 otherwise) that the plan allows (403 otherwise)."""
    wanted = set(scopes)
    if not wanted or not wanted <= ALL_SCOPES:
        raise ValidationFailed(
            f"scopes must be a non-empty list of: {', '.join(sorted(ALL_SCOPES))}.", param="scopes"
        )
    if not wanted <= plan.scopes:
        raise PlanLimitExceeded(
            f"The {plan.name} plan allows only these key scopes: {', '.join(sorted(plan.scopes))}.",
            param="scopes",
        )
    return sorted(wanted)


def _info(record: PlanRecord) -> PlanInfo:
    return PlanInfo(
        id=record.id,
        name=record.name,
        requests_per_minute=record.requests_per_minute,
        trial_days=record.trial_days,
        scopes=frozenset(record.scopes),
        grant=ModelGrant(record.models),
        features=frozenset(record.features),
        max_keys=record.max_keys,
        self_serve=record.self_serve,
    )


async def seed_plans(db: Database, plans: Iterable[Plan], now: float) -> None:
    """Upsert every plan of the pack; plans gone from the pack stay, as tenants may still use them.

    Processes starting together on a fresh database may both insert a plan; the loser of that race
    merges again and then finds the row, so the seed never stops a start.
    """
    records = [
        PlanRecord(
            id=plan.id,
            name=plan.name,
            requests_per_minute=plan.requests_per_minute,
            monthly_token_quota=plan.monthly_token_quota,
            trial_days=plan.trial_days,
            scopes=list(plan.scopes),
            models=list(plan.models),
            features=list(plan.features),
            max_keys=plan.max_keys,
            updated_at=utc(now),
            self_serve=self_serve(plan),
        )
        for plan in plans
    ]
    for last_try in (False, True):
        try:
            async with db.session() as session:
                for record in records:
                    await session.merge(record)
            return
        except IntegrityError:
            if last_try:
                raise


class PlanCatalog:
    """Plans by id; loaded at start, read without I/O on every request."""

    def __init__(self, known: Container[str] = frozenset()) -> None:
        self.plans: dict[str, PlanInfo] = {}
        self.known = known  # every model id the gateway knows, for check_model's message

    async def load(self, db: Database) -> None:
        async with db.session() as session:
            records = (await session.execute(select(PlanRecord))).scalars().all()
        self.plans = {record.id: _info(record) for record in records}

    def get(self, plan_id: str) -> PlanInfo:
        return self.plans[plan_id]

    def check_model(self, plan: PlanInfo, model: str) -> None:
        # Spec 7.1 and the issue: an unknown model and a model outside the plan are both
        # 400 model_not_found (param model); only the message tells them apart.
        if plan.grant.allows(model):
            return
        if model in self.known:
            raise ModelNotFound(
                f"The model '{model}' is not available on the {plan.name} plan. "
                "GET /v1/models lists the models you can use.",
                param="model",
            )
        raise ModelNotFound(
            f"The model '{model}' does not exist. GET /v1/models lists the models you can use.",
            param="model",
        )

    @staticmethod
    def check_feature(plan: PlanInfo, feature: str) -> None:
        if feature not in plan.features:
            raise PlanLimitExceeded(
                f"The {plan.name} plan does not include {feature}; upgrade the plan to use it.",
                param=feature,
            )
