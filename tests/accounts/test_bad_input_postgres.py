"""Values PostgreSQL cannot store (a NUL character) are the request's fault: a clear 400, never a 500,
and the log line never shows the statement's parameters (password hashes, digests, e-mails)."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest

from agent_server.foundation.settings import Settings
from http_facade.app import create_app
from tests.conftest import BASE_URL, running

pytestmark = pytest.mark.postgres


async def test_nul_characters_get_a_clear_400_and_no_parameters_in_the_log(
    tmp_path: Path, postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    settings = Settings(
        data_dir=tmp_path, public_base_url=BASE_URL, database_url=postgres_url, mail_worker=False
    )
    app = create_app(settings)
    caplog.set_level(logging.INFO)
    async with running(app), httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE_URL) as c:
        for method, path, body in (
            (
                "POST",
                "/admin/auth/login",
                {"email": "a\u0000b@acme.example", "password": "secret-password-1"},
            ),
            ("POST", "/admin/auth/passkey/options", {"email": "a\u0000b@acme.example"}),
            ("POST", "/sso/discover", {"email": "a\u0000b@acme.example"}),
            ("POST", "/register/passkey", {"registration_id": "reg_\u0000", "credential": {}}),
            ("GET", "/sso/oidc/a%00b/start", None),
        ):
            answer = await c.request(method, path, json=body)
            assert 400 <= answer.status_code < 500, (path, answer.status_code, answer.text)
    assert "secret-password-1" not in caplog.text and "[parameters:" not in caplog.text
