"""The ``agentgate`` command: serve, migrate (and, as layers land, administration commands)."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence

from agent_server.settings import Settings
from agent_server.storage.migrate import upgrade

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

    upgrade(settings)  # once here, so several workers do not race at start
    print(f"agentgate ({settings.mode}) serving on http://{args.host}:{args.port}", flush=True)
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


@command("migrate")
def migrate(args: argparse.Namespace, settings: Settings) -> int:
    """Apply the database migrations and exit."""
    upgrade(settings)
    print(f"database migrated: {settings.sync_database_url.split('@')[-1]}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
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
