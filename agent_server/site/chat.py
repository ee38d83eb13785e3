"""The public chat proxy's answer (spec 2.6): three modes, one OpenAI ``chat.completion`` shape.

Modes (docs/public-api.md, "Chat proxy"):

- ``chat`` (default): the site assistant. The model gets a system prompt naming the company and
  the most relevant FAQ and knowledge-base passages, then the visitor's message.
- ``concise``: the same, asked for at most two sentences and capped at 120 tokens.
- ``faq``: no model at all. The ask pipeline's routing decides: a confident FAQ hit is quoted;
  otherwise the closest FAQ entry is quoted as such, or the answer says no entry matches. Free
  of the site's model budget, so it keeps working when that is spent.
"""

from __future__ import annotations

import secrets
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agent_server.foundation.errors import ModelNotFound
from agent_server.knowledge import ask
from agent_server.knowledge.search import Knowledge
from agent_server.llm.types import ChatMessage, ChatRequest, LLMBackend

ChatMode = Literal["chat", "faq", "concise"]
MODES: dict[str, str] = {
    "chat": "The site assistant: a model answers with the company's FAQ and knowledge base as context.",
    "concise": "Like chat, in at most two sentences (max 120 tokens).",
    "faq": "Answers only from the FAQ, without a model; says so when no entry matches.",
}
_MAX_TOKENS = {"chat": 600, "concise": 120}


class PublicChatRequest(BaseModel):
    """Spec 2.6."""

    model_config = ConfigDict(extra="forbid")

    message: str = Field(min_length=1, max_length=4000, description="The visitor's message.")
    model: str | None = Field(
        default=None,
        max_length=200,
        description="A chat model of /api/tools.php list_models; default set by the site.",
    )
    mode: ChatMode = Field(default="chat", description="chat | concise | faq (docs/public-api.md).")
    session_token: str = Field(
        min_length=1,
        max_length=1000,
        description="The token of ?action=token, also sent in the header that answer names.",
    )


def chat_models(knowledge: Knowledge) -> list[str]:
    return [m.id for m in knowledge.pack.models if "chat" in m.capabilities]


def _completion(model: str, content: str, finish: str, usage: tuple[int, int], now: float) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{secrets.token_hex(12)}",
        "object": "chat.completion",
        "created": int(now),
        "model": model,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish}
        ],
        "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)},
    }


def _faq_reply(message: str, knowledge: Knowledge, home: str) -> tuple[str, list[ask.Source]]:
    plan = ask.plan(message, knowledge, home)
    if plan.route == "faq":
        answer = ask.faq_answer(message, plan)
        return answer.answer, answer.sources
    if not plan.faq:
        return "No FAQ entry matches your message. Try mode 'chat', or ask at /api/ask.php.", []
    best = plan.faq[0]
    text = f"The closest FAQ entry is “{best.passage.title}”: {best.passage.text}"
    return text, [ask.Source(id=best.passage.id, title=best.passage.title, score=best.score, kind="faq")]


def _system_prompt(knowledge: Knowledge, message: str, mode: str) -> str:
    company = knowledge.pack.company
    passages = [*knowledge.search_faq(message, 2), *knowledge.search_kb(message, 2)]
    context = "\n\n".join(f"{h.passage.title}: {h.passage.text}" for h in passages)
    style = "Answer in at most two sentences." if mode == "concise" else "Answer helpfully and briefly."
    return (
        f"You are the assistant on the website of {company.name} ({company.tagline}). {style} "
        f"Use the context when it helps; when unsure, refer the visitor to {company.contact.email}.\n\n"
        f"{context}"
    )


async def reply(
    body: PublicChatRequest, knowledge: Knowledge, llm: LLMBackend, default_model: str, now: float
) -> dict[str, Any]:
    """The chat-completion answer to one message, plus ``mode`` and ``sources``."""
    model = body.model or default_model
    if model not in chat_models(knowledge):
        raise ModelNotFound(
            f"Model '{model}' is not available on the site chat. Choose one of: "
            f"{', '.join(chat_models(knowledge))}.",
            param="model",
        )
    if body.mode == "faq":
        text, sources = _faq_reply(body.message, knowledge, knowledge.pack.company.headquarters.city)
        result = _completion("faq", text, "stop", (0, 0), now)
    else:
        request = ChatRequest(
            model=model,
            messages=[
                ChatMessage(role="system", content=_system_prompt(knowledge, body.message, body.mode)),
                ChatMessage(role="user", content=body.message),
            ],
            max_tokens=_MAX_TOKENS[body.mode],
        )
        completion = await llm.complete(request)
        usage = (completion.usage.prompt_tokens, completion.usage.completion_tokens)
        result = _completion(completion.model, completion.content, completion.finish_reason, usage, now)
        sources = []
    result["mode"] = body.mode
    result["sources"] = [s.model_dump() for s in sources]
    return result
