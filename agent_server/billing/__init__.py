"""Billing on a payment provider (docs/billing.md): the provider port (port.py) with its sandbox and
Stripe adapters, tenants' plan checkouts and one-off purchases, the public site's checkout, provider
events applied once, trials that end, usage billed. ``wiring.build_billing`` puts it together.
"""
