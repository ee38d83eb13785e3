"""A JSON route's body built from a dashboard form's fields, validated exactly as the route validates
it: a refusal is the route's own 400 naming the field (a page re-renders its form with it), never an
unhandled pydantic error."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel
from pydantic import ValidationError as PydanticError

from http_facade.errors import validation_error

Body = TypeVar("Body", bound=BaseModel)


def json_body(model: type[Body], **fields: Any) -> Body:
    try:
        return model(**fields)
    except PydanticError as exc:
        raise validation_error(list(exc.errors())) from None
