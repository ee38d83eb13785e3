"""Plans and entitlements: seeded from the content pack, held in memory for the hot path."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from agent_server.content import Model, Plan
from agent_server.errors import ModelNotFound, PlanLimitExceeded, ValidationFailed
from agent_server.gateway.tables import PlanRecord
from agent_server.storage.db import Database
from agent_server.timeutil import utc

ALL_SCOPES = frozenset({"chat", "embeddings", "files", "models", "admin"})
# Creation time shown by GET /v1/models (the catalogue has no per-model dates): 2026-01-01.
MODELS_CREATED = 1_767_225_600


@dataclass(frozen=True, slots=True)
class PlanInfo:
    id: str
    name: str
    requests_per_minute: int | None
    trial_days: int
    scopes: frozenset[str]
    models: tuple[str, ...]
    model_set: frozenset[str]
    features: frozenset[str]

    def limit_for(self, tenant_override: int | None, negotiated_default: int) -> int:
        """Per-key requests per window: the tenant's negotiated value, else the plan's, else the default."""
        if tenant_override is not None:
            return tenant_override
        return self.requests_per_minute if self.requests_per_minute is not None else negotiated_default


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
        models=tuple(record.models),
        model_set=frozenset(record.models),
        features=frozenset(record.features),
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
            updated_at=utc(now),
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
    """Plans by id and the model catalogue; loaded at start, read without I/O on every request."""

    def __init__(self) -> None:
        self.plans: dict[str, PlanInfo] = {}
        self.models: dict[str, Model] = {}

    async def load(self, db: Database, models: Iterable[Model]) -> None:
        async with db.session() as session:
            records = (await session.execute(select(PlanRecord))).scalars().all()
        self.plans = {record.id: _info(record) for record in records}
        self.models = {model.id: model for model in models}

    def get(self, plan_id: str) -> PlanInfo:
        return self.plans[plan_id]

    def check_model(self, plan: PlanInfo, model: str) -> None:
        # Spec 7.1 and the issue: an unknown model and a model outside the plan are both
        # 400 model_not_found (param model); only the message tells them apart.
        if model in plan.model_set:
            return
        if model in self.models:
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

    def model_list(self, plan: PlanInfo) -> list[dict[str, object]]:
        """The OpenAI model objects of the plan's models, in the plan's order."""
        return [self.model_object(model_id) for model_id in plan.models]

    def model_object(self, model_id: str) -> dict[str, object]:
        model = self.models.get(model_id)
        owner = model.vendor.lower() if model is not None else "agentgate"
        return {"id": model_id, "object": "model", "created": MODELS_CREATED, "owned_by": owner}
