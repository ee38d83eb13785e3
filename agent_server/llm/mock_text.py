"""The mock's legacy text completions and embeddings.

Completions continue each prompt (a string, strings, or token arrays) with a fixed sentence: ``n``
choices per prompt, ``echo``, ``suffix``, ``max_tokens`` (16 when not given, as OpenAI) and
``logprobs`` in the legacy shape. Embeddings are deterministic unit vectors (a hash of model and
text stretched to the dimension): 1536 dimensions, 3072 for ``*-large`` models, or ``dimensions``;
``encoding_format: base64`` gives little-endian float32, as OpenAI (and its SDK's default) does.
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
import struct
import zlib
from typing import Any

from pydantic_core import to_json

from agent_server.llm.tokens import count_tokens, input_text, truncate
from agent_server.llm.types import Call, Chunk, Usage
from agent_server.llm.wire import new_id, sse, usage_json

LEGACY_MAX_TOKENS = 16
DIMENSIONS, LARGE_DIMENSIONS = 1536, 3072
_PIECE = re.compile(r"\s*\S+")  # a stream piece: a word with the space before it, as tokens are


def _prompts(value: Any) -> list[str]:
    if isinstance(value, list) and value and all(isinstance(item, str | list) for item in value):
        return [input_text(item) if isinstance(item, list) else item for item in value]
    return [input_text(value)]


def _continuation(call: Call, prompt: str, index: int) -> tuple[str, str]:
    """(text, finish_reason) of choice ``index`` for ``prompt``."""
    body = call.body
    tail = " ".join(prompt.split()[-8:])
    after = f" after '{tail}'" if tail else ""
    text = f" ... and so the sandbox model {call.model} continues{after} ({index + 1})."
    limit = body.get("max_tokens") or LEGACY_MAX_TOKENS
    cut = truncate(text, limit)
    finish = "length" if count_tokens(cut) >= limit and cut != text else "stop"
    if body.get("echo") is True:
        cut = prompt + cut
    if isinstance(body.get("suffix"), str):
        cut += body["suffix"]
    return cut, finish


def _legacy_logprobs(text: str) -> dict[str, Any]:
    tokens = text.split(" ")
    tokens = [token if i == 0 else " " + token for i, token in enumerate(tokens)]
    values = [-round((zlib.crc32(t.encode()) % 2000) / 1000, 3) for t in tokens]
    offsets = [sum(len(t) for t in tokens[:i]) for i in range(len(tokens))]
    return {
        "tokens": tokens,
        "token_logprobs": values,
        "top_logprobs": [{t: v} for t, v in zip(tokens, values, strict=True)],
        "text_offset": offsets,
    }


def _choices(call: Call) -> tuple[list[dict[str, Any]], Usage]:
    n = call.body.get("n") or 1
    prompts = _prompts(call.body.get("prompt", ""))
    choices, generated = [], 0
    for p_index, prompt in enumerate(prompts):
        for j in range(n):
            text, finish = _continuation(call, prompt, j)
            generated += count_tokens(text)
            logprobs = _legacy_logprobs(text) if isinstance(call.body.get("logprobs"), int) else None
            choices.append(
                {"text": text, "index": p_index * n + j, "logprobs": logprobs, "finish_reason": finish}
            )
    return choices, Usage(sum(count_tokens(p) for p in prompts), generated)


def completion_answer(call: Call) -> tuple[dict[str, Any], Usage]:
    choices, usage = _choices(call)
    data = {
        "id": new_id("cmpl-"),
        "object": "text_completion",
        "created": call.created,
        "model": call.model,
        "choices": choices,
        "usage": usage_json(usage),
        "system_fingerprint": "fp_agentgate_mock",
    }
    return data, usage


def completion_chunks(call: Call) -> list[Chunk]:
    choices, usage = _choices(call)
    head = {"id": new_id("cmpl-"), "object": "text_completion", "created": call.created, "model": call.model}
    out: list[Chunk] = []
    for choice in choices:
        for piece in _PIECE.findall(choice["text"]) or [choice["text"]]:
            data = {
                **head,
                "choices": [
                    {"text": piece, "index": choice["index"], "logprobs": None, "finish_reason": None}
                ],
            }
            out.append(Chunk(sse(to_json(data)), data, None, piece))
        data = {**head, "choices": [{**choice, "text": "", "logprobs": None}]}
        out.append(Chunk(sse(to_json(data)), data))
    data = {**head, "choices": [], "usage": usage_json(usage)}
    out.append(Chunk(sse(to_json(data)) if call.include_usage else b"", data, usage))
    return out


def _vector(model: str, text: str, dimensions: int) -> list[float]:
    stream = hashlib.shake_256(f"{model}\n{text}".encode()).digest(2 * dimensions)
    values = [(int.from_bytes(stream[i : i + 2], "little") - 32767.5) for i in range(0, 2 * dimensions, 2)]
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return [v / norm for v in values]


def embeddings_answer(call: Call) -> tuple[dict[str, Any], Usage]:
    body = call.body
    source = body.get("input")
    texts = (
        [input_text(item) if not isinstance(item, str) else item for item in source]
        if isinstance(source, list) and source and not isinstance(source[0], int)
        else [input_text(source)]
    )
    default = LARGE_DIMENSIONS if call.model.endswith("-large") else DIMENSIONS
    dimensions = body.get("dimensions") or default
    data = []
    for index, text in enumerate(texts):
        vector = _vector(call.model, text, dimensions)
        encoded: Any = vector
        if body.get("encoding_format") == "base64":
            encoded = base64.b64encode(struct.pack(f"<{dimensions}f", *vector)).decode()
        data.append({"object": "embedding", "index": index, "embedding": encoded})
    tokens = sum(count_tokens(text) for text in texts)
    answer = {
        "object": "list",
        "data": data,
        "model": call.model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }
    return answer, Usage(tokens, 0)
