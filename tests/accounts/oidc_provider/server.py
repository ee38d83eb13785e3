"""Runs provider.mjs (oidc-provider under the Node 22 that tests/support/deps/node.sh installs).

``OidcProvider`` generates the provider's signing key, so a test can also mint ID tokens the
provider could have signed (and forge some it could not), and drives the provider's sign-in pages
the way a browser would: follow redirects, post the login and consent forms.
"""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import time
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import httpx
from joserfc import jwt
from joserfc.jwk import RSAKey

from tests.conftest import free_port, require_service

HERE = Path(__file__).parent
NODE = HERE / "node_modules" / ".bin" / "node"
START_SECONDS = 90.0  # Node starts in a second; a machine under load may take much longer
_FORM = re.compile(r'<form[^>]*action="([^"]+)"')
_PROMPT = re.compile(r'name="prompt" value="(\w+)"')
_CANCEL = re.compile(r'<a href="([^"]+/abort)">')


def signing_key(kid: str) -> RSAKey:
    return RSAKey.generate_key(2048, parameters={"kid": kid, "use": "sig", "alg": "RS256"}, private=True)


class OidcProvider:
    """One provider process on a free loopback port, with one confidential client."""

    def __init__(
        self,
        redirect_uri: str,
        users: dict[str, dict[str, Any]],
        *,
        auth_methods: str | None = None,
        discovery: dict[str, Any] | None = None,
        port: int | None = None,
        key: RSAKey | None = None,
    ) -> None:
        self.port = port or free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.redirect_uri = redirect_uri
        self.users = users
        self.key = key or signing_key("provider-key-1")
        # A fixed secret: a provider restarted on the same port (key rotation) is the same client.
        self.client_id, self.client_secret = "agentgate-test-client", "agentgate-test-client-secret"
        method = (auth_methods or "client_secret_basic").split(",")[0]
        self._env = {
            "OIDC_PORT": str(self.port),
            "OIDC_ISSUER": self.issuer,
            "OIDC_JWKS": json.dumps({"keys": [self.key.as_dict(private=True)]}),
            "OIDC_USERS": json.dumps(users),
            "OIDC_CLIENTS": json.dumps(
                [
                    {
                        "client_id": self.client_id,
                        "client_secret": self.client_secret,
                        "redirect_uris": [redirect_uri],
                        "grant_types": ["authorization_code"],
                        "response_types": ["code"],
                        "token_endpoint_auth_method": method,
                    }
                ]
            ),
            **({"OIDC_AUTH_METHODS": auth_methods} if auth_methods else {}),
            **({"OIDC_DISCOVERY": json.dumps(discovery)} if discovery else {}),
        }
        self._process: subprocess.Popen[str] | None = None

    def __enter__(self) -> OidcProvider:
        if not NODE.exists():
            require_service("Node 22 and oidc-provider", "run sh tests/support/deps/node.sh")
        self._process = subprocess.Popen(
            [str(NODE), str(HERE / "provider.mjs")],
            env={**os.environ, **self._env},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,  # its start-up warnings, shown if it fails to start
            text=True,
        )
        deadline, said = time.monotonic() + START_SECONDS, b""
        assert self._process.stdout is not None
        # Raw reads of the pipe: a buffered readline after select() may take "ready" into the
        # file object's buffer with the line before it, where select() never sees it again.
        out = self._process.stdout.fileno()
        while time.monotonic() < deadline and self._process.poll() is None:
            ready, _, _ = select.select([out], [], [], 0.1)
            if ready:
                said += os.read(out, 65536)
                if b"ready" in (line.strip() for line in said.splitlines()):
                    return self
        self.__exit__()
        text = said.decode(errors="replace")[-2000:]
        raise RuntimeError(f"the OpenID provider did not start: {text}")

    def __exit__(self, *exc: object) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()

    def mint(self, claims: dict[str, Any], key: RSAKey | None = None, kid: str | None = None) -> str:
        """An ID token signed with the provider's own key (or ``key``), named by ``kid``."""
        key = key or self.key
        header = {"alg": "RS256", "kid": kid or str(self.key.kid)}
        return jwt.encode(header, claims, key)

    async def sign_in(self, authorization_url: str, login: str, *, cancel: bool = False) -> str:
        """Act as the browser: sign in as ``login`` (or cancel), consent, and return the callback URL."""
        url = authorization_url
        async with httpx.AsyncClient(follow_redirects=False, timeout=10) as browser:
            for _ in range(20):
                if url.startswith(self.redirect_uri):
                    return url
                page = await browser.get(url)
                if page.is_redirect:
                    url = urljoin(url, page.headers["location"])
                    continue
                assert page.status_code == 200, page.text[:500]
                form, prompt = _FORM.search(page.text), _PROMPT.search(page.text)
                assert form and prompt, page.text[:500]
                if cancel:
                    cancel_link = _CANCEL.search(page.text)
                    assert cancel_link, page.text[:500]
                    url = urljoin(url, cancel_link.group(1))
                    continue
                fields = {"prompt": prompt.group(1)}
                if prompt.group(1) == "login":
                    fields.update(login=login, password="any password")
                answer = await browser.post(urljoin(url, form.group(1)), data=fields)
                assert answer.is_redirect, answer.text[:500]
                url = urljoin(url, answer.headers["location"])
        raise AssertionError(f"the provider never redirected to {self.redirect_uri}")
