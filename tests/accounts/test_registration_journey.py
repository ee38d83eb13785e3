"""The registration journey as a new user makes it, over HTTP to a real server (uvicorn on loopback):
register, receive the mail on a real SMTP server, follow the link, sign in, create an API key, and
call /v1/chat/completions with the official openai SDK. Also: the SMTP server down at registration."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urlsplit

import httpx
import openai
import pytest
from pydantic import SecretStr

from agent_server.foundation.settings import Settings
from tests.accounts.conftest import PASSWORD
from tests.accounts.smtp import SmtpServer, link_in
from tests.conftest import LiveServer


@pytest.fixture
def smtp() -> Iterator[SmtpServer]:
    with SmtpServer() as server:
        yield server


@pytest.fixture
def server(settings: Settings, smtp: SmtpServer) -> Iterator[LiveServer]:
    with LiveServer(settings.model_copy(update={"smtp_url": SecretStr(smtp.url)})) as live:
        yield live


async def test_register_verify_sign_in_create_a_key_and_chat(server: LiveServer, smtp: SmtpServer) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as http:
        registered = await http.post(
            "/register",
            json={
                "email": "Ada@Lovelace.example",
                "organisation": "Analytical",
                "plan": "starter",
                "password": PASSWORD,
            },
        )
        assert registered.status_code == 202, registered.text

        message = await smtp.wait_for("ada@lovelace.example", timeout=10)
        link = link_in(message, f"{server.url}/app/register/verify")  # the dashboard's page
        assert 'data-test="verify-submit"' in (await http.get(link)).text
        token = parse_qs(urlsplit(link).query)["token"][0]
        assert (await http.get("/register/verify", params={"token": token})).json()["state"] == "valid"
        verified = await http.post("/register/verify", json={"token": token})
        assert verified.status_code == 201, verified.text
        trial_end = datetime.fromisoformat(verified.json()["tenant"]["trial_ends_at"].replace("Z", "+00:00"))
        assert abs(trial_end - (datetime.now(UTC) + timedelta(days=14))) < timedelta(minutes=1)

        login = await http.post(
            "/admin/auth/login", json={"email": "ada@lovelace.example", "password": PASSWORD}
        )
        assert login.status_code == 200
        admin = {"Authorization": f"Bearer {login.json()['access_token']}"}
        created = await http.post(
            "/admin/api-keys", json={"name": "first", "scopes": ["chat"]}, headers=admin
        )
        assert created.status_code == 201
        key = created.json()["key"]

    client = openai.AsyncOpenAI(base_url=f"{server.url}/v1", api_key=key, max_retries=0)
    completion = await client.chat.completions.create(
        model="agentgate-mock-small", messages=[{"role": "user", "content": "Hello from a new tenant"}]
    )
    assert completion.choices[0].message.content and completion.usage and completion.usage.total_tokens > 0
    await client.close()


async def test_mail_queued_while_the_smtp_server_is_down_arrives_when_it_is_back(
    server: LiveServer, smtp: SmtpServer
) -> None:
    smtp.stop()
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as http:
        body = {
            "email": "bob@babbage.example",
            "organisation": "Difference",
            "plan": "starter",
            "password": PASSWORD,
        }
        registered = await http.post("/register", json=body)
    assert registered.status_code == 202  # the request does not wait for, or fail with, the mail server
    await asyncio.sleep(0.5)  # the first attempt fails against the stopped server
    assert smtp.messages == []
    smtp.start()
    message = await smtp.wait_for("bob@babbage.example", timeout=15)  # the first retry comes after ~5 s
    assert "/app/register/verify?token=" in link_in(message, f"{server.url}/app/register/verify")
