"""Money as integer minor units with a currency: converted from the content pack's decimals once."""

from __future__ import annotations

from decimal import Decimal

# ISO 4217 currencies without the usual two decimals; every other currency has two.
_EXPONENTS = {"JPY": 0, "KRW": 0, "CLP": 0, "ISK": 0, "VND": 0, "BHD": 3, "KWD": 3, "JOD": 3, "OMR": 3}


def exponent(currency: str) -> int:
    return _EXPONENTS.get(currency.upper(), 2)


def to_minor(amount: float | int | str | Decimal, currency: str) -> int:
    """``49.0 EUR`` -> ``4900``. The decimal is read from its text, so 0.1 stays exactly 10 cents; an
    amount finer than the currency's minor unit is refused rather than rounded."""
    scaled = Decimal(str(amount)).scaleb(exponent(currency))
    if scaled != scaled.to_integral_value():
        raise ValueError(f"{amount} {currency} is not a whole number of minor units")
    return int(scaled)


def decimal_text(amount_minor: int, currency: str) -> str:
    """``350000 EUR`` -> ``"3500.00"``: the display form, never used to compute."""
    places = exponent(currency)
    return f"{Decimal(amount_minor).scaleb(-places):.{places}f}"
