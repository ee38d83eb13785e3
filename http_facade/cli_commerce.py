"""``agentgate agent-platforms``: the agent platforms that may buy over ACP (docs/agentic-commerce.md),
on the server's database without a server. The credential and signing secret are printed once, when
the platform is made; only the credential's digest is stored."""

from __future__ import annotations

import argparse

from agent_server.foundation.settings import Settings
from http_facade.cli_registry import actions, add_action, command, emit, run_action, table


def _args(parser: argparse.ArgumentParser) -> None:
    subcommands = actions(parser)
    create = add_action(subcommands, "create", "Add an agent platform (credential printed once)")
    create.add_argument("--name", required=True)
    create.add_argument("--webhook-url", help="where order events are sent (https)")
    add_action(subcommands, "list", "List the agent platforms, revoked ones included")
    webhook = add_action(subcommands, "webhook", "Change where a platform's order events go")
    webhook.add_argument("platform", help="plat_... or the name")
    webhook.add_argument("--url", help="the new address (https); without it: no order events")
    revoke = add_action(subcommands, "revoke", "Revoke a platform's credential at once")
    revoke.add_argument("platform", help="plat_... or the name")


@command("agent-platforms", _args, json_flag=False)  # --json on each action
def agent_platforms(args: argparse.Namespace, settings: Settings) -> int:
    """Manage the agent platforms of agentic commerce: create, list, webhook, revoke."""
    from agent_server.commerce.platforms import CREDENTIAL_ONCE, Platforms, platform_view
    from agent_server.foundation.secret_box import SecretBox
    from agent_server.gateway.operator_db import operator_database
    from agent_server.webhooks.url_guard import UrlGuard

    async def with_platforms(action):  # type: ignore[no-untyped-def]
        async with operator_database(settings) as op:
            platforms = Platforms(
                op.db, op.clock, SecretBox.from_settings(settings), UrlGuard.for_mode(settings.sandbox)
            )
            return await action(platforms, op)

    async def create() -> int:
        async def run(platforms: Platforms, op) -> int:  # type: ignore[no-untyped-def]
            made = await platforms.create(args.name, args.webhook_url)
            await op.record(None, "platform.agent_platform.create", made.platform.id)
            view = {
                **platform_view(made.platform),
                "credential": made.credential,
                "signing_secret": made.signing_secret,
            }
            text = (
                f"agent platform {made.platform.id} ({made.platform.name})\n"
                f"credential:     {made.credential}\nsigning secret: {made.signing_secret}\n{CREDENTIAL_ONCE}"
            )
            emit(args, view, text)
            return 0

        return await with_platforms(run)

    async def listed() -> int:
        async def run(platforms: Platforms, op) -> int:  # type: ignore[no-untyped-def]
            views = [platform_view(p) for p in await platforms.list()]
            emit(args, views, table(views, ["id", "name", "status", "webhook_url", "created_at"]))
            return 0

        return await with_platforms(run)

    async def webhook() -> int:
        async def run(platforms: Platforms, op) -> int:  # type: ignore[no-untyped-def]
            platform = await platforms.set_webhook_url(args.platform, args.url)
            await op.record(None, "platform.agent_platform.update", platform.id)
            where = platform.webhook_url or "nowhere"
            emit(args, platform_view(platform), f"agent platform {platform.id}: order events to {where}")
            return 0

        return await with_platforms(run)

    async def revoke() -> int:
        async def run(platforms: Platforms, op) -> int:  # type: ignore[no-untyped-def]
            platform = await platforms.revoke(args.platform)
            await op.record(None, "platform.agent_platform.revoke", platform.id)
            emit(args, platform_view(platform), f"agent platform {platform.id} ({platform.name}) revoked")
            return 0

        return await with_platforms(run)

    return run_action(
        args, {"create": create, "list": listed, "webhook": webhook, "revoke": revoke}[args.action]
    )
