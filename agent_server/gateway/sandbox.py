"""What the sandbox mock serves to a sandbox (``sk_test_``) key, checked before it answers.

The mock itself would answer anything; a real model would not. So a sandbox key gets the refusals
it would meet in production: a model the gateway does not know (not in the model table, whatever
the plan's grant matches: Enterprise grants ``*``) is 400 ``model_not_found``, and image parts
sent to a model without the ``vision`` capability are a 400 naming the model. Live keys never pass
here: the router refuses a model without a route, and an upstream judges its own inputs.
"""

from __future__ import annotations

from typing import Any

from agent_server.foundation.errors import ModelNotFound, ValidationFailed
from agent_server.gateway.model_table import ModelTable
from agent_server.llm.types import Call

# Image parts: chat completions (image_url), the Responses API (input_image), Messages (image).
IMAGE_PARTS = frozenset({"image_url", "input_image", "image"})
VISION = "vision"


def check_sandbox_call(models: ModelTable, call: Call) -> None:
    entry = models.entries.get(call.model)
    if entry is None:
        raise ModelNotFound(
            f"The model '{call.model}' does not exist; GET /v1/models lists the models this key may call.",
            param="model",
        )
    if VISION not in entry.capabilities and _has_image(call.body):
        raise ValidationFailed(
            f"The model '{call.model}' does not accept images (it lacks the 'vision' capability); "
            "send text only, or choose a model whose capabilities in GET /v1/models include 'vision'.",
            code="image_not_supported",
            param="model",
        )


def _has_image(body: dict[str, Any]) -> bool:
    turns = body.get("messages", body.get("input"))
    if not isinstance(turns, list):
        return False
    return any(isinstance(turn, dict) and _images_in(turn.get("content")) for turn in turns)


def _images_in(content: Any) -> bool:
    if not isinstance(content, list):
        return False
    for part in content:
        if isinstance(part, dict):
            if part.get("type") in IMAGE_PARTS:
                return True
            if part.get("type") == "tool_result" and _images_in(part.get("content")):  # Messages API
                return True
    return False
