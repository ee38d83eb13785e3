"""Imports run only downward, and no modules import each other in a circle.

The layers are declared here, once, lowest first; docs/architecture.md draws them. A module belongs to
the layer of the longest prefix that names it (``agent_server.storage.tables`` gathers every domain's
tables for Alembic, so it stands above the rest of ``agent_server.storage``). A module may import its
own layer and the layers below; an import inside a function that reaches up on purpose is declared
in ``LAZY_UPWARD`` with the reason. Circles count every import: at module level, under
``TYPE_CHECKING`` and inside functions.

``AGENTGATE_LAYERS_ROOT=/path/to/tree pytest tests/test_layers.py`` checks another tree.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(os.environ.get("AGENTGATE_LAYERS_ROOT") or Path(__file__).resolve().parent.parent)
PACKAGES = ("agent_server", "tools", "resources", "wellknown", "http_facade")

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("foundation", ("agent_server.foundation",)),
    ("storage, observability", ("agent_server.storage", "agent_server.observability")),
    ("llm", ("agent_server.llm",)),
    ("policies, knowledge", ("agent_server.policies", "agent_server.knowledge")),
    ("capabilities", ("agent_server.capabilities",)),
    ("runners", ("agent_server.jobs", "agent_server.mcp")),
    (
        "features",
        (
            "agent_server.accounts",
            "agent_server.admin",
            "agent_server.billing",
            "agent_server.gateway",
            "agent_server.internal_rpc",
            "agent_server.mail",
            "agent_server.reminders",
            "agent_server.site",
            "agent_server.webhooks",
        ),
    ),
    (
        "schema, start-up",
        ("agent_server.storage.tables", "agent_server.storage.migrations", "agent_server.deployment"),
    ),
    ("tools, resources", ("tools", "resources")),
    ("discovery", ("wellknown",)),
    ("http", ("http_facade",)),
)

# (importer, imported) -> why the importer reaches up inside a function
LAZY_UPWARD: dict[tuple[str, str], str] = {}


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    lazy: bool  # inside a function
    line: int


def modules(root: Path) -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (root / package).rglob("*.py"):
            rel = path.relative_to(root).with_suffix("")
            if any(part.startswith(".") or part == "__pycache__" for part in rel.parts):
                continue
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            found[".".join(parts)] = path
    return found


def imports_of(name: str, path: Path, known: dict[str, Path]) -> Iterator[Import]:
    """Every project module ``name`` imports, wherever in the file the import stands."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]

    def resolve(target: str) -> str | None:
        while target and target not in known:
            target = target.rpartition(".")[0]
        return target or None

    def visit(node: ast.AST, lazy: bool) -> Iterator[Import]:
        for child in ast.iter_child_nodes(node):
            inner = lazy or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            targets: list[str] = []
            if isinstance(child, ast.Import):
                targets = [alias.name for alias in child.names]
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    base = ".".join([*package[: len(package) - child.level + 1], *([base] if base else [])])
                targets = [f"{base}.{alias.name}" for alias in child.names]
            for target in targets:
                imported = resolve(target)
                if imported and imported != name:
                    yield Import(name, imported, lazy, child.lineno)
            yield from visit(child, inner)

    yield from visit(ast.parse(path.read_text(encoding="utf-8")), False)


def layer_of(module: str) -> int | None:
    best: tuple[int, int] | None = None  # (prefix length, layer)
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and (
                best is None or len(prefix) > best[0]
            ):
                best = (len(prefix), index)
    return None if best is None else best[1]


def graph(root: Path) -> tuple[dict[str, Path], list[Import]]:
    known = modules(root)
    return known, [edge for name, path in known.items() for edge in imports_of(name, path, known)]


def circles(edges: list[Import]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    succ: dict[str, set[str]] = {}
    for edge in edges:
        succ.setdefault(edge.importer, set()).add(edge.imported)
        succ.setdefault(edge.imported, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(succ):
        if start in index:
            continue
        work = [(start, iter(sorted(succ[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(succ[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


@pytest.fixture(scope="module")
def tree() -> tuple[dict[str, Path], list[Import]]:
    return graph(ROOT)


def test_every_module_stands_in_a_declared_layer(tree: tuple[dict[str, Path], list[Import]]) -> None:
    known, _ = tree
    unplaced = sorted(m for m in known if layer_of(m) is None and m not in PACKAGES)
    assert not unplaced, (
        f"modules in no layer (add their package to LAYERS in tests/test_layers.py): {unplaced}"
    )


def test_no_modules_import_each_other_in_a_circle(tree: tuple[dict[str, Path], list[Import]]) -> None:
    _, edges = tree
    found = circles(edges)
    assert not found, "import circles (move what both sides need to the lower one):\n" + "\n".join(
        " <-> ".join(group) for group in found
    )


def test_imports_run_only_downward(tree: tuple[dict[str, Path], list[Import]]) -> None:
    _, edges = tree
    upward = []
    for edge in edges:
        low, high = layer_of(edge.importer), layer_of(edge.imported)
        if low is None or high is None or high <= low:
            continue
        if edge.lazy and (edge.importer, edge.imported) in LAZY_UPWARD:
            continue
        upward.append(
            f"{edge.importer}:{edge.line} ({LAYERS[low][0]}) imports {edge.imported} ({LAYERS[high][0]})"
            + (" inside a function" if edge.lazy else "")
        )
    upward = sorted(set(upward))  # ``from m import a, b`` is one import
    assert not upward, f"{len(upward)} imports run up the layers:\n" + "\n".join(upward)


def test_the_checks_see_a_circle_and_an_upward_import() -> None:
    a, b = "agent_server.foundation.a", "agent_server.foundation.b"
    assert circles([Import(a, b, False, 1), Import(b, a, True, 1)]) == [[a, b]]
    assert layer_of("agent_server.storage.tables") > layer_of("agent_server.gateway.keys") > layer_of(a)
