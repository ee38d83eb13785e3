"""A playground trace's steps in words, the same on the trace page and in the live list.

``js/dashboard/trace-stream.js`` writes the steps it receives with the same rules (``describe``), so
a step reads alike wherever it is shown; no step is printed as JSON.
"""

from __future__ import annotations

from typing import Any

HIDDEN = ("seq", "at_ms", "kind")


def _plural(count: Any, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def _value(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(_value(v) for v in value) or "none"
    if isinstance(value, dict):
        return ", ".join(f"{k} {_value(v)}" for k, v in value.items()) or "none"
    return str(value)


def describe_step(step: dict[str, Any]) -> str:
    kind = step.get("kind")
    if kind == "request":
        limit = step.get("max_tokens")
        tokens = f", at most {_plural(limit, 'token')}" if limit else ""
        return f"Request for {step.get('model')}: {_plural(step.get('messages'), 'message')}{tokens}."
    if kind == "route":
        revision = step.get("revision")
        table = f" (routing table revision {revision})" if revision is not None else ""
        return f"Backends to try, in order{table}: {_value(step.get('order'))}."
    if kind == "attempt":
        if step.get("ok"):
            return f"{step.get('backend')} answered in {step.get('latency_ms')} ms."
        return f"{step.get('backend')} failed after {step.get('latency_ms')} ms ({step.get('error')})."
    if kind == "result":
        return (
            f"Finished ({step.get('finish_reason')}): {step.get('prompt_tokens')} tokens in, "
            f"{step.get('completion_tokens')} out, {_plural(step.get('characters'), 'character')}."
        )
    if kind == "error":
        return f"Error {step.get('code')}: {step.get('message')}"
    details = "; ".join(f"{k.replace('_', ' ')} {_value(v)}" for k, v in step.items() if k not in HIDDEN)
    return f"{str(kind).capitalize()}{': ' + details if details else ''}."
