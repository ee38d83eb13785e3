"""Deterministic sample values for a JSON schema: the mock's tool-call arguments and JSON answers.

The value has every required property (of every object, nested), typed by the schema: ``enum``,
``const`` and ``default`` first, then strings (``format``-aware, ``sample <name>`` otherwise),
numbers within their bounds, booleans, arrays of ``minItems`` items. ``$ref`` to the schema's own
``$defs``/``definitions`` is followed; ``anyOf``/``oneOf``/``allOf`` take their first branch.
"""

from __future__ import annotations

from typing import Any

_FORMATS = {
    "date-time": "2026-01-01T00:00:00Z",
    "date": "2026-01-01",
    "time": "00:00:00Z",
    "email": "user@example.com",
    "uri": "https://example.com/",
    "url": "https://example.com/",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "hostname": "example.com",
}
_MAX_DEPTH = 8


def sample(schema: Any, name: str = "value", root: Any = None, depth: int = 0) -> Any:
    """A value valid against ``schema`` (as far as its required parts go)."""
    root = schema if root is None else root
    if not isinstance(schema, dict) or depth > _MAX_DEPTH:
        return None if depth > _MAX_DEPTH else f"sample {name}"
    schema = _resolve(schema, root)
    for key in ("const", "default"):
        if key in schema:
            return schema[key]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and branches:
            return sample(_first_branch(branches), name, root, depth + 1)
    kind = _kind(schema)
    if kind == "object":
        properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        required = [key for key in schema.get("required") or () if isinstance(key, str)]
        return {key: sample(properties.get(key, {}), key, root, depth + 1) for key in required}
    if kind == "array":
        count = schema.get("minItems") if type(schema.get("minItems")) is int else 0
        return [sample(schema.get("items", {}), name, root, depth + 1) for _ in range(count)]
    if kind in ("integer", "number"):
        return _number(schema, kind)
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return _FORMATS.get(str(schema.get("format")), f"sample {name}")


def _resolve(schema: dict[str, Any], root: Any) -> dict[str, Any]:
    ref = schema.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/") or not isinstance(root, dict):
        return schema
    target: Any = root
    for part in ref[2:].split("/"):
        target = target.get(part) if isinstance(target, dict) else None
    return target if isinstance(target, dict) else {}


def _first_branch(branches: list[Any]) -> Any:
    # A nullable field is written anyOf [X, null]: the non-null branch says more.
    for branch in branches:
        if not (isinstance(branch, dict) and branch.get("type") == "null"):
            return branch
    return branches[0]


def _kind(schema: dict[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if isinstance(kind, str):
        return kind
    if "properties" in schema:
        return "object"
    return "array" if "items" in schema else "string"


def _number(schema: dict[str, Any], kind: str) -> int | float:
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    high = schema.get("maximum", schema.get("exclusiveMaximum"))
    value: float = 1
    if isinstance(low, int | float) and not isinstance(low, bool):
        value = low + (1 if "exclusiveMinimum" in schema and "minimum" not in schema else 0)
    if isinstance(high, int | float) and not isinstance(high, bool) and value > high:
        value = high
    return int(value) if kind == "integer" else float(value)
