"""The ``agentgate`` command: serve, worker, migrate, settings and the administration commands of
http_facade/cli_admin.py (tenants, users, keys). ``agentgate --help`` lists them; every command but
serve and worker prints its result as JSON with ``--json``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from pydantic import ValidationError

from agent_server.foundation.settings import Settings
from agent_server.observability.logging_setup import configure_logging, logging_config
from agent_server.observability.metrics_share import prepare_metrics_dir
from http_facade import cli_admin  # noqa: F401  (registers tenants, users and keys)
from http_facade.cli_registry import COMMANDS, JSON_OPTION, command, emit, fail, table


def _serve_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--workers", type=int, default=1)


@command("serve", _serve_args, json_flag=False)
def serve(args: argparse.Namespace, settings: Settings) -> int:
    """Run the HTTP server (uvicorn) on create_app(settings)."""
    from http_facade.listen import ListenError, bind_listener, http_url, run_uvicorn, served_url

    if not _deployment_ok(settings, args.workers):
        return 2
    try:  # first: a busy port is one line, before a migration runs or anything is printed
        listener = bind_listener(args.host, args.port)
    except ListenError as exc:
        return fail(args, str(exc))
    port = listener.getsockname()[1]
    if not _migrate_in_child(settings):  # once here, so several workers do not race at start
        return 1
    base_url = settings.public_base_url
    if "public_base_url" not in settings.model_fields_set:  # unset: the address actually served
        base_url = served_url(args.host, port)
        os.environ["AGENTGATE_PUBLIC_BASE_URL"] = base_url  # the workers read their settings
    bound = http_url(args.host, port)
    suffix = "" if base_url == bound else f" (public base URL {base_url})"
    print(f"agentgate ({settings.mode}) serving on {bound}{suffix}", flush=True)  # after the bind
    os.environ["AGENTGATE_MIGRATE_ON_START"] = "false"  # done above; the workers read their settings
    if args.workers > 1:  # where the workers add up each other's metrics (docs/operations.md)
        os.environ["AGENTGATE_METRICS_DIR"] = str(prepare_metrics_dir(settings.metrics_dir))
    return run_uvicorn(
        listener,
        "http_facade.app:create_app",
        factory=True,
        host=args.host,
        port=port,
        workers=args.workers,
        log_level="warning",
        timeout_keep_alive=settings.http_keepalive_seconds,  # above a load balancer's idle timeout
        access_log=False,  # ours is the edge's (AGENTGATE_ACCESS_LOG), with the request id
        log_config=logging_config(settings),  # applied by uvicorn in every worker it starts
    )


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
    from agent_server.deployment.checks import check_deployment
    from agent_server.foundation.errors import DeploymentError

    try:
        check_deployment(settings, workers=workers)
    except DeploymentError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return False
    return True


@command("migrate")
def migrate(args: argparse.Namespace, settings: Settings) -> int:
    """Apply the database migrations and exit (creates the database)."""
    from agent_server.gateway.operator_db import database_location, schema_heads

    _upgrade(settings)
    where, heads = database_location(settings), sorted(schema_heads(settings))
    emit(args, {"database": where, "revisions": heads}, f"database migrated: {where}")
    return 0


@command("worker", json_flag=False)
def worker(args: argparse.Namespace, settings: Settings) -> int:
    """Run an arq job worker process on the shared Redis queue (needs AGENTGATE_REDIS_URL)."""
    import asyncio
    import signal

    from agent_server.capabilities.services import build_services, close_services
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


def _settings_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--markdown", action="store_true", help="the reference as Markdown (docs/settings.md)"
    )


@command("settings", _settings_args)
def settings_reference(args: argparse.Namespace, settings: Settings) -> int:
    """Print every setting with its type, default and meaning (--markdown: docs/settings.md)."""
    from agent_server.foundation.settings_doc import markdown, settings_reference

    if args.markdown:
        print(markdown(), end="")
        return 0
    docs = [doc.as_dict() for doc in settings_reference()]
    emit(args, docs, table(docs, ["variable", "type", "default"]))
    return 0


def _skip_unused_imports() -> None:
    """Keep modules the server never runs out of its memory."""
    # ``import httpx`` also imports its command-line client, and with it rich, pygments and click
    # (~6 MB per process), whenever they are installed (the dev extra has them). httpx falls back
    # to a stub when that import fails, which a None entry in sys.modules makes it do.
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]


def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("agentgate")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    """The whole command line (the deploy-files test checks their commands against it)."""
    parser = argparse.ArgumentParser(prog="agentgate", description="agentgate gateway and public API")
    parser.add_argument("--version", action="version", version=f"agentgate {package_version()}")
    commands = parser.add_subparsers(dest="command", required=True)
    for name, (fn, configure, json_flag) in COMMANDS.items():
        summary = (fn.__doc__ or "").strip().splitlines()[0]
        parents = [JSON_OPTION] if json_flag else []
        configure(commands.add_parser(name, help=summary, description=summary, parents=parents))
    return parser


def _invalid_setting(exc: ValidationError) -> str:
    error = exc.errors()[0]
    name = str(error["loc"][0]) if error["loc"] else "?"
    return f"invalid setting AGENTGATE_{name.upper()}: {error['msg']}"


def main(argv: Sequence[str] | None = None) -> int:
    _skip_unused_imports()
    args = build_parser().parse_args(argv)
    try:
        settings = Settings()
    except ValidationError as exc:
        return fail(args, _invalid_setting(exc), code="invalid_setting", status=2)
    configure_logging(settings)
    return COMMANDS[args.command][0](args, settings)


if __name__ == "__main__":
    sys.exit(main())
