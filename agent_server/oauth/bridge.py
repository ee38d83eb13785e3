"""authlib's server is synchronous and our database is not: authlib runs in a worker thread
(``in_thread``) and its hooks call back into the event loop (``run``). Requests reach it as
``OAuthRequest`` / ``JsonOAuthRequest`` built from what the route already read."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar

import anyio.from_thread
import anyio.to_thread
from authlib.oauth2.rfc6749 import JsonPayload, JsonRequest, OAuth2Payload, OAuth2Request

T = TypeVar("T")


def run(function: Callable[..., Awaitable[T]], *args: Any) -> T:
    """Call an async function of ours from authlib's thread."""
    return anyio.from_thread.run(function, *args)


async def in_thread(function: Callable[..., T], *args: Any) -> T:
    return await anyio.to_thread.run_sync(function, *args)


class _Payload(OAuth2Payload):
    def __init__(self, items: Iterable[tuple[str, str]]) -> None:
        self._datalist: defaultdict[str, list[str]] = defaultdict(list)
        for name, value in items:
            self._datalist[name].append(value)
        self._data = {name: values[0] for name, values in self._datalist.items()}

    @property
    def data(self) -> dict[str, str]:
        return self._data

    @property
    def datalist(self) -> defaultdict[str, list[str]]:
        return self._datalist

    def items(self) -> list[tuple[str, str]]:
        return [(name, value) for name, values in self._datalist.items() for value in values]


class OAuthRequest(OAuth2Request):
    """A query (authorization) or form (token, revocation) request, as authlib reads it."""

    def __init__(
        self,
        method: str,
        uri: str,
        headers: Any,
        query: Iterable[tuple[str, str]],
        form: Iterable[tuple[str, str]],
    ) -> None:
        super().__init__(method, uri, headers=headers)
        self._args, self._form = _Payload(query), _Payload(form)
        self.payload = _Payload([*self._args.items(), *self._form.items()])

    @property
    def args(self) -> dict[str, str]:
        return self._args.data

    @property
    def form(self) -> dict[str, str]:
        return self._form.data


class _Json(JsonPayload):
    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    @property
    def data(self) -> dict[str, Any]:
        return self._data


class JsonOAuthRequest(JsonRequest):
    def __init__(self, method: str, uri: str, headers: Any, data: dict[str, Any]) -> None:
        super().__init__(method, uri, headers)
        self.payload = _Json(data)
