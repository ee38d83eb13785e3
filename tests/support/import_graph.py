"""The import graph of the project's packages, read with ``ast`` (tests/test_layers.py checks it)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGES = ("agent_server", "tools", "resources", "wellknown", "http_facade")


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
