"""The SDK's ``SubscriptionBus`` over this process's MCP events (events.py): what its
``subscriptions/listen`` streams (2026-07-28) and our ``resources/subscribe`` sessions (sessions.py)
hear, and where the SDK publishes its own."""

from __future__ import annotations

from collections.abc import Callable

from mcp.shared.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    ToolsListChanged,
)

from agent_server.mcp.events import RESOURCE_UPDATED, Change, Events

_KINDS: dict[str, ServerEvent] = {
    "tools_list_changed": ToolsListChanged(),
    "prompts_list_changed": PromptsListChanged(),
    "resources_list_changed": ResourcesListChanged(),
}


def to_change(event: ServerEvent) -> Change:
    if isinstance(event, ResourceUpdated):
        return Change(RESOURCE_UPDATED, event.uri)
    return Change(next(kind for kind, known in _KINDS.items() if known == event))


def to_event(change: Change) -> ServerEvent | None:
    if change.kind == RESOURCE_UPDATED:
        return ResourceUpdated(uri=str(change.uri))
    return _KINDS.get(change.kind)


class SDKBus:
    def __init__(self, events: Events) -> None:
        self.events = events

    async def publish(self, event: ServerEvent) -> None:
        await self.events.publish(to_change(event))

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        def hear(change: Change) -> None:
            event = to_event(change)
            if event is not None:
                listener(event)

        return self.events.subscribe(hear)
