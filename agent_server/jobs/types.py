"""The job types (spec 2.5): ask, faq_lookup and kb_refresh. Tools are called via ``Registry.invoke``."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import anyio

from agent_server.capabilities.context import ToolContext
from agent_server.capabilities.registry import Registry
from agent_server.foundation.errors import AgentError, ValidationFailed
from agent_server.jobs.runner import Handler
from agent_server.knowledge.pack import ContentError
from agent_server.knowledge.search import Knowledge

log = logging.getLogger("agentgate.jobs")
JOB_TYPES = ("ask", "faq_lookup", "kb_refresh")


class JobTypes:
    def __init__(
        self, registry: Registry, context: Callable[[], ToolContext], knowledge: Knowledge, ask_tool: str
    ) -> None:
        self.registry, self.context, self.knowledge = registry, context, knowledge
        self.tools = {"ask": ask_tool, "faq_lookup": "faq_lookup"}

    def validate(self, job_type: str, job_input: dict[str, Any]) -> None:
        """Reject a bad job at submission (400) instead of queueing one that must fail."""
        if job_type not in JOB_TYPES:
            raise ValidationFailed(
                f"Unknown job type '{job_type}'. Allowed types: {', '.join(JOB_TYPES)}.", param="type"
            )
        if job_type == "kb_refresh":
            if job_input:
                raise ValidationFailed("A kb_refresh job takes no input; send {}.", param="input")
            return
        try:
            self.registry.get_tool(self.tools[job_type]).validate(job_input)
        except ValidationFailed as exc:
            field = f"input.{exc.param}" if exc.param else "input"
            raise ValidationFailed(f"{exc.message} (job type {job_type})", param=field) from None

    def handlers(self) -> dict[str, Handler]:
        async def call_tool(job_type: str, job_input: dict[str, Any]) -> dict[str, Any]:
            result = await self.registry.invoke(self.tools[job_type], job_input, self.context())
            return result.model_dump(mode="json")

        async def ask(job_input: dict[str, Any]) -> dict[str, Any]:
            return await call_tool("ask", job_input)

        async def faq_lookup(job_input: dict[str, Any]) -> dict[str, Any]:
            return await call_tool("faq_lookup", job_input)

        return {"ask": ask, "faq_lookup": faq_lookup, "kb_refresh": self.kb_refresh}

    async def kb_refresh(self, _input: dict[str, Any]) -> dict[str, Any]:
        """Re-read the content directory and rebuild the FAQ and knowledge-base indexes."""
        try:
            revision = await anyio.to_thread.run_sync(self.knowledge.reload)
        except ContentError as exc:
            log.error("kb_refresh: %s", exc)  # the path stays in the log, not in the public answer
            raise AgentError(
                "The content pack failed validation; the previous revision stays in use.",
                code="content_invalid",
            ) from None
        return {"revision": revision, "sizes": self.knowledge.sizes}
