"""The error catalogue behind ``/docs/errors``: every error type of the tree and every code.

Types come from the error tree itself (``agent_server/foundation/errors.py``); codes, with their meaning and
remedy, from ``error_codes.yaml`` beside this module. Each code is one anchor, so the
``documentation_url`` of every error (``/docs/errors#<code>``) lands on its explanation.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from agent_server.foundation import errors
from agent_server.foundation.errors import DOCS_PATH, AgentError

CATALOGUE_FILE = Path(__file__).with_name("error_codes.yaml")


@dataclass(frozen=True)
class ErrorType:
    name: str
    parent: str | None
    status: int
    type: str
    gateway_type: str
    default_code: str
    retryable: bool


@dataclass(frozen=True)
class ErrorCode:
    code: str
    error: type[AgentError]
    status: str
    meaning: str
    remedy: str

    def view(self, base_url: str) -> dict[str, Any]:
        return {
            "code": self.code,
            "site_code": self.code.upper(),
            "status": self.status,
            "type": self.error.type,
            "gateway_type": self.error.gateway_type,
            "retryable": self.error.retryable,
            "meaning": self.meaning,
            "remedy": self.remedy,
            "url": f"{base_url}{DOCS_PATH}#{self.code}",
        }


@dataclass(frozen=True)
class ErrorGroup:
    id: str
    title: str
    codes: tuple[ErrorCode, ...]


def error_types() -> tuple[ErrorType, ...]:
    """The classes of the error tree, parents before children, as the renderers see them."""
    classes = [
        cls
        for _, cls in inspect.getmembers(errors, inspect.isclass)
        if issubclass(cls, AgentError) and cls.__module__ == errors.__name__
    ]
    ordered = sorted(classes, key=lambda cls: (cls.http_status, len(cls.__mro__), cls.__name__))
    return tuple(
        ErrorType(
            name=cls.__name__,
            parent=cls.__base__.__name__ if cls is not AgentError else None,
            status=cls.http_status,
            type=cls.type,
            gateway_type=cls.gateway_type,
            default_code=cls.default_code,
            retryable=cls.retryable,
        )
        for cls in ordered
    )


def _error_class(name: str) -> type[AgentError]:
    cls = getattr(errors, name, None)
    if not (isinstance(cls, type) and issubclass(cls, AgentError)):
        raise ValueError(
            f"{CATALOGUE_FILE.name}: '{name}' is no error class of agent_server/foundation/errors.py"
        )
    return cls


@lru_cache(maxsize=1)
def error_groups() -> tuple[ErrorGroup, ...]:
    """The catalogue file, checked: known error classes, every code once."""
    raw = yaml.safe_load(CATALOGUE_FILE.read_text(encoding="utf-8"))
    seen: set[str] = set()
    groups = []
    for group in raw["groups"]:
        codes = []
        for entry in group["codes"]:
            if entry["code"] in seen:
                raise ValueError(f"{CATALOGUE_FILE.name}: code '{entry['code']}' is listed twice")
            seen.add(entry["code"])
            cls = _error_class(entry["error"])
            status = str(entry.get("status", cls.http_status))
            codes.append(ErrorCode(entry["code"], cls, status, entry["meaning"], entry["remedy"]))
        groups.append(ErrorGroup(group["id"], group["title"], tuple(codes)))
    return tuple(groups)


def documented_codes() -> frozenset[str]:
    return frozenset(code.code for group in error_groups() for code in group.codes)


def catalogue_document(base_url: str) -> dict[str, Any]:
    """``/docs/errors`` for programs: the same types and codes as the page."""
    return {
        "documentation_url": base_url + DOCS_PATH,
        "envelopes": {
            "site": "{error: {message, type, code (upper case), param?, retry_after?, documentation_url}}",
            "gateway": "{error: {message, type (gateway_type), code, param}} on /v1, /admin and /agent",
        },
        "types": [vars(t) for t in error_types()],
        "groups": [
            {"id": g.id, "title": g.title, "codes": [c.view(base_url) for c in g.codes]}
            for g in error_groups()
        ],
    }
