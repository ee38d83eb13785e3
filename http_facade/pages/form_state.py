"""A form's state as its page shows it: what was typed, and what is wrong with it, field by field.

One mechanism for every form (docs/pages.md, "Form errors"): a route that holds a form names the
function drawing its page with ``@redisplays(draw)``. When the form's input is refused, by
validation (``RequestValidationError``) or by the service (an ``AgentError`` about the input: 400,
401, 404, 409, 422, or 429 for too many tries), ``PageRoute`` calls ``draw(request, FormState)`` instead of showing an error page: the same
page, the status of the error, the typed values kept (never a password) and a message in plain
words next to each field, with a summary at the top that links to the fields.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response

from agent_server.foundation.errors import AgentError, ValidationFailed

# Never sent back into a page: the browser's password manager fills these again, a page never does.
SECRET_FIELDS = frozenset({"password", "current_password", "new_password", "csrf_token", "credential"})
# Refusals of the input, of the plan or of too many tries: fixed, or retried, on the same page. A form
# whose CSRF token (dashboard) or origin (public forms) is wrong is never shown again: PageRoute
# checks that first and answers an error page.
REDISPLAYED_STATUSES = frozenset({400, 401, 402, 403, 404, 409, 422, 429})
# A heading for refusals that are not about one field; their message follows it.
TITLES = {401: "Not signed in", 402: "Not available", 403: "Not allowed", 404: "Not found",
          409: "This conflicts with something that changed", 429: "Too many requests"}  # fmt: skip
REDISPLAY = "__redisplay__"
FIX_THE_FIELDS = "Some fields need another look; each says what to change."
Draw = Callable[[Request, "FormState"], Awaitable[Response]]
Endpoint = TypeVar("Endpoint", bound=Callable[..., Any])


@dataclass
class FormState:
    """What a form shows: ``values`` (name to the values sent), ``errors`` (name to a message),
    ``problem`` (the refusal, for the summary and the status) and ``prefix`` (of the fields' ids)."""

    values: dict[str, list[str]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    problem: AgentError | None = None
    prefix: str = ""

    @classmethod
    def blank(cls, prefix: str = "", **defaults: str | Sequence[str]) -> FormState:
        """A form not sent yet, with its defaults."""
        values = {k: [v] if isinstance(v, str) else list(v) for k, v in defaults.items()}
        return cls(values=values, prefix=prefix)

    @classmethod
    def sent(cls, raw: FormData | Mapping[str, Any], problem: AgentError | None = None) -> FormState:
        """The form as it was sent; ``problem`` (a refusal of the service) names its field in ``param``."""
        state = cls(values=_values(raw), problem=problem)
        if problem is not None and problem.param and problem.param in raw:
            state.errors[problem.param] = problem.message
        return state

    @classmethod
    def refused(cls, raw: FormData | Mapping[str, Any], errors: Sequence[Any]) -> FormState:
        """The form after validation refused it: one plain message per field."""
        state = cls(values=_values(raw))
        loose: list[str] = []
        for error in errors:
            name = field_of(error)
            message = plain_message(error)
            if name is None:
                loose.append(message)
            else:
                state.errors.setdefault(name, message)
        headline = " ".join(loose) if loose else FIX_THE_FIELDS
        state.problem = ValidationFailed(headline, param=next(iter(state.errors), None))
        return state

    def at(self, prefix: str) -> FormState:
        """The same state, its fields' ids starting with ``prefix`` (``register`` → ``register-email``)."""
        self.prefix = prefix
        return self

    # What templates ask.

    def value(self, name: str, default: str = "") -> str:
        values = self.values.get(name)
        return values[0] if values else default

    def chosen(self, name: str, option: str) -> bool:
        """A radio button, checkbox or option that was (or by default is) selected."""
        return option in self.values.get(name, ())

    def error(self, name: str) -> str:
        return self.errors.get(name, "")

    def id(self, name: str) -> str:
        return f"{self.prefix}-{name.replace('_', '-')}" if self.prefix else name.replace("_", "-")

    @property
    def invalid(self) -> bool:
        return self.problem is not None

    @property
    def status(self) -> int:
        return self.problem.http_status if self.problem is not None else 200

    @property
    def headline(self) -> str:
        """The summary's first line: fix the fields, a title for the kind of refusal, or the message."""
        if self.problem is None:
            return ""
        if self.problem.param in self.errors and len(self.errors) == 1:
            return FIX_THE_FIELDS
        return TITLES.get(self.problem.http_status, self.problem.message)

    @property
    def detail(self) -> str:
        """The refusal's message when the headline does not say it already (nor a field's message)."""
        if self.problem is None or self.problem.message in (self.headline, *self.errors.values()):
            return ""
        return self.problem.message

    @property
    def listed(self) -> list[tuple[str, str]]:
        """(field id, message) of every field with a message, for the summary's links."""
        return [(self.id(name), message) for name, message in self.errors.items()]


def _values(raw: FormData | Mapping[str, Any]) -> dict[str, list[str]]:
    items = raw.multi_items() if isinstance(raw, FormData) else list(raw.items())
    values: dict[str, list[str]] = {}
    for name, value in items:
        if name in SECRET_FIELDS or not isinstance(value, str):
            continue
        values.setdefault(name, []).append(value)
    return values


def field_of(error: Mapping[str, Any]) -> str | None:
    """The form field an error of validation is about (``("body", "scopes", 0)`` → ``scopes``)."""
    loc = [str(part) for part in error.get("loc", ())]
    if loc and loc[0] in ("body", "query", "path", "header"):
        loc = loc[1:]
    if not loc or error.get("type") == "extra_forbidden":
        return None
    return loc[0]


def plain_message(error: Mapping[str, Any]) -> str:
    """A validation error as a person reads it, without the validator's wording."""
    kind, ctx = str(error.get("type", "")), error.get("ctx") or {}
    msg = str(error.get("msg", ""))
    if kind == "missing" or (kind == "string_too_short" and ctx.get("min_length") == 1):
        return "Fill this in."
    if "email" in msg and kind == "value_error":
        return "Enter an e-mail address like name@example.com."
    words = {
        "string_too_short": "Use at least {min_length} characters.",
        "string_too_long": "Use at most {max_length} characters.",
        "too_short": "Choose at least {min_length}.",
        "too_long": "Choose at most {max_length}.",
        "greater_than_equal": "Enter {ge} or more.",
        "less_than_equal": "Enter {le} or less.",
        "greater_than": "Enter more than {gt}.",
        "less_than": "Enter less than {lt}.",
        "int_parsing": "Enter a whole number.",
        "int_type": "Enter a whole number.",
        "int_from_float": "Enter a whole number.",
        "float_parsing": "Enter a number.",
        "literal_error": "Choose one of the options offered.",
        "enum": "Choose one of the options offered.",
        "string_pattern_mismatch": "Use only the characters allowed here.",
        "bool_parsing": "Choose yes or no.",
        "extra_forbidden": "The form sent a field it does not have; reload the page and send it again.",
    }
    if kind in words:
        return words[kind].format(
            **{k: ctx.get(k, "") for k in ("min_length", "max_length", "ge", "le", "gt", "lt")}
        )
    if kind.startswith("url"):
        return "Enter a full web address, starting with https://."
    text = msg.removeprefix("Value error, ").strip() or "This value is not accepted."
    return text[0].upper() + text[1:] + ("" if text.endswith(".") else ".")


def in_words(errors: Sequence[Any]) -> str:
    """Validation errors of a request that holds no form to show again, as one plain sentence."""
    parts = []
    for error in errors:
        name = field_of(error)
        message = plain_message(error)
        parts.append(f"{name.replace('_', ' ')}: {message}" if name else message)
    return "Check " + ("this" if len(parts) == 1 else "these") + " — " + " ".join(parts)


def redisplays(draw: Draw) -> Callable[[Endpoint], Endpoint]:
    """Mark a form's route: its refused input comes back on the page ``draw`` renders."""

    def mark(endpoint: Endpoint) -> Endpoint:
        setattr(endpoint, REDISPLAY, draw)
        return endpoint

    return mark


def redisplay_of(endpoint: Callable[..., Any]) -> Draw | None:
    return getattr(endpoint, REDISPLAY, None)


async def sent_form(request: Request) -> FormData:
    """The request's form (already read and kept by the framework when the route took a form)."""
    return await request.form()
