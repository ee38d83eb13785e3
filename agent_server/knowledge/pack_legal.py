"""The content pack's legal pages and tax table (``legal.yaml``, ``tax.yaml``): the terms of use and
the privacy policy the site shows at ``/terms`` and ``/privacy`` (and checkout sessions link to), and
the VAT rate per destination country that billing's price book applies next to its prices."""

from __future__ import annotations

from decimal import Decimal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LegalSection(_Strict):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")  # the section's anchor on the page
    heading: str = Field(min_length=1)
    paragraphs: list[str] = Field(min_length=1)


class LegalDocument(_Strict):
    title: str = Field(min_length=1)
    updated: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$")
    summary: str = Field(min_length=1)
    sections: list[LegalSection] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_anchors(self) -> LegalDocument:
        ids = [section.id for section in self.sections]
        if len(set(ids)) != len(ids):
            raise ValueError("section ids must be unique")
        return self


class TaxRate(_Strict):
    country: str = Field(pattern=r"^[A-Z]{2}$", description="ISO 3166-1 alpha-2")
    name: str = Field(min_length=1, description="as the buyer reads it, e.g. 'VAT (Germany)'")
    rate: Decimal = Field(ge=0, lt=1, description="a fraction: 0.19 for 19 %")

    @property
    def percent(self) -> str:
        """``0.19`` -> ``"19 %"``, ``0.255`` -> ``"25.5 %"``."""
        return f"{(self.rate * 100).normalize():f} %"


class TaxTable(_Strict):
    rates: list[TaxRate]

    @model_validator(mode="after")
    def _one_rate_per_country(self) -> TaxTable:
        seen: set[str] = set()
        for rate in self.rates:
            if rate.country in seen:
                raise ValueError(f"country '{rate.country}' is listed twice")
            seen.add(rate.country)
        return self

    def of(self, country: str | None) -> TaxRate | None:
        """The rate for a destination country; None: not taxed here (outside the table, or unknown)."""
        if not country:
            return None
        return next((rate for rate in self.rates if rate.country == country.upper()), None)
