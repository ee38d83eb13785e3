"""Pure functions from the registry to every outward shape: tool dialects and the capability index."""

from __future__ import annotations

from typing import Any, Literal

from agent_server.registry import Registry, ResourceSpec, ToolSpec

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


# JSON-Schema keys Gemini's OpenAPI-3.0 subset understands; anything else is dropped.
_GEMINI_KEYS = {
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "default",
    "example",
    "items",
    "minItems",
    "maxItems",
    "properties",
    "required",
    "propertyOrdering",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "anyOf",
    "type",
}


def gemini_schema(schema: dict[str, Any], defs: dict[str, Any] | None = None) -> dict[str, Any]:
    """Turn a pydantic JSON Schema into Gemini's schema: upper-case types, ``nullable``, no ``$ref``."""
    defs = schema.get("$defs", {}) if defs is None else defs
    if "$ref" in schema:
        return gemini_schema(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    schema = dict(schema)
    if "const" in schema:
        schema["enum"] = [schema.pop("const")]
    variants = schema.pop("anyOf", None)
    if variants is not None:
        concrete = [v for v in variants if v.get("type") != "null"]
        if len(concrete) < len(variants):
            schema["nullable"] = True
        if len(concrete) == 1:
            schema = {
                **gemini_schema(concrete[0], defs),
                **{k: v for k, v in schema.items() if k != "default"},
            }
        else:
            schema["anyOf"] = [gemini_schema(v, defs) for v in concrete]
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key not in _GEMINI_KEYS or (key == "default" and value is None):
            continue
        if key == "type":
            out[key] = value.upper()
        elif key == "properties":
            out[key] = {name: gemini_schema(sub, defs) for name, sub in value.items()}
        elif key == "items":
            out[key] = gemini_schema(value, defs)
        else:
            out[key] = value
    if "enum" in out and "type" not in out:
        out["type"] = "STRING"
    return out


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
