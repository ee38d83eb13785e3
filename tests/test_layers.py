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

import os
from pathlib import Path

import pytest

from tests.support.import_graph import PACKAGES, Import, circles, graph

ROOT = Path(os.environ.get("AGENTGATE_LAYERS_ROOT") or Path(__file__).resolve().parent.parent)

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("foundation", ("agent_server.foundation",)),
    ("storage, observability", ("agent_server.storage", "agent_server.observability")),
    ("outbound", ("agent_server.llm", "agent_server.mail")),
    ("policies, knowledge", ("agent_server.policies", "agent_server.knowledge")),
    ("capabilities", ("agent_server.capabilities",)),
    ("runners", ("agent_server.jobs", "agent_server.mcp")),
    (
        "features",
        (
            "agent_server.accounts",
            "agent_server.admin",
            "agent_server.agent_auth",
            "agent_server.batches",
            "agent_server.billing",
            "agent_server.commerce",
            "agent_server.files",
            "agent_server.gateway",
            "agent_server.internal_rpc",
            "agent_server.oauth",
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


def layer_of(module: str) -> int | None:
    best: tuple[int, int] | None = None  # (prefix length, layer)
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and (
                best is None or len(prefix) > best[0]
            ):
                best = (len(prefix), index)
    return None if best is None else best[1]


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
