"""No Python module of the project grows past 600 lines (the aim is 300): split it instead."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("agent_server", "http_facade", "tools", "resources", "wellknown", "tests", "bench")
LIMIT = 600


def project_modules() -> list[Path]:
    return sorted(
        path
        for package in PACKAGES
        if (ROOT / package).is_dir()
        for path in (ROOT / package).rglob("*.py")
        if not any(part.startswith(".") or part == "__pycache__" for part in path.relative_to(ROOT).parts)
    )


def test_the_project_has_modules_to_check() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in project_modules()}
    assert {
        "agent_server/capabilities/registry.py",
        "http_facade/app.py",
        "tests/test_module_size.py",
    } <= names


def test_no_module_is_over_600_lines() -> None:
    too_long = {}
    for path in project_modules():
        with path.open(encoding="utf-8") as source:
            lines = sum(1 for _ in source)
        if lines > LIMIT:
            too_long[path.relative_to(ROOT).as_posix()] = lines
    assert not too_long, f"modules over {LIMIT} lines (split them): {too_long}"
