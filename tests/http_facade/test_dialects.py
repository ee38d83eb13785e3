"""``GET /api/tools.php``: each dialect validates with that vendor SDK's own types."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import httpx
import pytest
from anthropic.types import ToolParam
from google.genai import types as genai
from openai.types.chat import ChatCompletionFunctionTool, ChatCompletionFunctionToolParam
from pydantic import BaseModel, Field, TypeAdapter

from agent_server.capabilities.context import ToolContext
from agent_server.capabilities.projections import gemini_schema, tool_definitions
from agent_server.capabilities.registry import Registry, tool
from tests.test_surfaces import TOOL_NAMES

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def dialect(client: httpx.AsyncClient, name: str) -> list[dict[str, Any]]:
    response = await client.get("/api/tools.php", params={"dialect": name})
    assert response.status_code == 200, response.text
    assert response.headers["api-version"] == "2026-05-18"
    body = response.json()
    assert body["dialect"] == name
    return body["tools"]


async def test_openai_dialect_validates_with_the_openai_sdk(module_client: httpx.AsyncClient) -> None:
    tools = await dialect(module_client, "openai")
    params = TypeAdapter(list[ChatCompletionFunctionToolParam]).validate_python(tools)
    assert [p["function"]["name"] for p in params] == TOOL_NAMES
    for entry in tools:
        parsed = ChatCompletionFunctionTool.model_validate(entry)
        assert parsed.type == "function" and parsed.function.description
        assert parsed.function.parameters is not None and parsed.function.parameters["type"] == "object"


async def test_openai_is_the_default_dialect(module_client: httpx.AsyncClient) -> None:
    response = await module_client.get("/api/tools.php")
    assert response.json()["dialect"] == "openai"
    assert response.json()["tools"] == await dialect(module_client, "openai")


async def test_anthropic_dialect_validates_with_the_anthropic_sdk(module_client: httpx.AsyncClient) -> None:
    tools = await dialect(module_client, "anthropic")
    params = TypeAdapter(list[ToolParam]).validate_python(tools)
    assert [p["name"] for p in params] == TOOL_NAMES
    for entry in tools:
        assert entry["input_schema"]["type"] == "object"
        assert entry["description"]


async def test_gemini_dialect_validates_with_the_google_genai_sdk(module_client: httpx.AsyncClient) -> None:
    tools = await dialect(module_client, "gemini")
    parsed = [genai.Tool.model_validate(element) for element in tools]
    declarations = [d for t in parsed for d in (t.function_declarations or [])]
    assert [d.name for d in declarations] == TOOL_NAMES
    for declaration in declarations:
        assert declaration.description and declaration.parameters is not None
        assert declaration.parameters.type == genai.Type.OBJECT
    pricing = next(d for d in declarations if d.name == "get_pricing")
    category = pricing.parameters.properties["category"]  # type: ignore[union-attr]
    assert category.type == genai.Type.STRING and "hardware" in (category.enum or [])
    models = next(d for d in declarations if d.name == "list_models")
    capability = models.parameters.properties["capability"]  # type: ignore[union-attr]
    assert capability.nullable is True and capability.type == genai.Type.STRING


@pytest.mark.parametrize("name", ["", "OpenAI", "claude", "mistral", "openai,anthropic"])
async def test_unknown_dialect_is_a_validation_error_listing_the_valid_ones(
    module_client: httpx.AsyncClient, name: str
) -> None:
    response = await module_client.get("/api/tools.php", params={"dialect": name})
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/json; charset=utf-8"
    error = response.json()["error"]
    assert (error["type"], error["code"], error["param"]) == (
        "validation_error",
        "VALIDATION_ERROR",
        "dialect",
    )
    assert all(valid in error["message"] for valid in ("openai", "anthropic", "gemini"))
    assert error["documentation_url"]


# Gemini's schema subset on shapes the shipped tools do not (yet) use.


class Inner(BaseModel):
    """A nested model."""

    a: int
    tags: list[str] = []


class Node(BaseModel):
    label: str
    children: list[Node] = []


class Out(BaseModel):
    ok: bool


@tool(title="Tricky")
async def tricky(
    ctx: ToolContext,
    inner: Annotated[Inner, Field(description="described at the field")],
    maybe: Inner | None = None,
    many: list[Inner] = [],  # noqa: B006
    level: Literal[1, 2, 3] = 1,
    mode: Literal["fast", "slow"] | None = None,
    weights: dict[str, float] = {},  # noqa: B006
    either: int | str = 1,
    ratio: Annotated[float, Field(gt=0, lt=1)] = 0.5,
    rgb: tuple[int, int, int] = (0, 0, 0),
    pair: tuple[int, str] = (1, "a"),
    url: Annotated[str, Field(json_schema_extra={"format": "uri"})] = "https://example.com",
    tree: Node | None = None,
) -> Out:
    """Exercise every schema construct the projection must translate."""
    return Out(ok=True)


def tricky_declaration() -> dict[str, Any]:
    registry = Registry()
    registry.add_tool(tricky)
    (element,) = tool_definitions(registry, "gemini")
    genai.Tool.model_validate(element)  # the SDK accepts it
    return element["functionDeclarations"][0]["parameters"]


async def test_gemini_schema_inlines_references_and_keeps_field_descriptions() -> None:
    props = tricky_declaration()["properties"]
    assert props["inner"]["type"] == "OBJECT" and props["inner"]["description"] == "described at the field"
    assert props["inner"]["properties"]["tags"] == {
        "type": "ARRAY",
        "items": {"type": "STRING"},
        "default": [],
        "title": "Tags",
    }
    assert props["maybe"]["nullable"] is True and props["maybe"]["properties"]["a"]["type"] == "INTEGER"
    assert props["many"]["items"]["required"] == ["a"]


async def test_gemini_schema_keeps_string_enums_and_describes_others() -> None:
    props = tricky_declaration()["properties"]
    assert props["mode"] == {"type": "STRING", "enum": ["fast", "slow"], "nullable": True, "title": "Mode"}
    assert "enum" not in props["level"] and props["level"]["type"] == "INTEGER"
    assert "1, 2, 3" in props["level"]["description"]


async def test_gemini_schema_translates_maps_tuples_unions_and_formats() -> None:
    props = tricky_declaration()["properties"]
    assert props["weights"]["additionalProperties"] == {"type": "NUMBER"}
    assert props["rgb"]["items"] == {"type": "INTEGER"} and props["rgb"]["minItems"] == 3
    assert props["pair"]["items"] == {"anyOf": [{"type": "INTEGER"}, {"type": "STRING"}]}
    assert [v["type"] for v in props["either"]["anyOf"]] == ["INTEGER", "STRING"]
    assert "format" not in props["url"]  # Gemini refuses formats other than enum/date-time on strings
    assert "exclusiveMinimum" not in props["ratio"]


async def test_gemini_schema_ends_recursion() -> None:
    tree = tricky_declaration()["properties"]["tree"]
    assert tree["nullable"] is True and tree["properties"]["label"]["type"] == "STRING"
    assert tree["properties"]["children"]["items"]["type"] == "OBJECT"


async def test_gemini_schema_of_a_bare_const_and_null_type_list() -> None:
    assert gemini_schema({"const": "only"}) == {"enum": ["only"], "type": "STRING"}
    assert gemini_schema({"type": ["integer", "null"]}) == {"nullable": True, "type": "INTEGER"}
    assert gemini_schema({"type": "string", "format": "date-time"}) == {
        "type": "STRING",
        "format": "date-time",
    }
