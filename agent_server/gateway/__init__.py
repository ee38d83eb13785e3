"""The tenant gateway: identity (tenants, users, keys, JWT), plans, rate limits and usage."""
