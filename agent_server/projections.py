"""Pure functions from the registry to every outward shape: tool dialects and the capability index."""

from __future__ import annotations

import json
from typing import Any, Literal

from agent_server.capabilities.registry import Registry, ResourceSpec, ToolSpec

Dialect = Literal["openai", "anthropic", "gemini"]
DIALECTS: tuple[Dialect, ...] = ("openai", "anthropic", "gemini")


def annotations(spec: ToolSpec) -> dict[str, Any]:
    """MCP tool annotations (hints for clients; untrusted by definition)."""
    return {
        "title": spec.title,
        "readOnlyHint": spec.meta.read_only,
        "destructiveHint": not spec.meta.read_only,
        "idempotentHint": spec.meta.idempotent,
        "openWorldHint": spec.meta.open_world,
    }


def openai_tool(spec: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": spec.name, "description": spec.description, "parameters": spec.input_schema},
    }


def anthropic_tool(spec: ToolSpec) -> dict[str, Any]:
    return {"name": spec.name, "description": spec.description, "input_schema": spec.input_schema}


def gemini_declaration(spec: ToolSpec) -> dict[str, Any]:
    return {
        "name": spec.name,
        "description": spec.description,
        "parameters": gemini_schema(spec.input_schema),
    }


def tool_definitions(registry: Registry, dialect: Dialect) -> list[dict[str, Any]]:
    """The exact ``tools`` array each vendor's request takes."""
    if dialect == "openai":
        return [openai_tool(t) for t in registry.tools]
    if dialect == "anthropic":
        return [anthropic_tool(t) for t in registry.tools]
    return [{"functionDeclarations": [gemini_declaration(t) for t in registry.tools]}]


# JSON-Schema keys Gemini's OpenAPI-3.0 subset understands and that pass through as they are.
_GEMINI_KEYS = {
    "title",
    "description",
    "nullable",
    "default",
    "example",
    "minItems",
    "maxItems",
    "required",
    "propertyOrdering",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
}
# Gemini accepts only these formats per type and refuses a request with any other.
_GEMINI_FORMATS = {
    "STRING": {"enum", "date-time"},
    "INTEGER": {"int32", "int64"},
    "NUMBER": {"float", "double"},
}
_GEMINI_TYPES = {"string", "number", "integer", "boolean", "array", "object", "null"}


def gemini_schema(
    schema: dict[str, Any], defs: dict[str, Any] | None = None, _seen: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """Turn a pydantic JSON Schema into Gemini's schema (``google.genai.types.Schema``).

    Upper-case types, ``nullable`` instead of a null variant, ``$ref`` inlined (a recursive one
    becomes a plain object), string-only enums, only the formats Gemini takes, ``prefixItems``
    folded into ``items``; keys Gemini does not know are dropped.
    """
    defs = schema.get("$defs", {}) if defs is None else defs
    schema = dict(schema)
    ref = schema.pop("$ref", None)
    if ref is None and len(schema.get("allOf", ())) == 1:  # older pydantic: allOf: [{$ref}] + siblings
        ref = schema.pop("allOf")[0].get("$ref")
    if ref is not None:
        name = ref.rsplit("/", 1)[-1]
        if name in _seen or name not in defs:
            return {"type": "OBJECT", **{k: v for k, v in schema.items() if k in ("title", "description")}}
        # siblings of the reference (a field's description, default) win over the referenced model's
        return gemini_schema({**defs[name], **schema}, defs, _seen | {name})
    out: dict[str, Any] = {}
    kind = schema.pop("type", None)
    if isinstance(kind, list):  # ["string", "null"]
        if "null" in kind:
            out["nullable"] = True
        kind = next((k for k in kind if k != "null"), None)
    if "const" in schema:
        schema["enum"] = [schema.pop("const")]
    variants = schema.pop("anyOf", None) or schema.pop("oneOf", None)
    if variants is not None:
        concrete = [v for v in variants if v.get("type") != "null"]
        if len(concrete) < len(variants):
            out["nullable"] = True
        if len(concrete) == 1:
            # the outer schema's own keys (title, description, default) win over the variant's
            rest = gemini_schema({k: v for k, v in schema.items() if k != "$defs"}, defs, _seen)
            return {**gemini_schema(concrete[0], defs, _seen), **rest, **out}
        if concrete:
            out["anyOf"] = [gemini_schema(v, defs, _seen) for v in concrete]
    if isinstance(kind, str) and kind in _GEMINI_TYPES:
        out["type"] = kind.upper()
    for key, value in schema.items():
        if key == "properties":
            out[key] = {name: gemini_schema(sub, defs, _seen) for name, sub in value.items()}
        elif key == "items" and isinstance(value, dict):
            out[key] = gemini_schema(value, defs, _seen)
        elif key == "prefixItems" and "items" not in schema and value:
            shapes = [gemini_schema(v, defs, _seen) for v in value]
            out["items"] = shapes[0] if all(s == shapes[0] for s in shapes) else {"anyOf": shapes}
        elif key == "additionalProperties" and isinstance(value, dict):
            out[key] = gemini_schema(value, defs, _seen)
        elif key == "examples" and isinstance(value, list) and value:
            out.setdefault("example", value[0])
        elif key == "format":
            if value in _GEMINI_FORMATS.get(out.get("type", ""), ()):
                out[key] = value
        elif key in _GEMINI_KEYS and not (key == "default" and value is None):
            out[key] = value
    if "enum" in schema:  # after the loop: it may extend the description
        _gemini_enum(schema["enum"], out)
    return out


def _gemini_enum(values: list[Any], out: dict[str, Any]) -> None:
    """Gemini takes string enums only; other enums are described in words instead."""
    if None in values:
        out["nullable"] = True
    values = [v for v in values if v is not None]
    if all(isinstance(v, str) for v in values):
        out["enum"] = values
        out.setdefault("type", "STRING")
        return
    allowed = "One of: " + ", ".join(json.dumps(v) for v in values) + "."
    out["description"] = f"{out['description']} {allowed}" if out.get("description") else allowed


def capability_entry(spec: ToolSpec) -> dict[str, Any]:
    return {
        "kind": "tool",
        "name": spec.name,
        "title": spec.title,
        "description": spec.description,
        "scope": spec.meta.scope,
        "annotations": annotations(spec),
        "input_schema": spec.input_schema,
        "output_schema": spec.output_schema,
        "call": {"mcp": "tools/call", "http": {"method": "POST", "path": "/api/tools/call"}},
    }


def resource_entry(spec: ResourceSpec) -> dict[str, Any]:
    return {
        "kind": "resource",
        "name": spec.name,
        "title": spec.title,
        "description": spec.description,
        "uri": spec.uri,
        "mime_type": spec.mime_type,
        "read": {"mcp": "resources/read"},
    }


def capability_index(registry: Registry) -> list[dict[str, Any]]:
    return [capability_entry(t) for t in registry.tools] + [resource_entry(r) for r in registry.resources]
