"""MCP prompts drawn from the content pack: each one puts the pack's own offers, prices and terms in front
of the model, so an edit of the YAML files changes what the prompt says without a code change."""

from __future__ import annotations

from typing import Any

from agent_server.capabilities.context import ToolContext
from agent_server.capabilities.registry import PromptArgument, PromptSpec, Registry
from agent_server.foundation.errors import ValidationFailed
from agent_server.knowledge.pack import ContentPack


def _pack(ctx: ToolContext) -> ContentPack:
    return ctx.services.knowledge.pack


def _user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": {"type": "text", "text": text}}]


def _price(value: float | None, currency: str, unit: str = "") -> str:
    if value is None:
        return "negotiated"
    return f"{value:,.2f} {currency}{' ' + unit if unit else ''} (excl. VAT)"


def _pick(items: list[Any], wanted: str | None, what: str, param: str) -> list[Any]:
    """Every item, or the one the caller named (an unknown id names the known ones)."""
    if not wanted:
        return items
    found = [item for item in items if item.id == wanted]
    if not found:
        known = ", ".join(item.id for item in items)
        raise ValidationFailed(f"Unknown {what} '{wanted}'. Known: {known}.", param=param)
    return found


async def plan_consulting_engagement(ctx: ToolContext, args: dict[str, str]) -> list[dict[str, Any]]:
    pack = _pack(ctx)
    packages = _pick(pack.consulting, args.get("package"), "consulting package", "package")
    offers = "\n\n".join(
        f"- {p.name} (id {p.id}): {_price(p.price, p.currency)}, {p.duration}, "
        f"{'fixed fee, can be bought at checkout' if p.fixed_fee else 'quoted after a discovery call'}.\n"
        f"  {p.summary}\n  Deliverables: {'; '.join(p.deliverables)}."
        for p in packages
    )
    call = pack.discovery_call
    text = (
        f"Plan a consulting engagement with {pack.company.name} for this goal: {args['goal']}\n\n"
        f"Consulting packages:\n{offers}\n\n"
        f"Before any package there is the {call.title.lower()} ({call.duration_minutes} minutes, "
        f"{'free' if not call.price else _price(call.price, call.currency)}, requested on the site's page /catalogue/discovery-call). "
        f"The client prepares: {'; '.join(call.what_to_prepare)}.\n\n"
        "Propose which package (or sequence of packages) fits the goal and why, a week-by-week plan with "
        "the deliverables, what the client has to provide, and the total price. Use only the packages, "
        "durations and prices above."
    )
    return _user(text)


async def choose_gateway_plan(ctx: ToolContext, args: dict[str, str]) -> list[dict[str, Any]]:
    pack = _pack(ctx)
    plans = _pick(pack.plans, args.get("plan"), "plan", "plan")
    rows = "\n".join(
        f"- {p.name} (id {p.id}): {_price(p.price_monthly, p.currency, 'per month')}; "
        f"{p.requests_per_minute or 'negotiated'} requests per minute per key; monthly token quota "
        f"{p.monthly_token_quota or 'negotiated'}; {p.trial_days}-day trial; features: "
        f"{', '.join(p.features) or 'none'}; models: {', '.join(p.models)}."
        for p in plans
    )
    text = (
        f"Recommend a {pack.company.name} gateway plan for these needs: {args['needs']}\n\n"
        f"Plans:\n{rows}\n\n"
        "Name the plan that fits, the limits that decide it, what it costs per month, and when the client "
        "would outgrow it. Use only the plans and figures above."
    )
    return _user(text)


async def recommend_training(ctx: ToolContext, args: dict[str, str]) -> list[dict[str, Any]]:
    pack = _pack(ctx)
    level, form = args.get("level"), args.get("format")
    trainings = [
        t for t in pack.training if (not level or t.level == level) and (not form or t.format == form)
    ]
    if not trainings:
        raise ValidationFailed(
            f"No training is offered at level '{level or 'any'}' in format '{form or 'any'}'.",
            param="level" if level else "format",
        )
    rows = "\n".join(
        f"- {t.name} (id {t.id}): {t.level}, {t.format}, {t.duration_hours} hours, "
        f"{_price(t.price, t.currency, 'per participant')}. Topics: {'; '.join(t.topics)}."
        for t in trainings
    )
    text = (
        f"Recommend trainings from {pack.company.name} for this team: {args['team']}\n\n"
        f"Trainings:\n{rows}\n\n"
        "Suggest an order to take them in, why each one fits the team, and the total cost for the team. "
        "Use only the trainings and prices above."
    )
    return _user(text)


PROMPTS = [
    PromptSpec(
        "plan_consulting_engagement",
        "Plan a consulting engagement",
        "Plan an engagement from the consulting packages on offer: fit, week-by-week plan and price.",
        (
            PromptArgument("goal", "What the engagement should achieve, in plain words."),
            PromptArgument(
                "package",
                "A consulting package id to plan around; omit to weigh them all.",
                required=False,
                choices=lambda ctx: [p.id for p in _pack(ctx).consulting],
            ),
        ),
        plan_consulting_engagement,
    ),
    PromptSpec(
        "choose_gateway_plan",
        "Choose a gateway plan",
        "Recommend a gateway plan for stated needs, from the plans, limits and prices on offer.",
        (
            PromptArgument("needs", "Expected traffic, models, features and budget."),
            PromptArgument(
                "plan",
                "A plan id to check against the needs; omit to compare all plans.",
                required=False,
                choices=lambda ctx: [p.id for p in _pack(ctx).plans],
            ),
        ),
        choose_gateway_plan,
    ),
    PromptSpec(
        "recommend_training",
        "Recommend trainings",
        "Recommend trainings for a team, from the trainings on offer, in an order, with the cost.",
        (
            PromptArgument("team", "Who will attend and what they already know."),
            PromptArgument(
                "level",
                "Only trainings at this level.",
                required=False,
                choices=lambda ctx: [t.level for t in _pack(ctx).training],
            ),
            PromptArgument(
                "format",
                "Only trainings in this format.",
                required=False,
                choices=lambda ctx: [t.format for t in _pack(ctx).training],
            ),
        ),
        recommend_training,
    ),
]


def register(registry: Registry) -> None:
    for spec in PROMPTS:
        registry.add_prompt(spec)
