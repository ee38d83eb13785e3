"""Money as people read it on the pages: the precision the amount needs, and never a float.

``spend_text`` takes what usage costs, millionths of a minor unit (``cost_micros``): an amount of a
minor unit or more shows the currency's usual decimals (``25.00 EUR``, rounded half up, as invoices
round it); a smaller one, what a few requests cost, shows two significant digits (``0.0031 EUR``)
rather than a misleading ``0.00 EUR``; nothing is ``0.00 EUR``. ``minor_text`` takes whole minor
units (prices, invoices).
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from agent_server.billing.money import exponent

MICROS_PER_MINOR = 6  # digits: cost_micros are millionths of a minor unit


def _grouped(value: Decimal, places: int) -> str:
    return f"{value.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP):,.{places}f}"


def minor_text(amount_minor: int, currency: str) -> str:
    """``4900, "EUR"`` -> ``49.00 EUR``."""
    places = exponent(currency)
    return f"{_grouped(Decimal(amount_minor).scaleb(-places), places)} {currency}"


def spend_text(micros: int | float, currency: str) -> str:
    """``2_500_000_000, "EUR"`` -> ``25.00 EUR``; ``310_000`` -> ``0.0031 EUR``; ``0`` -> ``0.00 EUR``."""
    places = exponent(currency)
    value = Decimal(int(micros)).scaleb(-MICROS_PER_MINOR - places)
    one_minor = Decimal(1).scaleb(-places)
    if value == 0 or abs(value) >= one_minor:
        return f"{_grouped(value, places)} {currency}"
    digits = -value.adjusted() + 1  # decimals that show two significant digits
    shown = value.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)
    if abs(shown) >= one_minor:  # 0.0099 rounds up to a whole minor unit
        return f"{_grouped(shown, places)} {currency}"
    return f"{shown.normalize():f} {currency}"  # 0.000000010 reads 0.00000001
