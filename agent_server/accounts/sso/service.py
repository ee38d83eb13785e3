"""The single sign-on services of an app, built on first use from its ``Accounts`` and kept with it."""

from __future__ import annotations

from agent_server.accounts.service import Accounts
from agent_server.accounts.sso.connections import Connections
from agent_server.accounts.sso.domains import DomainClaims
from agent_server.accounts.sso.id_token import IdTokenValidator
from agent_server.accounts.sso.oidc import OidcSignIn
from agent_server.accounts.sso.oidc_metadata import IssuerDirectory
from agent_server.accounts.sso.outbound import ProviderHttp
from agent_server.gateway.tokens import signing_secret
from agent_server.webhooks.url_guard import UrlGuard

EXTRAS_KEY = "sso"


class Sso:
    def __init__(self, accounts: Accounts) -> None:
        settings, clock = accounts.settings, accounts.clock
        self.http = ProviderHttp(UrlGuard.for_mode(settings.sandbox))
        # Per process: discovery documents and key sets are cached here (oidc_metadata.py).
        self.directory = IssuerDirectory(self.http, clock)
        self.id_tokens = IdTokenValidator(self.directory, clock)
        self.connections = Connections(accounts.db, clock, accounts.box, self.directory)
        self.domains = DomainClaims(accounts.db, clock, settings, signing_secret(settings))
        self.oidc = OidcSignIn(
            settings=settings,
            db=accounts.db,
            kv=accounts.kv,
            clock=clock,
            box=accounts.box,
            sessions=accounts.sessions,
            limiter=accounts.limiter,
            http=self.http,
            directory=self.directory,
            id_tokens=self.id_tokens,
            catalog=accounts.gateway.catalog,
        )


def sso_of(accounts: Accounts) -> Sso:
    """The app's ``Sso``, made once (an app has one ``Accounts`` and one ``Services``)."""
    extras = accounts.services.extras
    if EXTRAS_KEY not in extras:
        extras[EXTRAS_KEY] = Sso(accounts)
    return extras[EXTRAS_KEY]
