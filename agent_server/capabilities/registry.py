"""The capability registry: every tool and resource is declared once here and projected everywhere.

A tool is an ``async def fn(ctx: ToolContext, **arguments) -> BaseModel``. ``@tool`` only attaches
metadata; ``Registry.add_tool`` builds the argument model from the signature and the output schema
from the return annotation. ``Registry.invoke`` is the single call path of every surface.
Resource templates (``faq://entry/{id}``) and prompts are declared here too; MCP projects them.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache, cached_property
from typing import Any, TypeVar, get_type_hints
from urllib.parse import unquote

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from agent_server.capabilities.context import ToolContext
from agent_server.foundation.errors import AgentError, NotFound, PermissionDenied, TimedOut, ValidationFailed
from agent_server.observability.instruments import INSTRUMENTS

log = logging.getLogger("agentgate.invoke")
UNKNOWN_TOOL = "(unknown)"

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
        return _json_schema(self.arguments, titled=False)

    @cached_property
    def output_schema(self) -> dict[str, Any]:
        return _json_schema(self.output, titled=True)

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
    fn: Callable[[ToolContext], Awaitable[str | bytes]]  # bytes: a binary resource


# The values a template parameter or prompt argument may take, read from the content at call time
# (MCP offers them as completions).
Choices = Callable[[ToolContext], Iterable[str]]
_TEMPLATE_VARIABLE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class TemplateSpec:
    """A family of resources: ``faq://entry/{id}``; each variable stands for one path segment."""

    uri_template: str
    name: str
    title: str
    description: str
    mime_type: str
    fn: Callable[[ToolContext, dict[str, str]], Awaitable[str | bytes]]
    choices: Mapping[str, Choices] = field(default_factory=dict)

    @property
    def variables(self) -> list[str]:
        return _TEMPLATE_VARIABLE.findall(self.uri_template)

    def match(self, uri: str) -> dict[str, str] | None:
        """The variables of ``uri`` when it belongs to this template, else ``None``."""
        parts = _TEMPLATE_VARIABLE.split(self.uri_template)  # literal, name, literal, name, ...
        pattern = "".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>[^/?#]+)" for i, p in enumerate(parts))
        found = re.fullmatch(pattern, uri)
        return None if found is None else {k: unquote(v) for k, v in found.groupdict().items()}


@dataclass(frozen=True)
class PromptArgument:
    name: str
    description: str
    required: bool = True
    choices: Choices | None = None


@dataclass(frozen=True)
class PromptSpec:
    """A prompt template; ``fn`` renders its messages as MCP ``PromptMessage`` objects (role, content),
    or answers with a model the surface passes on as is (MCP's input requests)."""

    name: str
    title: str
    description: str
    arguments: tuple[PromptArgument, ...]
    fn: Callable[[ToolContext, dict[str, str]], Awaitable[list[dict[str, Any]] | BaseModel]]


def _description(fn: Callable[..., Any]) -> str:
    doc = inspect.getdoc(fn) or ""
    if not doc:
        raise ValueError(f"tool {fn.__name__} needs a docstring: it is the description agents read")
    return doc


# Per process: every app's registry holds the same module-level tools. The schemas are shared by
# every surface and every app, so they are read, never changed.
@cache
def _json_schema(model: type[BaseModel], *, titled: bool) -> dict[str, Any]:
    schema = model.model_json_schema()
    if not titled:
        schema.pop("title", None)
    return schema


@cache  # per process, as _json_schema
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
        self._templates: dict[str, TemplateSpec] = {}
        self._prompts: dict[str, PromptSpec] = {}

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

    def add_template(self, spec: TemplateSpec) -> None:
        if spec.uri_template in self._templates or not spec.variables:
            raise ValueError(f"template {spec.uri_template!r} is registered twice or has no variable")
        self._templates[spec.uri_template] = spec

    def add_prompt(self, spec: PromptSpec) -> None:
        if spec.name in self._prompts or not TOOL_NAME.match(spec.name):
            raise ValueError(f"prompt name {spec.name!r} is registered twice or not valid")
        self._prompts[spec.name] = spec

    @property
    def tools(self) -> list[ToolSpec]:
        return list(self._tools.values())

    @property
    def resources(self) -> list[ResourceSpec]:
        return list(self._resources.values())

    @property
    def templates(self) -> list[TemplateSpec]:
        return list(self._templates.values())

    @property
    def prompts(self) -> list[PromptSpec]:
        return list(self._prompts.values())

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

    def get_prompt(self, name: str) -> PromptSpec:
        try:
            return self._prompts[name]
        except KeyError:
            known = ", ".join(sorted(self._prompts))
            raise NotFound(f"Unknown prompt '{name}'. Known prompts: {known}.", param="name") from None

    async def invoke(self, name: str, arguments: object, ctx: ToolContext) -> BaseModel:
        """Run a tool: look up, check scope, validate, run under a timeout, map errors, count, log.

        Every call is counted (``agentgate_tool_calls_total``); a refused or failed one is also logged
        at INFO, a successful one at DEBUG only: a log line per call costs about a tenth of a hot MCP
        call's CPU (docs/performance.md), and the counter answers "how many, which, how did they end"."""
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
            # a name no tool has is counted as "(unknown)": labels stay a fixed set whatever callers send
            INSTRUMENTS.count_tool_call(name if name in self._tools else UNKNOWN_TOOL, ctx.surface, outcome)
            level = logging.DEBUG if outcome == "ok" else logging.INFO
            if log.isEnabledFor(level):
                elapsed = (time.perf_counter() - started) * 1000
                log.log(level, "tool=%s surface=%s outcome=%s ms=%.1f", name, ctx.surface, outcome, elapsed)

    async def read(self, uri: str, ctx: ToolContext) -> tuple[ResourceSpec | TemplateSpec, str | bytes]:
        """A resource by URI: a declared resource first, else the first template it matches."""
        spec = self._resources.get(uri)
        if spec is not None:
            return spec, await spec.fn(ctx)
        for template in self._templates.values():
            variables = template.match(uri)
            if variables is not None:
                return template, await template.fn(ctx, variables)
        raise NotFound(f"Unknown resource '{uri}'.", param="uri")

    async def render_prompt(
        self, name: str, arguments: Mapping[str, str] | None, ctx: ToolContext
    ) -> tuple[PromptSpec, list[dict[str, Any]] | BaseModel]:
        """A prompt's messages; a missing required or an unknown argument names itself."""
        spec = self.get_prompt(name)
        given = dict(arguments or {})
        declared = {a.name for a in spec.arguments}
        for argument in spec.arguments:
            if argument.required and not given.get(argument.name):
                raise ValidationFailed(
                    f"Prompt {name} needs the argument '{argument.name}'.", param=argument.name
                )
        unknown = sorted(set(given) - declared)
        if unknown:
            raise ValidationFailed(f"Prompt {name} has no argument '{unknown[0]}'.", param=unknown[0])
        return spec, await spec.fn(ctx, given)
