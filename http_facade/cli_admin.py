"""``agentgate tenants|users|keys``: administration on the server's database, without a server.

Every action prints a line or a table for people, or JSON with ``--json``; a refused action prints
one error line (JSON with ``--json``) and exits 1. A full key is printed only when it is made
(``keys create``, ``keys rotate``): only its digest is stored.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, date, datetime
from typing import Any

from agent_server.accounts.roles import ADMIN, ROLES
from agent_server.foundation.settings import Settings
from agent_server.gateway.tables import ApiKey, Tenant, User
from http_facade.cli_registry import actions, add_action, command, emit, iso, run_action, table

KEY_ONCE = "This is the only time the key is shown; only its digest is stored."


def tenant_view(tenant: Tenant) -> dict[str, Any]:
    return {
        "id": tenant.id,
        "name": tenant.name,
        "plan": tenant.plan_id,
        "rate_limit_per_minute": tenant.rate_limit_per_minute,
        "trial_ends_at": iso(tenant.trial_ends_at),
        "contract_ends_at": iso(tenant.contract_ends_at),
        "created_at": iso(tenant.created_at),
    }


def user_view(user: User) -> dict[str, Any]:
    return {
        "id": user.id,
        "tenant_id": user.tenant_id,
        "email": user.email,
        "role": user.role,
        "permissions": list(user.permissions),
        "email_verified": user.email_verified_at is not None,
        "created_at": iso(user.created_at),
    }


def key_view(key: ApiKey) -> dict[str, Any]:
    return {
        "id": key.id,
        "tenant_id": key.tenant_id,
        "name": key.name,
        "scopes": list(key.scopes),
        "environment": key.environment,
        "redacted": f"{key.prefix}…{key.last4}",
        "status": "revoked" if key.revoked_at else "active",
        "created_at": iso(key.created_at),
        "revoked_at": iso(key.revoked_at),
        "replaced_by": key.replaced_by,
        "expires_at": iso(key.expires_at),
        "last_used_at": iso(key.last_used_at),
    }


# -- tenants -------------------------------------------------------------------------------------


def contract_end(text: str) -> datetime:
    """``--contract-end``: an RFC 3339 time with an offset, or a date (its start, UTC)."""
    try:
        if len(text) == 10:
            return datetime.combine(date.fromisoformat(text), datetime.min.time(), UTC)
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date or an RFC 3339 time: {text!r}") from None
    if moment.tzinfo is None:
        raise argparse.ArgumentTypeError(f"give the time with its offset (Z or +01:00): {text!r}")
    return moment


CONTRACT_HELP = "a negotiated plan's contract end (2027-01-31 or 2027-01-31T18:00:00Z); its live keys get 402 from then on"


def _tenants_args(parser: argparse.ArgumentParser) -> None:
    subcommands = actions(parser)
    create = add_action(subcommands, "create", "Create a tenant")
    create.add_argument("--name", required=True)
    create.add_argument("--plan", default="starter", help="starter, professional or enterprise")
    create.add_argument("--rate-limit", type=int, help="negotiated requests per minute per key")
    create.add_argument("--contract-end", type=contract_end, help=CONTRACT_HELP)
    add_action(subcommands, "list", "List the tenants")
    set_plan = add_action(subcommands, "set-plan", "Move a tenant to another plan")
    set_plan.add_argument("--tenant", required=True, help="tenant id or name")
    set_plan.add_argument("--plan", required=True)
    set_plan.add_argument(
        "--rate-limit", type=int, help="also set the negotiated requests per minute per key"
    )
    set_plan.add_argument(
        "--contract-end", type=contract_end, help=f"{CONTRACT_HELP}; needed to move onto a negotiated plan"
    )


@command("tenants", _tenants_args, json_flag=False)  # --json on each action
def tenants(args: argparse.Namespace, settings: Settings) -> int:
    """Manage tenants: create, list, set-plan."""
    from agent_server.gateway import provision

    async def create() -> int:
        tenant = await provision.create_tenant(
            settings, args.name, args.plan, args.rate_limit, args.contract_end
        )
        text = f"tenant {tenant.id} ({tenant.name}), plan {tenant.plan_id}, trial ends {tenant.trial_ends_at:%Y-%m-%d}"
        emit(args, tenant_view(tenant), text)
        return 0

    async def listed() -> int:
        views = [tenant_view(tenant) for tenant in await provision.list_tenants(settings)]
        emit(args, views, table(views, ["id", "name", "plan", "rate_limit_per_minute", "created_at"]))
        return 0

    async def set_plan() -> int:
        change = await provision.set_plan(
            settings, args.tenant, args.plan, args.rate_limit, args.contract_end
        )
        tenant = change.tenant
        text = f"tenant {tenant.id} ({tenant.name}): plan {change.previous_plan} -> {tenant.plan_id}"
        if tenant.contract_ends_at is not None:
            text += f", contract ends {iso(tenant.contract_ends_at)}"
        if change.paid_plan:
            text += (
                f"\nnote: its subscription pays for the {change.paid_plan} plan; the payment provider's "
                "next subscription event sets that plan again"
            )
        emit(
            args,
            {**tenant_view(tenant), "previous_plan": change.previous_plan, "paid_plan": change.paid_plan},
            text,
        )
        return 0

    return run_action(args, {"create": create, "list": listed, "set-plan": set_plan}[args.action])


# -- users ---------------------------------------------------------------------------------------


def _users_args(parser: argparse.ArgumentParser) -> None:
    subcommands = actions(parser)
    create = add_action(subcommands, "create", "Create a user")
    create.add_argument("--tenant", required=True, help="tenant id or name")
    create.add_argument("--email", required=True)
    secret = create.add_mutually_exclusive_group(required=True)
    secret.add_argument("--password-stdin", action="store_true", help="read the password from stdin")
    secret.add_argument("--password", help="the password (visible in the process list; prefer stdin)")
    role = create.add_mutually_exclusive_group()
    role.add_argument("--role", choices=ROLES, help="the role in the tenant (docs/accounts.md); default none")
    role.add_argument("--admin", action="store_true", help="the same as --role admin")
    listed = add_action(subcommands, "list", "List the users (of one tenant with --tenant)")
    listed.add_argument("--tenant", help="tenant id or name")


@command("users", _users_args, json_flag=False)  # --json on each action
def users(args: argparse.Namespace, settings: Settings) -> int:
    """Manage users: create, list."""
    from agent_server.gateway import provision

    async def create() -> int:
        password = sys.stdin.readline().rstrip("\r\n") if args.password_stdin else args.password
        role = ADMIN if args.admin else args.role
        user = await provision.create_user(settings, args.tenant, args.email, password, role=role)
        text = (
            f"user {user.id} ({user.email}) in tenant {user.tenant_id}, role: {user.role or '-'}, "
            f"permissions: {user.permissions or '-'}"
        )
        emit(args, user_view(user), text)
        return 0

    async def listed() -> int:
        views = [user_view(user) for user in await provision.list_users(settings, args.tenant)]
        emit(args, views, table(views, ["id", "tenant_id", "email", "role", "permissions", "created_at"]))
        return 0

    return run_action(args, {"create": create, "list": listed}[args.action])


# -- keys ----------------------------------------------------------------------------------------


def _keys_args(parser: argparse.ArgumentParser) -> None:
    subcommands = actions(parser)
    create = add_action(subcommands, "create", "Create an API key (printed once)")
    create.add_argument("--tenant", required=True, help="tenant id or name")
    create.add_argument(
        "--scopes", default="chat,models", help="comma-separated: chat,embeddings,files,models,admin"
    )
    create.add_argument("--name", default="cli")
    listed = add_action(subcommands, "list", "List API keys, revoked ones included (never the key itself)")
    listed.add_argument("--tenant", help="tenant id or name")
    revoke = add_action(subcommands, "revoke", "Revoke a key at once")
    revoke.add_argument("key_id", help="key_...")
    rotate = add_action(
        subcommands, "rotate", "Replace a key by a new one (printed once); the old is revoked"
    )
    rotate.add_argument("key_id", help="key_...")


@command("keys", _keys_args, json_flag=False)  # --json on each action
def api_keys(args: argparse.Namespace, settings: Settings) -> int:
    """Manage API keys: create, list, revoke, rotate."""
    from agent_server.gateway import provision

    async def create() -> int:
        scopes = [scope.strip() for scope in args.scopes.split(",") if scope.strip()]
        record, full = await provision.create_key(settings, args.tenant, args.name, scopes)
        text = f"key {record.id} ({record.name}), scopes {','.join(record.scopes)}, tenant {record.tenant_id}\n{full}"
        emit(args, {**key_view(record), "key": full}, text)
        print(KEY_ONCE, file=sys.stderr)
        return 0

    async def listed() -> int:
        views = [key_view(key) for key in await provision.list_keys(settings, args.tenant)]
        emit(
            args,
            views,
            table(
                views,
                ["id", "tenant_id", "name", "scopes", "redacted", "status", "created_at", "last_used_at"],
            ),
        )
        return 0

    async def revoke() -> int:
        record, changed = await provision.revoke_key(settings, args.key_id)
        state = "revoked" if changed else f"was already revoked at {iso(record.revoked_at)}"
        emit(args, key_view(record), f"key {record.id} ({record.name}) {state}")
        return 0

    async def rotate() -> int:
        old, new, full = await provision.rotate_key(settings, args.key_id)
        text = f"key {old.id} revoked; its replacement {new.id} ({new.name}), scopes {','.join(new.scopes)}\n{full}"
        emit(args, {"revoked": key_view(old), "created": {**key_view(new), "key": full}}, text)
        print(KEY_ONCE, file=sys.stderr)
        return 0

    return run_action(
        args, {"create": create, "list": listed, "revoke": revoke, "rotate": rotate}[args.action]
    )
