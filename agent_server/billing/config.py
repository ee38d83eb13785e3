"""The configured payment provider, built once per app (``services.extras``), and its start-up checks."""

from __future__ import annotations

from agent_server.billing.port import BillingProvider
from agent_server.capabilities.services import Services
from agent_server.foundation.errors import DeploymentError
from agent_server.foundation.settings import Settings

PROVIDER_KEY = "billing.provider"


def check_billing(settings: Settings) -> None:
    """Production takes money: the sandbox provider there is refused unless explicitly allowed, and
    the real provider needs its API key and webhook secret."""
    if settings.billing_provider == "sandbox":
        if not settings.sandbox and not settings.billing_allow_sandbox_in_production:
            raise DeploymentError(
                "AGENTGATE_BILLING_PROVIDER=sandbox in production mode would sell without charging anyone. "
                "Set AGENTGATE_BILLING_PROVIDER=stripe with AGENTGATE_STRIPE_API_KEY and "
                "AGENTGATE_STRIPE_WEBHOOK_SECRET, or AGENTGATE_BILLING_ALLOW_SANDBOX_IN_PRODUCTION=true "
                "to run the sandbox provider on purpose (docs/billing.md)."
            )
        return
    missing = [
        variable
        for field, variable in (
            ("stripe_api_key", "AGENTGATE_STRIPE_API_KEY"),
            ("stripe_webhook_secret", "AGENTGATE_STRIPE_WEBHOOK_SECRET"),
        )
        if getattr(settings, field) is None
    ]
    if missing:
        raise DeploymentError(
            f"AGENTGATE_BILLING_PROVIDER=stripe needs {' and '.join(missing)} (docs/billing.md)."
        )


def billing_provider(services: Services) -> BillingProvider:
    """The app's provider, built on first use: the sandbox (its pages under ``/<segment>/sandbox``) or
    Stripe (the SDK is imported only then)."""
    existing = services.extras.get(PROVIDER_KEY)
    if existing is not None:
        return existing
    settings = services.settings
    check_billing(settings)
    provider: BillingProvider
    if settings.billing_provider == "stripe":
        from agent_server.billing.stripe_adapter import StripeProvider

        assert settings.stripe_api_key is not None and settings.stripe_webhook_secret is not None
        provider = StripeProvider(
            settings.stripe_api_key.get_secret_value(),
            settings.stripe_webhook_secret.get_secret_value(),
            services.clock,
            api_base=settings.stripe_api_base,
            tolerance=settings.billing_webhook_tolerance_seconds,
        )
    else:
        from agent_server.billing.sandbox.provider import SandboxProvider

        pages = f"{settings.public_base_url.rstrip('/')}/{settings.billing_path_segment}/sandbox"
        provider = SandboxProvider(
            services.db,
            services.clock,
            settings.data_dir,
            pages,
            tolerance=settings.billing_webhook_tolerance_seconds,
        )
    services.extras[PROVIDER_KEY] = provider
    return provider
