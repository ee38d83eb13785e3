"""The chat.completion body of a typed backend: it must be the OpenAI shape for any text."""

from __future__ import annotations

import json

import pytest
from openai.types.chat import ChatCompletion

from agent_server.llm.types import Completion, Usage
from agent_server.llm.wire import completion_body

CALL = [
    {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Köln"}'}}
]


@pytest.mark.parametrize(
    ("content", "tool_calls"),
    [
        ("Hello", None),
        ('Quotes " and \\ back\nslash, tab\t, ünïcødé and 🙂 </script>', None),
        ("", CALL),  # a message that only calls tools has null content
        ("Let me check.", CALL),
    ],
)
def test_body_is_the_openai_shape(content: str, tool_calls: list | None) -> None:
    finish = "tool_calls" if tool_calls else "stop"
    completion = Completion(content, finish, Usage(12, 5), 'odd"model', tool_calls)
    body = json.loads(completion_body("chatcmpl-abc", 1_800_000_000, completion))
    message = {"role": "assistant", "content": content or None if tool_calls else content, "refusal": None}
    if tool_calls:
        message["tool_calls"] = tool_calls
    assert body == {
        "id": "chatcmpl-abc",
        "object": "chat.completion",
        "created": 1_800_000_000,
        "model": 'odd"model',
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": completion.finish_reason}
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17},
    }
    ChatCompletion.model_validate(body)
