"""DNS TXT look-ups for domain verification (dnspython), against the configured or system resolvers."""

from __future__ import annotations

from agent_server.foundation.errors import ValidationFailed
from agent_server.foundation.lazy import lazy_module

dns = lazy_module("dns")  # dnspython loads at the first look-up (a domain check, a webhook target)

LOOKUP_SECONDS = 5.0


def nameserver(text: str) -> dns.nameserver.Do53Nameserver:
    """``ip``, ``ip:port`` or ``[ipv6]:port`` (settings.dns_nameservers)."""
    host, port = text, 53
    if text.startswith("[") and "]:" in text:
        host, _, port_text = text[1:].partition("]:")
        port = int(port_text)
    elif text.count(":") == 1:
        host, _, port_text = text.partition(":")
        port = int(port_text)
    return dns.nameserver.Do53Nameserver(host.strip("[]"), port)


def resolver(nameservers: list[str]) -> dns.asyncresolver.Resolver:
    found = dns.asyncresolver.Resolver(configure=not nameservers)
    if nameservers:
        found.nameservers = [nameserver(text) for text in nameservers]
    found.lifetime = LOOKUP_SECONDS
    return found


async def txt_values(name: str, nameservers: list[str]) -> list[str]:
    """The TXT strings published at ``name`` (a record's pieces joined); [] when there are none."""
    try:
        answer = await resolver(nameservers).resolve(name, "TXT", search=False)
    except (dns.resolver.NXDOMAIN, dns.resolver.NoAnswer):
        return []
    except dns.exception.DNSException as exc:
        raise ValidationFailed(
            f"The DNS look-up of {name} failed ({type(exc).__name__}); try again in a few minutes.",
            code="dns_lookup_failed",
            param="domain",
        ) from None
    return [b"".join(record.strings).decode("utf-8", "replace") for record in answer]
