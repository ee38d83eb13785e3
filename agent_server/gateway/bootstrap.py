"""First start: the platform admin from AGENTGATE_ADMIN_EMAIL/PASSWORD, a demo tenant and (sandbox) a key.

Runs at every start and does nothing once the admin exists. The demo tenant, the admin and the demo
key are created in one transaction, so when several workers start at once exactly one of them
creates (and prints) them and the others find them. The key goes to stdout, never to a log.
"""

from __future__ import annotations

import logging
import shutil
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from agent_server.accounts.password_policy import PasswordPolicy
from agent_server.accounts.roles import OWNER
from agent_server.capabilities.services import Services
from agent_server.foundation.errors import ValidationFailed
from agent_server.foundation.settings import DEMO_PASSWORD, Settings
from agent_server.gateway import repository as repo
from agent_server.gateway.passwords import hash_password
from agent_server.gateway.tables import PlanRecord

log = logging.getLogger("agentgate.gateway")
DEMO_TENANT = "Demo"
DEMO_PLAN = "professional"
DEMO_SCOPES = ["chat", "models"]
BOOTSTRAP_PERMISSIONS = ["platform:admin", "tenant:admin"]
LOOPBACK_ADDRESSES = frozenset({"127.0.0.1", "::1"})


async def bootstrap(services: Services) -> None:
    settings = services.settings
    if not settings.admin_email or settings.admin_password is None:
        return
    email = settings.admin_email.strip().lower()
    login = f"{email} / {_shown_password(settings.admin_password.get_secret_value())}"
    existing = await repo.find_user(services.db, email)
    if existing is not None:
        if settings.sandbox:
            _say(
                f"agentgate demo: tenant {existing.tenant_id}, admin login {login}.\n"
                f"  dashboard    {dashboard_url(settings)}\n"
                "  The demo API key was printed at first start; create another with:\n"
                f"  {cli_command()} keys create --tenant {existing.tenant_id} --scopes chat,models --name demo"
            )
        return
    password_hash = await _admin_password_hash(services, email)
    now = services.clock.now()
    full_key: str | None = None
    try:
        async with services.db.session() as session:
            plan = await session.get(PlanRecord, DEMO_PLAN)
            if plan is None:  # a content pack without the usual plan: take any
                plan = (await session.execute(select(PlanRecord).order_by(PlanRecord.id))).scalars().first()
            assert plan is not None, "plans are seeded before bootstrap"
            tenant = repo.new_tenant(now, DEMO_TENANT, plan)
            session.add(tenant)
            await session.flush()  # the tenant row first: without relationships the FKs set no order
            user = repo.new_user(now, tenant.id, email, password_hash, BOOTSTRAP_PERMISSIONS, OWNER)
            session.add(user)
            if settings.sandbox:
                key, full_key = repo.new_key(now, tenant.id, "demo", DEMO_SCOPES, "test")
                session.add(key)
    except IntegrityError:
        # Another worker created them a moment ago (or a tenant named Demo exists already).
        log.info("bootstrap: admin %s already being created elsewhere", email)
        return
    log.info("bootstrap: created tenant %s and platform admin %s", tenant.id, email)
    if full_key is not None:
        base = settings.public_base_url.rstrip("/")
        _say(
            "\n".join(
                [
                    "=" * 72,
                    "agentgate demo (sandbox mode), created at this first start:",
                    f"  tenant       {tenant.name} ({tenant.id}), plan {plan.id}",
                    f"  admin login  {login}",
                    f"  dashboard    {dashboard_url(settings)}  (in a browser; passkeys work there too)",
                    f"  demo API key {full_key}",
                    "  The key is shown only this once; only its digest is stored. Try:",
                    f"  curl {base}/v1/chat/completions -H 'Authorization: Bearer {full_key}' \\",
                    '    -H \'Content-Type: application/json\' -d \'{"model": "agentgate-mock-small", '
                    '"messages": [{"role": "user", "content": "Hello"}]}\'',
                    f"  Organisations register themselves: GET {base}/register describes how.",
                    *_mail_line(settings),
                    "=" * 72,
                ]
            )
        )


async def _admin_password_hash(services: Services, email: str) -> str:
    """The same rule as every other password: a refused one stops the start. The one exception is the
    published demo password in sandbox mode, which `make run` supplies; production refuses it at start
    (settings.py) and the rule refuses it everywhere else."""
    settings = services.settings
    assert settings.admin_password is not None
    password = settings.admin_password.get_secret_value()
    if settings.sandbox and password == DEMO_PASSWORD:
        return await hash_password(password)
    try:
        return await PasswordPolicy(settings, lambda: services.http).hash_new(
            password, user_inputs=[email, DEMO_TENANT]
        )
    except ValidationFailed as exc:
        raise ValueError(f"AGENTGATE_ADMIN_PASSWORD: {exc.message}") from None


def dashboard_url(settings: Settings) -> str:
    """The dashboard as a browser should open it: a loopback address as ``localhost``, where browsers
    allow passkeys (they refuse them on an IP address); the same server answers both."""
    parts = urlsplit(settings.public_base_url.rstrip("/"))
    host = parts.hostname or ""
    if host in LOOPBACK_ADDRESSES:
        port = f":{parts.port}" if parts.port else ""
        parts = parts._replace(netloc=f"localhost{port}")
    return f"{urlunsplit(parts)}/app"


def cli_command() -> str:
    """How to run the command line from here: ``agentgate`` when that is the one on PATH, else the
    path it was started by (``.venv/bin/agentgate`` after ``make run``, whose venv is not activated)."""
    started = sys.argv[0] if sys.argv else ""
    if Path(started).name != "agentgate":
        return "agentgate"
    on_path = shutil.which("agentgate")
    if on_path is not None and Path(on_path).resolve() == Path(started).resolve():
        return "agentgate"
    return started


def _shown_password(password: str) -> str:
    """The demo password itself; an operator's own is never printed."""
    return DEMO_PASSWORD if password == DEMO_PASSWORD else "the password in AGENTGATE_ADMIN_PASSWORD"


def _mail_line(settings: Settings) -> list[str]:
    if settings.smtp_url is not None:
        return []
    outbox = settings.data_dir / "outbox"
    return [
        f"  Mail (verification and reset links) goes to {outbox} (copy links from its .txt files) and the log."
    ]


def _say(text: str) -> None:
    print(text, file=sys.stdout, flush=True)
