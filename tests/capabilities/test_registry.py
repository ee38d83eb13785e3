"""The capability registry: what it accepts at registration and how ``invoke`` fails."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated, Any, cast

import anyio
import httpx
import pytest
from pydantic import BaseModel, Field

from agent_server.capabilities.context import Principal, ToolContext
from agent_server.capabilities.registry import Registry, tool
from agent_server.foundation.errors import (
    AgentError,
    NotFound,
    PermissionDenied,
    TimedOut,
    ValidationFailed,
    site_envelope,
)
from agent_server.foundation.settings import Settings
from agent_server.observability.instruments import INSTRUMENTS
from tests.conftest import BASE_URL, running

SECRET = "db-password=hunter2"  # text of an internal exception that must never reach a caller


class Line(BaseModel):
    sku: str
    qty: int = Field(ge=1)


class Address(BaseModel):
    city: str
    zip: Annotated[str, Field(pattern=r"^\d{5}$")]


class Echo(BaseModel):
    value: str


@tool(title="Echo")
async def echo(ctx: ToolContext, text: Annotated[str, Field(description="What to echo.")]) -> Echo:
    """Echo the text back."""
    return Echo(value=text)


@tool(title="Order")
async def order(ctx: ToolContext, address: Address, lines: list[Line], note: str | None = None) -> Echo:
    """Place an order."""
    return Echo(value=f"{address.city}:{sum(line.qty for line in lines)}")


@tool(title="Slow", timeout=0.05)
async def slow(ctx: ToolContext) -> Echo:
    """Never finishes in time."""
    await anyio.sleep(30)
    return Echo(value="late")


@tool(title="Crash")
async def crash(ctx: ToolContext) -> Echo:
    """Fails with an internal error."""
    raise RuntimeError(SECRET)


@tool(title="Admin only", scope="admin")
async def admin_only(ctx: ToolContext) -> Echo:
    """Needs the admin scope."""
    return Echo(value="secret stuff")


@tool(title="Liar")
async def liar(ctx: ToolContext) -> Echo:
    """Returns something else than it declares."""
    return cast(Any, {"value": "a dict"})


def context(*scopes: str) -> ToolContext:
    return ToolContext(cast(Any, None), Principal("tester", frozenset(scopes)), surface="test")


@pytest.fixture
def registry() -> Registry:
    reg = Registry(default_timeout=5)
    for fn in (echo, order, slow, crash, admin_only, liar):
        reg.add_tool(fn)
    return reg


# Registration


@pytest.mark.parametrize("name", ["has space", "dotted.name", "", "x" * 65, "émoji", "slash/name"])
def test_invalid_tool_names_are_refused(name: str) -> None:
    with pytest.raises(ValueError, match="not valid"):
        Registry().add_tool(echo, name=name)


@pytest.mark.parametrize("name", ["a", "ask_agentgate", "get-pricing", "X" * 64, "v2_tool"])
def test_valid_tool_names_are_accepted(name: str) -> None:
    assert Registry().add_tool(echo, name=name).name == name


def test_duplicate_names_are_refused() -> None:
    reg = Registry()
    reg.add_tool(echo)
    with pytest.raises(ValueError, match="registered twice"):
        reg.add_tool(echo)
    with pytest.raises(ValueError, match="registered twice"):
        reg.add_tool(order, name="echo")


def test_missing_docstring_is_refused() -> None:
    @tool(title="No doc")
    async def undocumented(ctx: ToolContext) -> Echo:
        return Echo(value="")

    with pytest.raises(ValueError, match="docstring"):
        Registry().add_tool(undocumented)


def test_undecorated_function_is_refused() -> None:
    async def plain(ctx: ToolContext) -> Echo:
        """Documented but not a tool."""
        return Echo(value="")

    with pytest.raises(ValueError, match="@tool"):
        Registry().add_tool(plain)


@pytest.mark.parametrize("returns", [dict, str, None, list[Echo]])
def test_tool_that_does_not_return_a_model_is_refused(returns: Any) -> None:
    async def fn(ctx: ToolContext) -> Any:
        """Returns no model."""

    fn.__annotations__["return"] = returns
    with pytest.raises(ValueError, match="pydantic model"):
        Registry().add_tool(tool(title="t")(fn))


def test_parameter_without_annotation_is_refused() -> None:
    @tool(title="Untyped")
    async def untyped(ctx: ToolContext, value) -> Echo:  # type: ignore[no-untyped-def]
        """Has an untyped parameter."""
        return Echo(value=value)

    with pytest.raises(ValueError, match="'value' needs a type annotation"):
        Registry().add_tool(untyped)


def test_schemas_are_derived_from_the_signature_and_the_return_model(registry: Registry) -> None:
    spec = registry.get_tool("order")
    schema = spec.input_schema
    assert "title" not in schema and schema["type"] == "object"
    assert schema["required"] == ["address", "lines"]
    assert schema["additionalProperties"] is False
    assert registry.get_tool("echo").input_schema["properties"]["text"]["description"] == "What to echo."
    assert spec.output_schema["properties"]["value"]["type"] == "string"
    assert spec.description == "Place an order."


def test_unknown_tool_lists_the_known_ones(registry: Registry) -> None:
    with pytest.raises(NotFound) as raised:
        registry.get_tool("nope")
    assert raised.value.param == "name" and "echo" in raised.value.message


# Validation


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"address": {"city": "Berlin", "zip": "123"}, "lines": []}, "address.zip"),
        (
            {
                "address": {"city": "Berlin", "zip": "10115"},
                "lines": [{"sku": "a", "qty": 1}, {"sku": "b", "qty": 0}],
            },
            "lines.1.qty",
        ),
        ({"address": {"zip": "10115"}, "lines": []}, "address.city"),
        ({"lines": []}, "address"),
        ({"address": {"city": "B", "zip": "10115"}, "lines": [], "colour": "red"}, "colour"),
        ({"address": {"city": "B", "zip": "10115"}, "lines": "many"}, "lines"),
    ],
)
async def test_validation_error_names_the_nested_field(
    registry: Registry, arguments: dict, field: str
) -> None:
    with pytest.raises(ValidationFailed) as raised:
        await registry.invoke("order", arguments, context())
    assert raised.value.param == field
    assert f"'{field}'" in raised.value.message and "order" in raised.value.message
    assert raised.value.http_status == 400 and raised.value.jsonrpc_code == -32602


@pytest.mark.parametrize("arguments", [[], "text", 3, [{"text": "x"}]])
async def test_arguments_that_are_not_an_object_are_refused(registry: Registry, arguments: object) -> None:
    with pytest.raises(ValidationFailed) as raised:
        await registry.invoke("echo", arguments, context())
    assert raised.value.param == "arguments"


async def test_missing_arguments_mean_none(registry: Registry) -> None:
    with pytest.raises(ValidationFailed, match="'text'"):
        await registry.invoke("echo", None, context())
    result = await registry.invoke(
        "order", {"address": {"city": "Oslo", "zip": "01234"}, "lines": []}, context()
    )
    assert result == Echo(value="Oslo:0")


# Failures while running


async def test_timeout_becomes_timed_out(registry: Registry) -> None:
    with anyio.fail_after(5):  # the tool's own 50 ms timeout must fire long before this
        with pytest.raises(TimedOut) as raised:
            await registry.invoke("slow", {}, context())
    err = raised.value
    assert (err.http_status, err.type, err.code, err.retryable) == (504, "server_error", "timeout", True)


async def test_unexpected_exception_becomes_a_server_error_without_its_text(
    registry: Registry, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="agentgate.invoke"), pytest.raises(AgentError) as raised:
        await registry.invoke("crash", {}, context())
    err = raised.value
    assert type(err) is AgentError
    assert (err.http_status, err.type) == (500, "server_error")
    envelope = site_envelope(err)
    assert SECRET not in str(envelope) and "RuntimeError" not in str(envelope)
    assert "crash" in err.message
    # the operator still sees what happened, in the log
    assert SECRET in caplog.text and "outcome=crash" in caplog.text


async def test_tool_returning_another_type_is_a_server_error(registry: Registry) -> None:
    with pytest.raises(AgentError) as raised:
        await registry.invoke("liar", {}, context())
    assert raised.value.http_status == 500


async def test_scope_is_checked_before_the_tool_runs(registry: Registry) -> None:
    with pytest.raises(PermissionDenied) as raised:
        await registry.invoke("admin_only", {}, context("chat"))
    assert raised.value.http_status == 403 and "admin" in raised.value.message
    assert await registry.invoke("admin_only", {}, context("admin")) == Echo(value="secret stuff")


async def test_every_invocation_is_counted_and_failures_are_logged(
    registry: Registry, caplog: pytest.LogCaptureFixture
) -> None:
    def count(tool: str, outcome: str) -> int:
        return INSTRUMENTS.tools.get((tool, "test", outcome), 0)

    before = {
        k: count(*k) for k in (("echo", "ok"), ("echo", "validation_error"), ("(unknown)", "not_found"))
    }
    with caplog.at_level(logging.INFO, logger="agentgate.invoke"):
        await registry.invoke("echo", {"text": "hi"}, context())
        with pytest.raises(ValidationFailed):
            await registry.invoke("echo", {}, context())
        with pytest.raises(NotFound):
            await registry.invoke("no-such-tool-" + "x" * 50, {}, context())
    lines = [r.getMessage() for r in caplog.records if r.name == "agentgate.invoke"]
    # INFO: the refused calls only, one line each; the successful one is counted, not logged
    assert len(lines) == 2, lines
    assert "tool=echo surface=test outcome=validation_error" in lines[0]
    assert "outcome=not_found" in lines[1]
    assert count("echo", "ok") == before[("echo", "ok")] + 1
    assert count("echo", "validation_error") == before[("echo", "validation_error")] + 1
    # a name no tool has does not become a label of its own
    assert count("(unknown)", "not_found") == before[("(unknown)", "not_found")] + 1
    assert not any(key[0].startswith("no-such-tool") for key in INSTRUMENTS.tools)
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="agentgate.invoke"):
        await registry.invoke("echo", {"text": "hi"}, context())
    assert any("tool=echo surface=test outcome=ok" in r.getMessage() for r in caplog.records)


# The same failures as callers see them, through the real app


@pytest.fixture
async def crash_client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The app with one extra tool that crashes, over ASGI."""
    import http_facade.app as app_module
    from tools import build_registry

    def with_crash(settings: Settings) -> Registry:
        reg = build_registry(settings)
        reg.add_tool(crash)
        reg.add_tool(admin_only)
        return reg

    monkeypatch.setattr(app_module, "build_registry", with_crash)
    settings = Settings(data_dir=tmp_path, public_base_url=BASE_URL, redis_url=None, database_url=None)
    async with (
        running(app_module.create_app(settings)) as app,
        httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE_URL) as client,
    ):
        yield client


async def test_crash_over_http_is_a_500_envelope_without_the_exception_text(crash_client) -> None:
    response = await crash_client.post("/api/tools/call", json={"name": "crash", "arguments": {}})
    assert response.status_code == 500
    assert response.headers["content-type"] == "application/json; charset=utf-8"
    error = response.json()["error"]
    assert error["type"] == "server_error" and error["code"] == "SERVER_ERROR"
    assert SECRET not in response.text and "Traceback" not in response.text


async def test_crash_over_mcp_is_an_error_result_without_the_exception_text(crash_client) -> None:
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "crash", "arguments": {}}}
    response = await crash_client.post("/api/mcp.php", json=body)
    result = response.json()["result"]
    assert result["isError"] is True
    assert "server_error" in result["content"][0]["text"]
    assert SECRET not in response.text


async def test_missing_scope_over_http_is_403(crash_client) -> None:
    response = await crash_client.post("/api/tools/call", json={"name": "admin_only"})
    assert response.status_code == 403
    assert response.json()["error"]["type"] == "permission_error"
