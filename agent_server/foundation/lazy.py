"""``lazy_module(name)``: a stand-in that imports a heavy library at its first attribute access.

Most processes never sign a passkey, speak SAML or send mail; importing those libraries at start
costs every worker megabytes of memory (docs/performance.md, "Memory"). Modules keep their
``library.name`` calls unchanged and pay for the import only when one runs.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class LazyModule:
    """Imports ``name`` (or its submodule) on first attribute access; until then ``sys.modules`` has neither."""

    __slots__ = ("_module", "_name")

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attribute: str) -> Any:
        module = self._module
        if module is None:
            module = self._module = importlib.import_module(self._name)
        try:
            return getattr(module, attribute)
        except AttributeError:
            pass
        # A submodule its package does not import itself (``dns.resolver``): import it now.
        submodule = f"{self._name}.{attribute}"
        try:
            return importlib.import_module(submodule)
        except ModuleNotFoundError as exc:
            if exc.name != submodule:
                raise  # the submodule exists and one of its own imports failed
            raise AttributeError(f"module {self._name!r} has no attribute {attribute!r}") from None

    def __repr__(self) -> str:
        state = "loaded" if self._module is not None else "not loaded"
        return f"<lazy module {self._name!r} ({state})>"


def lazy_module(name: str) -> Any:
    """A module stand-in; typed ``Any`` so call sites read as plain module attribute access."""
    return LazyModule(name)
