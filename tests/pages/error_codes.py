"""Every error code the service can emit, collected from the error tree and from the source.

Two sources, so a new code cannot hide: the ``default_code`` of every ``AgentError`` subclass the
app's modules define, and, read from the source without running it, every ``code="..."`` keyword,
every ``default_code = "..."``, the string default of a parameter named ``code`` and the string
passed in that parameter's position to a function of that name (``refused(msg, "saml_x")``).
Codes built at run time (``f"registration_{state}"``) cannot be read this way; the catalogue lists
them by hand.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from collections.abc import Iterator
from pathlib import Path

from agent_server.foundation.errors import AgentError

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("agent_server", "http_facade", "tools", "resources", "wellknown")
# The Agentic Commerce Protocol's routes and tools answer in the spec's error object with the spec's
# codes (docs/agentic-commerce.md), not in this service's envelope with a link to /docs/errors.
SPEC_VOCABULARY = (ROOT / "agent_server" / "commerce", ROOT / "http_facade" / "routes" / "acp_checkout.py")
CODE = re.compile(r"[a-z][a-z0-9_]*")


def _subclasses(cls: type[AgentError]) -> Iterator[type[AgentError]]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def tree_codes() -> set[str]:
    """``default_code`` of the base and every subclass, after importing every module of the packages."""
    for package in PACKAGES:
        module = importlib.import_module(package)
        for info in pkgutil.walk_packages(module.__path__, f"{package}."):
            if ".migrations" not in info.name:
                importlib.import_module(info.name)
    return {AgentError.default_code} | {cls.default_code for cls in _subclasses(AgentError)}


def _string(node: ast.AST | None) -> str | None:
    """A string constant shaped like a code (a sentence passed in a code's position is not one)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and CODE.fullmatch(node.value):
        return node.value
    return None


def _called(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else ""


def _code_parameters(tree: ast.Module) -> dict[str, int]:
    """Functions with a parameter named ``code``: name -> its position."""
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names = [a.arg for a in node.args.args]
            if "code" in names:
                found[node.name] = names.index("code")
    return found


def _pairs(targets: list[ast.expr], value: ast.expr | None) -> Iterator[tuple[ast.expr, ast.expr | None]]:
    """``a, b = 1, 2`` as (a, 1), (b, 2); a plain assignment as itself."""
    for target in targets:
        if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple):
            yield from zip(target.elts, value.elts, strict=False)
        else:
            yield target, value


def _call_codes(node: ast.Call, positions: dict[str, int]) -> Iterator[str | None]:
    for keyword in node.keywords:
        if keyword.arg == "code":
            yield _string(keyword.value)
    position = positions.get(_called(node.func), -1)
    if 0 <= position < len(node.args):
        yield _string(node.args[position])


def _module_codes(tree: ast.Module, positions: dict[str, int]) -> Iterator[str | None]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            yield from _call_codes(node, positions)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target, value in _pairs(targets, node.value):
                if isinstance(target, ast.Name) and target.id == "default_code":
                    yield _string(value)
        elif isinstance(node, ast.arguments):
            args = [*node.posonlyargs, *node.args]
            for arg, default in zip(args[len(args) - len(node.defaults) :], node.defaults, strict=True):
                if arg.arg == "code":
                    yield _string(default)


def source_codes() -> set[str]:
    trees = [
        ast.parse(path.read_text(encoding="utf-8"))
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if "migrations" not in path.parts and not any(path.is_relative_to(own) for own in SPEC_VOCABULARY)
    ]
    positions: dict[str, int] = {}
    for tree in trees:  # helpers are often imported by name from another module of the app
        positions.update(_code_parameters(tree))
    return {code for tree in trees for code in _module_codes(tree, positions) if code}


def emitted_codes() -> set[str]:
    return tree_codes() | source_codes()
