"""Every router of the accounts surface (registration, sign-in, passkeys, members, single sign-on), for
``create_app``."""

from __future__ import annotations

from http_facade.routes import (
    account_auth,
    account_passkeys,
    admin_members,
    admin_oauth_apps,
    admin_sso,
    register,
    sso_oidc,
    sso_saml,
)

ACCOUNT_ROUTERS = (
    register.router,
    account_auth.router,
    account_passkeys.router,
    admin_members.router,
    admin_oauth_apps.router,
    admin_sso.router,
    sso_oidc.router,
    sso_saml.router,
)
