"""The commands of ``agentgate`` and what they share: registration, ``--json`` and printing results."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from agent_server.foundation.settings import Settings

Command = Callable[[argparse.Namespace, Settings], int]
Configure = Callable[[argparse.ArgumentParser], None]
COMMANDS: dict[str, tuple[Command, Configure, bool]] = {}

# On every command that prints a result: on the command itself (json_flag=True) or, for commands with
# actions, on each action (add_action). serve and worker run until stopped and print logs instead.
JSON_OPTION = argparse.ArgumentParser(add_help=False)
JSON_OPTION.add_argument("--json", action="store_true", help="print the result (or the error) as JSON")


def command(name: str, configure: Configure = lambda parser: None, *, json_flag: bool = True):
    def register(fn: Command) -> Command:
        COMMANDS[name] = (fn, configure, json_flag)
        return fn

    return register


def actions(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:
    """The action subcommands of a command (``keys list``, ``keys revoke`` ...)."""
    return parser.add_subparsers(dest="action", required=True)


def add_action(subcommands: argparse._SubParsersAction, name: str, help: str) -> argparse.ArgumentParser:
    return subcommands.add_parser(name, help=help, description=help, parents=[JSON_OPTION])


def iso(value: datetime | None) -> str | None:
    """RFC 3339 in UTC; SQLite gives times back naive (they are UTC)."""
    if value is None:
        return None
    aware = value if value.tzinfo else value.replace(tzinfo=UTC)
    return aware.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def emit(args: argparse.Namespace, data: Any, text: str) -> None:
    """The result: ``data`` as JSON with ``--json``, else ``text`` for people."""
    print(
        json.dumps(data, indent=2, ensure_ascii=False) if getattr(args, "json", False) else text, flush=True
    )


def table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    """Aligned columns for people; ``-`` for an empty cell."""
    cells = [[_cell(row.get(column)) for column in columns] for row in rows]
    widths = [max([len(column), *(len(line[i]) for line in cells)]) for i, column in enumerate(columns)]
    lines = [[column.upper() for column in columns], *cells]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in lines
    )


def _cell(value: Any) -> str:
    if value is None or value == []:
        return "-"
    return ",".join(map(str, value)) if isinstance(value, list) else str(value)


def fail(args: argparse.Namespace, message: str, *, code: str = "error", status: int = 1) -> int:
    """One error line on stderr (a JSON object with ``--json``); returns the exit status."""
    if getattr(args, "json", False):
        print(json.dumps({"error": {"code": code, "message": message}}), file=sys.stderr)
    else:
        print(f"error: {message}", file=sys.stderr)
    return status


def run_action(args: argparse.Namespace, action: Callable[[], Awaitable[int]]) -> int:
    """Run one operator coroutine; a refused action prints its reason and exits 1."""
    import asyncio

    from agent_server.foundation.errors import AgentError

    try:
        return asyncio.run(action())
    except AgentError as exc:
        return fail(args, exc.message, code=exc.code)
