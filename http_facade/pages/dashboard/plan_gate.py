"""Features a plan lacks, said in plain words with the plan that unlocks them (``partials/plan_gate.html``).

A page asks ``plan_gate(request, plan, "webhooks")`` and gets ``None`` when the plan has the feature,
else a ``PlanGate`` to render: its controls are shown disabled under a note that names the feature
as people say it, the organisation's plan, the first plan of the catalogue (in its order, the
cheapest first) that includes it, and a link to change plans. ``FEATURE_NAMES`` is the one mapping
from plans.yaml's feature ids to words; pages never show the ids.
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import Request

from agent_server.gateway.plans import PlanInfo
from http_facade.pages.dashboard.session import APP_PATH

# plans.yaml feature id -> how a sentence names it ("The Starter plan does not include …").
FEATURE_NAMES = {
    "streaming": "streamed answers",
    "embeddings": "embeddings",
    "files": "file uploads",
    "webhooks": "webhooks",
    "sso": "single sign-on",
    "audit_log": "the audit log",
    "priority_support": "priority support",
    "byok": "your own provider keys",
}
BILLING_PAGE = f"{APP_PATH}/billing"


@dataclass(frozen=True, slots=True)
class PlanGate:
    feature: str
    name: str  # FEATURE_NAMES' words for it
    current: str  # the organisation's plan, by name
    unlock: str | None  # the first plan of the catalogue with the feature, by name (None: no plan has it)
    upgrade_url: str


def feature_name(feature: str) -> str:
    return FEATURE_NAMES.get(feature, feature.replace("_", " "))


def plan_gate(request: Request, plan: PlanInfo, feature: str) -> PlanGate | None:
    """None when ``plan`` includes ``feature``; else what the page says instead of offering it."""
    if feature in plan.features:
        return None
    catalogue = request.app.state.services.knowledge.pack.plans
    unlock = next((p for p in catalogue if feature in p.features), None)
    return PlanGate(feature, feature_name(feature), plan.name, unlock.name if unlock else None, BILLING_PAGE)
