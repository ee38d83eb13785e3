"""Payments of the public site: fixed-fee checkout behind a ``PaymentProvider`` (provider.py).

The sandbox provider charges nothing; a real provider (a later issue) implements the same Protocol
and is chosen in ``agent_server.site.build`` from settings.
"""
