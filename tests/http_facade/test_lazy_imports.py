"""A worker does not import what most processes never use (docs/performance.md, "Memory").

Each library below is loaded at first use (a passkey ceremony, an OpenID sign-in, an SMTP message,
a signed bridge call, a DNS look-up, an ACP request, a payment, a SAML assertion, an exported
trace, an MCP request, an OAuth flow, a session token, a page). The check runs in a fresh interpreter: this test process has imported them all already.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_server.foundation.lazy import lazy_module

# Libraries a worker loads only at first use; one a change imports at start again fails here.
LAZY = (
    "stripe",
    "saml2",
    "signxml",
    "lxml",
    "webauthn",
    "cbor2",
    "jsonrpcserver",
    "aiosmtplib",
    "dns",
    "jsonschema",
    "zxcvbn",
    "opentelemetry.sdk",
    "mcp",  # the first MCP request (http_facade/routes/mcp_on_demand.py)
    "mcp_types",
    "authlib",  # the first OAuth flow (agent_server/oauth/service.py: flows)
    "joserfc",  # the first ID-JAG checked
    "jwt",  # the first admin session
    "cryptography",  # under all three, and the first secret encrypted
    "jinja2",  # the first page
    "disposable_email_domains",  # the first address checked
    "rich",  # httpx's command line, never run by the service (agent_server/__init__.py)
    "prometheus_client",  # the first scrape of /metrics/prometheus
)

PROBE = """
import json, sys
from agent_server.foundation.settings import Settings
from http_facade.app import create_app

create_app(Settings(data_dir=sys.argv[1], redis_url=None, database_url=None))
at_start = [name for name in json.loads(sys.argv[2]) if name in sys.modules]

from agent_server.accounts import passkeys
from agent_server.accounts.sso import dns_txt

passkeys.algorithms()  # the first passkey ceremony needs py_webauthn
dns_txt.nameserver("192.0.2.1")  # the first look-up needs dnspython
print(json.dumps({"at_start": at_start, "webauthn": "webauthn" in sys.modules, "dns": "dns" in sys.modules}))
"""


def _clean_env() -> dict[str, str]:
    """The test runner's environment without the gateway's settings (defaults apply)."""
    return {key: value for key, value in os.environ.items() if not key.startswith("AGENTGATE_")}


def test_the_app_starts_without_the_lazy_libraries(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path), json.dumps(LAZY)],
        capture_output=True,
        text=True,
        timeout=120,
        env=_clean_env(),
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["at_start"] == [], f"imported at start, load them at first use instead: {seen['at_start']}"
    assert seen["webauthn"] and seen["dns"], "the stand-ins must load their library at first use"


def test_a_lazy_module_loads_at_first_attribute_and_finds_submodules() -> None:
    concurrent = lazy_module("concurrent")  # its package imports no submodule itself
    assert "not loaded" in repr(concurrent)
    assert concurrent.futures.ThreadPoolExecutor is not None
    assert "loaded" in repr(concurrent) and "not" not in repr(concurrent)
    with pytest.raises(AttributeError):
        _ = lazy_module("concurrent").no_such_submodule
    assert not hasattr(lazy_module("json"), "no_such_name")
