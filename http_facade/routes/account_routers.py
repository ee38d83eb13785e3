"""Every router of the accounts surface (registration, sign-in, passkeys, single sign-on), for ``create_app``."""

from __future__ import annotations

from http_facade.routes import account_passkeys, admin_sso, sso_oidc, sso_saml

ACCOUNT_ROUTERS = (
    account_passkeys.router,
    admin_sso.router,
    sso_oidc.router,
    sso_saml.router,
)
