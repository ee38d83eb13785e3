"""The capability registry: every tool and resource is declared once here and projected everywhere.

A tool is an ``async def fn(ctx: ToolContext, **arguments) -> BaseModel``. ``@tool`` only attaches
metadata; ``Registry.add_tool`` builds the argument model from the signature and the output schema
from the return annotation. ``Registry.invoke`` is the single call path of every surface.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, TypeVar, get_type_hints

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from agent_server.context import ToolContext
from agent_server.errors import AgentError, NotFound, PermissionDenied, TimedOut, ValidationFailed

log = logging.getLogger("agentgate.invoke")

# Valid for MCP (^[A-Za-z0-9._-]{1,128}$) and OpenAI function names (^[a-zA-Z0-9_-]{1,64}$) alike.
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class ToolMeta:
    title: str
    scope: str | None = None
    read_only: bool = True
    idempotent: bool = True
    open_world: bool = False
    timeout: float | None = None
    tags: tuple[str, ...] = ()


def tool(
    *,
    title: str,
    scope: str | None = None,
    read_only: bool = True,
    idempotent: bool = True,
    open_world: bool = False,
    timeout: float | None = None,
    tags: tuple[str, ...] = (),
) -> Callable[[F], F]:
    """Mark a function as a tool; the function itself is returned unchanged."""

    def mark(fn: F) -> F:
        fn.__agentgate_tool__ = ToolMeta(title, scope, read_only, idempotent, open_world, timeout, tags)  # type: ignore[attr-defined]
        return fn

    return mark


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    description: str
    fn: Callable[..., Awaitable[BaseModel]]
    arguments: type[BaseModel]
    output: type[BaseModel]
    meta: ToolMeta

    @cached_property
    def input_schema(self) -> dict[str, Any]:
        schema = self.arguments.model_json_schema()
        schema.pop("title", None)
        return schema

    @cached_property
    def output_schema(self) -> dict[str, Any]:
        return self.output.model_json_schema()

    def validate(self, arguments: object) -> dict[str, Any]:
        """Check arguments against the signature; a failure names the first offending field."""
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise ValidationFailed(
                f"Arguments for tool {self.name} must be a JSON object.", param="arguments"
            )
        try:
            parsed = self.arguments.model_validate(arguments)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(part) for part in first["loc"]) or "arguments"
            raise ValidationFailed(
                f"Invalid argument '{field}' for tool {self.name}: {first['msg']}.", param=field
            ) from None
        return {name: getattr(parsed, name) for name in type(parsed).model_fields}


@dataclass(frozen=True)
class ResourceSpec:
    uri: str
    name: str
    title: str
    description: str
    mime_type: str
    fn: Callable[[ToolContext], Awaitable[str]]


def _description(fn: Callable[..., Any]) -> str:
    doc = inspect.getdoc(fn) or ""
    if not doc:
        raise ValueError(f"tool {fn.__name__} needs a docstring: it is the description agents read")
    return doc


def _argument_model(name: str, fn: Callable[..., Any]) -> type[BaseModel]:
    hints = get_type_hints(fn, include_extras=True)
    fields: dict[str, Any] = {}
    for param in list(inspect.signature(fn).parameters.values())[1:]:  # the first is the ToolContext
        if param.name not in hints:
            raise ValueError(f"tool {name}: parameter '{param.name}' needs a type annotation")
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ValueError(f"tool {name}: *args and **kwargs cannot be described to agents")
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (hints[param.name], default)
    config = ConfigDict(extra="forbid")
    return create_model(f"{name}_arguments", __config__=config, **fields)


class Registry:
    """Tools and resources by name; the source every surface projects."""

    def __init__(self, default_timeout: float = 10.0) -> None:
        self.default_timeout = default_timeout
        self._tools: dict[str, ToolSpec] = {}
        self._resources: dict[str, ResourceSpec] = {}

    def add_tool(self, fn: Callable[..., Awaitable[BaseModel]], *, name: str | None = None) -> ToolSpec:
        meta: ToolMeta | None = getattr(fn, "__agentgate_tool__", None)
        if meta is None:
            raise ValueError(f"{fn.__name__} is not decorated with @tool")
        tool_name = fn.__name__ if name is None else name
        if not TOOL_NAME.match(tool_name):
            raise ValueError(f"tool name {tool_name!r} is not valid for MCP and function calling")
        if tool_name in self._tools:
            raise ValueError(f"tool {tool_name!r} is registered twice")
        output = get_type_hints(fn).get("return")
        if not (inspect.isclass(output) and issubclass(output, BaseModel)):
            raise ValueError(f"tool {tool_name} must return a pydantic model")
        spec = ToolSpec(
            tool_name, meta.title, _description(fn), fn, _argument_model(tool_name, fn), output, meta
        )
        self._tools[tool_name] = spec
        return spec

    def add_resource(self, spec: ResourceSpec) -> None:
        if spec.uri in self._resources:
            raise ValueError(f"resource {spec.uri!r} is registered twice")
        self._resources[spec.uri] = spec

    @property
    def tools(self) -> list[ToolSpec]:
        return list(self._tools.values())

    @property
    def resources(self) -> list[ResourceSpec]:
        return list(self._resources.values())

    def get_tool(self, name: str) -> ToolSpec:
        try:
            return self._tools[name]
        except KeyError:
            known = ", ".join(sorted(self._tools))
            raise NotFound(f"Unknown tool '{name}'. Known tools: {known}.", param="name") from None

    def get_resource(self, uri: str) -> ResourceSpec:
        try:
            return self._resources[uri]
        except KeyError:
            raise NotFound(f"Unknown resource '{uri}'.", param="uri") from None

    async def invoke(self, name: str, arguments: object, ctx: ToolContext) -> BaseModel:
        """Run a tool: look up, check scope, validate, run under a timeout, map errors, log."""
        started = time.perf_counter()
        outcome = "ok"
        try:
            spec = self.get_tool(name)
            if spec.meta.scope and spec.meta.scope not in ctx.principal.scopes:
                raise PermissionDenied(f"Tool {name} needs the scope '{spec.meta.scope}'.")
            args = spec.validate(arguments)
            try:
                # asyncio's own timeout: a third of anyio.fail_after's cost on this hot path
                async with asyncio.timeout(spec.meta.timeout or self.default_timeout):
                    result = await spec.fn(ctx, **args)
            except TimeoutError:
                raise TimedOut(f"Tool {name} did not finish in time.") from None
            if not isinstance(result, spec.output):
                # every surface serialises the declared model; anything else is a bug of the tool
                raise TypeError(f"tool returned {type(result).__name__}, not {spec.output.__name__}")
            return result
        except AgentError as exc:
            outcome = exc.code
            raise
        except Exception:
            outcome = "crash"
            log.exception("tool %s crashed", name)
            raise AgentError(f"Tool {name} failed unexpectedly.") from None
        finally:
            elapsed = (time.perf_counter() - started) * 1000
            log.info("tool=%s surface=%s outcome=%s ms=%.1f", name, ctx.surface, outcome, elapsed)

    async def read(self, uri: str, ctx: ToolContext) -> tuple[ResourceSpec, str]:
        spec = self.get_resource(uri)
        return spec, await spec.fn(ctx)
