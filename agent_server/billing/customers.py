"""The tenant's customer at the provider and its ``billing_accounts`` row (who pays, and with what card).

The customer is created once per tenant and provider, on the first billing action that needs one,
with the acting admin's e-mail and the tenant's name unless ``POST /<segment>/customer`` said
otherwise; its metadata carries the tenant id. The card on file is cached in the account
(brand, last4, expiry: nothing secret), refreshed by provider events and by checkouts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.exc import IntegrityError

from agent_server.billing.port import BillingProvider, CustomerDetails
from agent_server.billing.tables import BillingAccount
from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import NotFound
from agent_server.foundation.timeutil import utc
from agent_server.gateway.tables import Tenant, User
from agent_server.storage.db import Database


@dataclass(frozen=True)
class Who:
    """The admin acting on billing: the token's user and tenant, and where the request came from."""

    user_id: str
    tenant_id: str
    ip: str | None = None


class Customers:
    def __init__(self, db: Database, clock: Clock, provider: BillingProvider) -> None:
        self.db, self.clock, self.provider = db, clock, provider

    async def tenant(self, tenant_id: str) -> Tenant:
        async with self.db.session() as session:
            tenant = await session.get(Tenant, tenant_id)
        if tenant is None:
            raise NotFound("The tenant of this token no longer exists.")
        return tenant

    async def account(self, tenant_id: str) -> BillingAccount | None:
        async with self.db.session() as session:
            return await session.get(BillingAccount, tenant_id)

    async def ensure(self, who: Who, details: CustomerDetails | None = None) -> tuple[BillingAccount, bool]:
        """The tenant's account with a customer of the configured provider (created when missing, else
        updated with ``details``); True when the customer was created now."""
        tenant = await self.tenant(who.tenant_id)
        account = await self.account(who.tenant_id)
        existing = account.customer_id if account and account.provider == self.provider.name else None
        if existing and details is None:
            return account, False  # type: ignore[return-value]
        async with self.db.session() as session:
            user = await session.get(User, who.user_id)
        email = user.email if user else ""
        customer_id = await self.provider.ensure_customer(tenant.id, email, tenant.name, existing, details)
        return await self._link(tenant.id, customer_id), existing is None

    async def _link(self, tenant_id: str, customer_id: str) -> BillingAccount:
        now = utc(self.clock.now())
        for _ in range(2):  # a concurrent first link of the same tenant: the second attempt updates
            try:
                async with self.db.session() as session:
                    account = await session.get(BillingAccount, tenant_id)
                    if account is None:
                        account = BillingAccount(
                            tenant_id=tenant_id, provider=self.provider.name, updated_at=now
                        )
                        session.add(account)
                    if account.provider != self.provider.name:
                        account.provider, account.payment_method = self.provider.name, None
                    account.customer_id, account.updated_at = customer_id, now
                return account
            except IntegrityError:
                continue
        raise RuntimeError("billing account could not be linked")  # pragma: no cover - two races in a row

    async def card(self, account: BillingAccount | None) -> dict[str, Any] | None:
        """The card on file: the cached one, else asked of the provider once and cached."""
        if account is None or account.customer_id is None or account.provider != self.provider.name:
            return None
        if account.payment_method:
            return account.payment_method
        card = await self.provider.payment_method(account.customer_id)
        if card is not None:
            await self.remember_card(account.tenant_id, card)
        return card

    async def refresh_card(self, tenant_id: str) -> None:
        """Ask the provider for the card on file again (after a checkout attached a new one)."""
        account = await self.account(tenant_id)
        if account is not None and account.customer_id and account.provider == self.provider.name:
            card = await self.provider.payment_method(account.customer_id)
            if card is not None:
                await self.remember_card(tenant_id, card)

    async def remember_card(self, tenant_id: str, card: dict[str, Any]) -> None:
        async with self.db.session() as session:
            account = await session.get(BillingAccount, tenant_id)
            if account is not None:
                account.payment_method, account.updated_at = card, utc(self.clock.now())
