"""The chat token for the site's own pages: a browser's same-origin GET carries no Origin, but it
carries ``Sec-Fetch-Site: same-origin``, which no page can forge; the chat then works as the contract says."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI

from agent_server.foundation.clock import ManualClock
from tests.pages.conftest import BROWSER_UA, client_of

TOKEN = "/api/chat-completion.php"


async def test_a_same_origin_fetch_gets_a_token_and_chats(pages_app: FastAPI, clock: ManualClock) -> None:
    async with client_of(pages_app, **{"User-Agent": BROWSER_UA}) as page:
        response = await page.get(
            TOKEN, params={"action": "token"}, headers={"Sec-Fetch-Site": "same-origin"}
        )
        assert response.status_code == 200, response.text
        token = response.json()["token"]
        body = {"message": "What do you offer?", "mode": "faq", "session_token": token}
        headers = {"X-Platform-Token": token, "Origin": "http://127.0.0.1:8000"}
        early = await page.post(TOKEN, json=body, headers=headers)
        assert early.status_code == 401 and early.json()["error"]["code"] == "TOKEN_TOO_YOUNG"
        clock.advance(3)
        answer = await page.post(TOKEN, json=body, headers=headers)
    assert answer.status_code == 200, answer.text
    assert answer.json()["choices"][0]["message"]["content"]


@pytest.mark.parametrize("fetch_site", [None, "same-site", "cross-site", "none"])
async def test_other_requests_without_origin_are_refused(
    program: httpx.AsyncClient, fetch_site: str | None
) -> None:
    headers = {"Sec-Fetch-Site": fetch_site} if fetch_site else {}
    response = await program.get(TOKEN, params={"action": "token"}, headers=headers)
    assert response.status_code == 403 and response.json()["error"]["code"] == "ORIGIN_REQUIRED"


async def test_an_origin_is_checked_even_with_same_origin_fetch_metadata(program: httpx.AsyncClient) -> None:
    headers = {"Origin": "https://evil.example", "Sec-Fetch-Site": "same-origin"}
    response = await program.get(TOKEN, params={"action": "token"}, headers=headers)
    assert response.status_code == 403 and response.json()["error"]["code"] == "ORIGIN_NOT_ALLOWED"
