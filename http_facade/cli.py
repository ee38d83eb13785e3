"""The ``agentgate`` command: serve, migrate (and, as layers land, administration commands)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Awaitable, Callable, Sequence

from agent_server.settings import Settings

Command = Callable[[argparse.Namespace, Settings], int]
COMMANDS: dict[str, tuple[Command, Callable[[argparse.ArgumentParser], None]]] = {}


def command(name: str, configure: Callable[[argparse.ArgumentParser], None] = lambda p: None):
    def register(fn: Command) -> Command:
        COMMANDS[name] = (fn, configure)
        return fn

    return register


def _serve_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--workers", type=int, default=1)


@command("serve", _serve_args)
def serve(args: argparse.Namespace, settings: Settings) -> int:
    """Run the HTTP server (uvicorn) on create_app(settings)."""
    import uvicorn

    if not _deployment_ok(settings, args.workers):
        return 2
    if not _migrate_in_child(settings):  # once here, so several workers do not race at start
        return 1
    print(f"agentgate ({settings.mode}) serving on http://{args.host}:{args.port}", flush=True)
    os.environ["AGENTGATE_MIGRATE_ON_START"] = "false"  # done above; the workers read their settings
    uvicorn.run(
        "http_facade.app:create_app",
        factory=True,
        host=args.host,
        port=args.port,
        workers=args.workers,
        log_level="warning",
        access_log=False,
    )
    return 0


def _upgrade(settings: Settings) -> None:
    from agent_server.storage.migrate import upgrade

    upgrade(settings)


def _migrate_in_child(settings: Settings) -> bool:
    """Apply the migrations in a forked child process, so alembic and mako (~11 MB) stay out of the
    long-running process (this one is the server itself with one worker). No thread runs yet here,
    so forking is safe; the child reports its own failure on stderr."""
    import multiprocessing

    child = multiprocessing.get_context("fork").Process(target=_upgrade, args=(settings,), name="migrate")
    child.start()
    child.join()
    if child.exitcode != 0:
        print(f"error: the database migration failed (exit code {child.exitcode})", file=sys.stderr)
    return child.exitcode == 0


def _deployment_ok(settings: Settings, workers: int = 1) -> bool:
    from agent_server.deployment import DeploymentError, check_deployment

    try:
        check_deployment(settings, workers=workers)
    except DeploymentError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return False
    return True


@command("migrate")
def migrate(args: argparse.Namespace, settings: Settings) -> int:
    """Apply the database migrations and exit."""
    _upgrade(settings)
    print(f"database migrated: {settings.sync_database_url.split('@')[-1]}")
    return 0


@command("worker")
def worker(args: argparse.Namespace, settings: Settings) -> int:
    """Run an arq job worker process on the shared Redis queue (needs AGENTGATE_REDIS_URL)."""
    import asyncio
    import signal

    from agent_server.services import build_services, close_services
    from agent_server.site.build import build_site
    from tools import build_registry

    if not settings.redis_url:
        print(
            "error: a separate worker needs AGENTGATE_REDIS_URL (the in-memory queue is per process)",
            file=sys.stderr,
        )
        return 2
    if not _deployment_ok(settings):
        return 2
    if not _migrate_in_child(settings):
        return 1

    async def run() -> None:
        services = build_services(settings)
        consumer = asyncio.create_task(build_site(services, build_registry(settings)).serve_jobs())
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):  # stop: running jobs go back to the queue
            loop.add_signal_handler(signum, consumer.cancel)
        try:
            await consumer
        except asyncio.CancelledError:
            pass
        finally:
            await close_services(services)

    print(f"agentgate job worker ({settings.mode}) consuming the shared queue", flush=True)
    asyncio.run(run())
    return 0


def _gateway_action(action: Callable[[], Awaitable[int]]) -> int:
    """Run one gateway provisioning coroutine; a refused action prints its reason and exits 1."""
    import asyncio

    from agent_server.errors import AgentError

    try:
        return asyncio.run(action())
    except AgentError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 1


def _tenants_args(parser: argparse.ArgumentParser) -> None:
    create = parser.add_subparsers(dest="action", required=True).add_parser("create", help="Create a tenant")
    create.add_argument("--name", required=True)
    create.add_argument("--plan", default="starter", help="starter, professional or enterprise")
    create.add_argument("--rate-limit", type=int, help="negotiated requests per minute per key")


@command("tenants", _tenants_args)
def tenants(args: argparse.Namespace, settings: Settings) -> int:
    """Manage tenants: tenants create --name N --plan P [--rate-limit N]."""
    from agent_server.gateway import provision

    async def create() -> int:
        tenant = await provision.create_tenant(settings, args.name, args.plan, args.rate_limit)
        print(
            f"tenant {tenant.id} ({tenant.name}), plan {tenant.plan_id}, trial ends {tenant.trial_ends_at:%Y-%m-%d}"
        )
        return 0

    return _gateway_action(create)


def _users_args(parser: argparse.ArgumentParser) -> None:
    create = parser.add_subparsers(dest="action", required=True).add_parser("create", help="Create a user")
    create.add_argument("--tenant", required=True, help="tenant id or name")
    create.add_argument("--email", required=True)
    secret = create.add_mutually_exclusive_group(required=True)
    secret.add_argument("--password-stdin", action="store_true", help="read the password from stdin")
    secret.add_argument("--password", help="the password (visible in the process list; prefer stdin)")
    create.add_argument("--admin", action="store_true", help="grant tenant:admin")


@command("users", _users_args)
def users(args: argparse.Namespace, settings: Settings) -> int:
    """Manage users: users create --tenant T --email E --password-stdin|--password P [--admin]."""
    from agent_server.gateway import provision

    password = sys.stdin.readline().rstrip("\r\n") if args.password_stdin else args.password

    async def create() -> int:
        user = await provision.create_user(settings, args.tenant, args.email, password, admin=args.admin)
        print(
            f"user {user.id} ({user.email}) in tenant {user.tenant_id}, permissions: {user.permissions or '-'}"
        )
        return 0

    return _gateway_action(create)


def _keys_args(parser: argparse.ArgumentParser) -> None:
    create = parser.add_subparsers(dest="action", required=True).add_parser(
        "create", help="Create an API key"
    )
    create.add_argument("--tenant", required=True, help="tenant id or name")
    create.add_argument(
        "--scopes", default="chat,models", help="comma-separated: chat,embeddings,files,models,admin"
    )
    create.add_argument("--name", default="cli")


@command("keys", _keys_args)
def api_keys(args: argparse.Namespace, settings: Settings) -> int:
    """Manage API keys: keys create --tenant T --scopes chat,models --name N (prints the key once)."""
    from agent_server.gateway import provision

    async def create() -> int:
        scopes = [scope.strip() for scope in args.scopes.split(",") if scope.strip()]
        record, full = await provision.create_key(settings, args.tenant, args.name, scopes)
        print(f"key {record.id} ({record.name}), scopes {','.join(record.scopes)}, tenant {record.tenant_id}")
        print(full)
        print("This is the only time the key is shown; only its digest is stored.", file=sys.stderr)
        return 0

    return _gateway_action(create)


def _skip_unused_imports() -> None:
    """Keep modules the server never runs out of its memory."""
    # ``import httpx`` also imports its command-line client, and with it rich, pygments and click
    # (~6 MB per process), whenever they are installed (the dev extra has them). httpx falls back
    # to a stub when that import fails, which a None entry in sys.modules makes it do.
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]


def main(argv: Sequence[str] | None = None) -> int:
    _skip_unused_imports()
    parser = argparse.ArgumentParser(prog="agentgate", description="agentgate gateway and public API")
    commands = parser.add_subparsers(dest="command", required=True)
    for name, (fn, configure) in COMMANDS.items():
        configure(commands.add_parser(name, help=(fn.__doc__ or "").strip().splitlines()[0]))
    args = parser.parse_args(argv)
    settings = Settings()
    logging.basicConfig(level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    return COMMANDS[args.command][0](args, settings)


if __name__ == "__main__":
    sys.exit(main())
