"""The upper bound of ``max_tokens`` (and its spellings) per model: a 400 before any upstream call.

A request may not ask a model for more tokens than the model's context window holds: the model
table knows the window of every catalogue model and of every upstream model declared with one
(``context_window``). A model whose window is not known (only a routing table names it) is held
to ``UNKNOWN_MODEL_CEILING``, about the largest window any model offers today, so a number like
10^18 never reaches an upstream (or a usage estimate). The lower bound and the type (an integer,
never a string or a boolean) are checked with the body (``bodies.py``).
"""

from __future__ import annotations

from agent_server.foundation.errors import ValidationFailed
from agent_server.gateway.model_table import ModelTable
from agent_server.llm.types import Call

UNKNOWN_MODEL_CEILING = 1_048_576
# The body fields that ask for a number of output tokens, on every relayed endpoint.
OUTPUT_FIELDS = ("max_tokens", "max_completion_tokens", "max_output_tokens")


def output_ceiling(models: ModelTable, model: str) -> int:
    entry = models.entries.get(model)
    window = entry.context_window if entry is not None else None
    return window or UNKNOWN_MODEL_CEILING


def check_output_tokens(models: ModelTable, call: Call) -> None:
    """Raise a 400 naming the field when the call asks for more tokens than its model can give."""
    body = call.body
    for field in OUTPUT_FIELDS:
        asked = body.get(field)
        if type(asked) is int and asked > (ceiling := output_ceiling(models, call.model)):
            raise ValidationFailed(
                f"'{field}' is {asked}, more than the {ceiling} tokens the model '{call.model}' "
                "can produce (its context window); ask for fewer.",
                code="max_tokens_too_large",
                param=field,
            )
