"""Our SAML service provider's addresses for one tenant, which every SAML module passes around.

Apart from ``saml.py`` so that the modules it loads on first use (``saml_client``, ``saml_metadata``,
``saml_response``) need not import it back.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SpEndpoints:
    """Our service provider for one tenant: what its IdP is told about us."""

    entity_id: str
    acs_url: str

    @classmethod
    def of(cls, public_base_url: str, tenant_id: str) -> SpEndpoints:
        base = f"{public_base_url.rstrip('/')}/sso/saml/{tenant_id}"
        return cls(entity_id=f"{base}/metadata", acs_url=f"{base}/acs")

    def view(self) -> dict[str, str]:
        # The entity id is also where our metadata is served.
        return {"entity_id": self.entity_id, "acs_url": self.acs_url, "metadata_url": self.entity_id}
