"""Notices when the content pack changes and announces each resource whose content changed.

Every ``AGENTGATE_MCP_CONTENT_CHECK_SECONDS`` a process compares the content files (the shipped pack
and ``AGENTGATE_CONTENT_DIR``: names, sizes, modification times) with what it saw last. On a change it
reloads the pack (as the ``kb_refresh`` job does; a broken file keeps the old pack and is logged), then
renders every resource, and every instance of a template whose parameter values the content lists,
and publishes ``ResourceUpdated`` for each URI whose content digest changed. A reload done elsewhere
in the process (``kb_refresh``) is noticed by its new knowledge revision. With several workers each
one notices the change; a short claim in the KV lets one of them announce it.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

from agent_server.capabilities.context import ToolContext
from agent_server.capabilities.registry import Registry
from agent_server.capabilities.services import Services
from agent_server.knowledge.pack import ContentError, shipped_content_dir
from agent_server.mcp.events import RESOURCE_UPDATED, Change, Events
from agent_server.storage.kv import KVUnavailable

log = logging.getLogger("agentgate.mcp")
CLAIM_SECONDS = 300  # long enough for every worker to notice the same change


def content_signature(folders: list[Path]) -> tuple[tuple[str, int, int], ...]:
    entries = []
    for folder in folders:
        for path in sorted(folder.glob("*")):
            if path.is_file():
                stat = path.stat()
                entries.append((str(path), stat.st_size, stat.st_mtime_ns))
    return tuple(entries)


class ContentWatch:
    def __init__(self, registry: Registry, services: Services, bus: Events) -> None:
        self.registry, self.services, self.bus = registry, services, bus
        settings = services.settings
        self.interval = settings.mcp_content_check_seconds
        self.folders = [shipped_content_dir(), *([settings.content_dir] if settings.content_dir else [])]
        self._signature = content_signature(self.folders)
        self._revision = services.knowledge.revision
        self._digests: dict[str, str] = {}

    async def digests(self) -> dict[str, str]:
        """The SHA-256 of every resource the content defines, static and template instances."""
        ctx = ToolContext(self.services, surface="mcp")
        uris = [r.uri for r in self.registry.resources]
        for template in self.registry.templates:
            if len(template.variables) == 1 and template.variables[0] in template.choices:
                name = template.variables[0]
                values = template.choices[name](ctx)
                uris += [template.uri_template.replace(f"{{{name}}}", value) for value in values]
        found: dict[str, str] = {}
        for uri in uris:
            try:
                _, content = await self.registry.read(uri, ctx)
            except Exception:  # a resource that cannot render now is left out, not fatal
                log.warning("MCP watch: %s could not be read", uri, exc_info=True)
                continue
            data = content if isinstance(content, bytes) else content.encode()
            found[uri] = hashlib.sha256(data).hexdigest()
        return found

    async def check(self) -> list[str]:
        """Reload if the files changed; announce and return the URIs whose content changed."""
        signature = content_signature(self.folders)
        if signature != self._signature:
            self._signature = signature
            try:
                await anyio.to_thread.run_sync(self.services.knowledge.reload)
            except ContentError as exc:
                log.error("content pack changed but does not load, keeping the previous one: %s", exc)
        revision = self.services.knowledge.revision
        if revision == self._revision:
            return []
        self._revision = revision
        digests = await self.digests()
        before, self._digests = self._digests, digests
        changed = [uri for uri, digest in digests.items() if before.get(uri) not in (None, digest)]
        for uri in changed:
            if await self._claim(f"mcp:changed:{uri}:{before[uri]}:{digests[uri]}"):
                await self.bus.publish(Change(RESOURCE_UPDATED, uri))
        return changed

    async def _claim(self, key: str) -> bool:
        try:
            return await self.services.kv.set_if_absent(key, b"1", CLAIM_SECONDS)
        except KVUnavailable:
            return True  # better twice than never

    @asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        if self.interval <= 0:
            yield
            return
        self._digests = await self.digests()
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self._loop)
            yield
            tasks.cancel_scope.cancel()

    async def _loop(self) -> None:
        while True:
            await anyio.sleep(self.interval)
            try:
                await self.check()
            except Exception:  # the watch must outlive a bad moment
                log.exception("MCP content watch failed; trying again")
