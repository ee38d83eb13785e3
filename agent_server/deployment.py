"""Start-up checks of a deployment's shape (docs/deployment.md), run by ``agentgate serve``,
``agentgate worker`` and ``create_app``.

- Secrets that every process must share (admin JWTs, chat tokens, connector encryption) are
  generated into ``data_dir`` when unset. That is right for one host; with a database URL set the
  deployment may span hosts, each of which would generate its own: tokens issued by one host
  would fail on another and connector secrets encrypted on one could not be read on another.
  Production mode therefore refuses to start; sandbox mode warns.
- Several worker processes without Redis would each count limits on their own (the in-memory KV is
  per process), so ``--workers N > 1`` needs ``AGENTGATE_REDIS_URL``.
"""

from __future__ import annotations

import logging

from agent_server.foundation.settings import Settings

log = logging.getLogger("agentgate.deployment")
SHARED_SECRETS = {
    "jwt_secret": "AGENTGATE_JWT_SECRET",
    "chat_token_secret": "AGENTGATE_CHAT_TOKEN_SECRET",
    "encryption_key": "AGENTGATE_ENCRYPTION_KEY",
}


class DeploymentError(RuntimeError):
    """The configuration cannot run safely as asked; the message says what to set."""


def missing_shared_secrets(settings: Settings) -> list[str]:
    """Variables whose value this deployment would generate per host although hosts share a database."""
    if not settings.database_url:
        return []
    return [variable for field, variable in SHARED_SECRETS.items() if getattr(settings, field) is None]


def check_deployment(settings: Settings, *, workers: int = 1) -> None:
    """Raise ``DeploymentError`` for a deployment that would break guarantees; warn for risky ones."""
    if workers > 1 and not settings.redis_url:
        raise DeploymentError(
            f"--workers {workers} needs AGENTGATE_REDIS_URL: without Redis every worker process would "
            "keep its own rate-limit counters, idempotency waits and job queue. Run one worker, or set Redis."
        )
    missing = missing_shared_secrets(settings)
    if missing:
        message = (
            f"{', '.join(missing)} unset while AGENTGATE_DATABASE_URL is set: each host would generate its "
            "own secret in its data dir, so admin tokens, chat tokens or connector secrets made on one host "
            "would not work on another. Set the same values on every process (docs/deployment.md)."
        )
        if not settings.sandbox:
            raise DeploymentError(message)
        log.warning("%s (sandbox mode: starting anyway)", message)
    # A malformed mail setting stops the start here, as one clear line, not at the first send.
    from agent_server.mail.config import sender_address
    from agent_server.mail.service import build_transport

    build_transport(settings)
    sender_address(settings)
    from agent_server.billing.config import check_billing  # the sandbox provider in production, ...

    check_billing(settings)
    from agent_server.accounts.transport import check_base_url  # plain http in production

    if (refusal := check_base_url(settings)) is not None:
        raise DeploymentError(refusal)
    if settings.database_url and not settings.redis_url:
        log.warning(
            "AGENTGATE_DATABASE_URL without AGENTGATE_REDIS_URL: rate limits, chat limits and the job "
            "queue are per process; run a single process or set Redis (docs/deployment.md)."
        )
