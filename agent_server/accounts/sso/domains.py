"""E-mail domains a tenant claims and proves with a DNS TXT record; verified ones route its SSO users.

The record's value is derived from the tenant and the domain (an HMAC under the server's secret),
so a tenant's record never changes however often it claims again. Every tenant's claim is a row of
its own (tenant, domain): a claim that is not verified yet blocks nobody and is touched by nobody
else (squatting a domain one cannot prove would otherwise be free, and another tenant's claim must
not erase it). Whoever publishes their record and verifies first holds the domain; a unique index
over verified rows decides a race. The other claims then fail with 409 ``domain_taken`` at
verification, and a verified domain cannot be claimed by another tenant until its holder deletes it.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from agent_server.accounts.sso.dns_txt import txt_values
from agent_server.accounts.sso.enforcement import keep_enforceable
from agent_server.accounts.tables import TenantDomain
from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import Conflict, NotFound, ValidationFailed
from agent_server.foundation.settings import Settings
from agent_server.foundation.timeutil import utc
from agent_server.storage.db import Database

MAX_DOMAINS_PER_TENANT = 20
VERIFIED = TenantDomain.verified_at.is_not(None)  # type: ignore[union-attr]
_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")


def normalise_domain(text: str) -> str:
    """Lower-case ASCII (IDNA for international names), no trailing dot; 400 for anything else."""
    problem = ValidationFailed(
        f"{text[:260]!r} is not a domain name such as example.com.", code="invalid_domain", param="domain"
    )
    name = text.strip().rstrip(".").lower()
    try:
        name = name.encode("idna").decode("ascii")
    except UnicodeError:
        raise problem from None
    labels = name.split(".")
    if len(name) > 253 or len(labels) < 2 or labels[-1].isdigit() or not all(map(_LABEL.match, labels)):
        raise problem
    return name


def claimed_name(text: str) -> str:
    """A domain named in a path: one that is not a domain name is not claimed either (404)."""
    try:
        return normalise_domain(text)
    except ValidationFailed:
        raise NotFound(f"This organisation has no claim of {text[:260]!r}.", param="domain") from None


def taken(domain: str) -> Conflict:
    return Conflict(f"{domain} is verified by another organisation.", code="domain_taken", param="domain")


@dataclass(frozen=True, slots=True)
class TxtRecord:
    name: str
    value: str

    def view(self) -> dict[str, str]:
        return {"type": "TXT", "name": self.name, "value": self.value}


class DomainClaims:
    def __init__(self, db: Database, clock: Clock, settings: Settings, secret: bytes) -> None:
        self.db, self.clock, self._secret = db, clock, secret
        self.nameservers = list(settings.dns_nameservers)
        self.label = re.sub(r"[^a-z0-9-]+", "-", settings.service_name.lower()).strip("-")[:40] or "agentgate"

    def token_for(self, tenant_id: str, domain: str) -> str:
        message = f"sso-domain\0{tenant_id}\0{domain}".encode()
        return hmac.new(self._secret, message, hashlib.sha256).hexdigest()[:40]

    def record(self, row: TenantDomain) -> TxtRecord:
        return TxtRecord(
            f"_{self.label}-verification.{row.domain}", f"{self.label}-verification={row.verification_token}"
        )

    async def of_tenant(self, tenant_id: str) -> list[TenantDomain]:
        query = select(TenantDomain).where(TenantDomain.tenant_id == tenant_id).order_by(TenantDomain.domain)
        async with self.db.session() as session:
            return list((await session.execute(query)).scalars())

    @staticmethod
    async def _holder(session: AsyncSession, domain: str) -> str | None:
        """The tenant that verified ``domain``, if any."""
        return await session.scalar(
            select(TenantDomain.tenant_id).where(TenantDomain.domain == domain, VERIFIED)
        )

    async def claim(self, tenant_id: str, text: str) -> tuple[TenantDomain, bool]:
        """(the tenant's claim of the domain, whether this call made it)."""
        domain = normalise_domain(text)
        try:
            async with self.db.session() as session:
                if await self._holder(session, domain) not in (None, tenant_id):
                    raise taken(domain)
                row = await session.get(TenantDomain, (domain, tenant_id))
                if row is not None:
                    return row, False
                count = await session.scalar(
                    select(func.count()).select_from(TenantDomain).where(TenantDomain.tenant_id == tenant_id)
                )
                if (count or 0) >= MAX_DOMAINS_PER_TENANT:
                    raise ValidationFailed(
                        f"An organisation can claim at most {MAX_DOMAINS_PER_TENANT} domains; delete one first.",
                        code="too_many_domains",
                        param="domain",
                    )
                row = TenantDomain(
                    domain=domain,
                    tenant_id=tenant_id,
                    verification_token=self.token_for(tenant_id, domain),
                    created_at=utc(self.clock.now()),
                )
                session.add(row)
                await session.flush()
        except IntegrityError:  # the same tenant claimed the same domain at the same moment
            raise Conflict(f"{domain} was claimed at this moment; try again.", param="domain") from None
        return row, True

    async def verify(self, tenant_id: str, text: str) -> TenantDomain:
        """Look the claim's TXT record up; mark the domain verified when it is there."""
        domain = claimed_name(text)
        async with self.db.session() as session:
            row = await session.get(TenantDomain, (domain, tenant_id))
            holder = await self._holder(session, domain)
        if holder is not None and holder != tenant_id:
            raise taken(domain)
        if row is None:
            raise NotFound(
                f"This organisation has no claim of {domain}; claim it with POST /admin/sso/domains.",
                param="domain",
            )
        if row.verified_at is not None:
            return row
        record = self.record(row)
        if record.value not in await txt_values(record.name, self.nameservers):
            raise ValidationFailed(
                f"No TXT record {record.name} with the value {record.value} was found. Publish it at your "
                "DNS provider, wait for it to appear, then verify again.",
                code="domain_record_missing",
                param="domain",
                extra={"record": record.view()},
            )
        try:
            async with self.db.session() as session:
                row = await session.get(TenantDomain, (domain, tenant_id))
                if row is None:
                    raise NotFound(f"The claim of {domain} was deleted meanwhile.", param="domain")
                if row.verified_at is None:
                    if await self._holder(session, domain) is not None:
                        raise taken(domain)
                    row.verified_at = utc(self.clock.now())
                    await session.flush()
        except IntegrityError:  # another tenant's verification of the domain committed first
            raise taken(domain) from None
        return row

    async def remove(self, tenant_id: str, text: str) -> None:
        domain = claimed_name(text)
        async with self.db.session() as session:
            row = await session.get(TenantDomain, (domain, tenant_id))
            if row is None:
                raise NotFound(f"This organisation has no claim of {domain}.", param="domain")
            await session.delete(row)
            await keep_enforceable(session, tenant_id, f"deleting {domain}")
