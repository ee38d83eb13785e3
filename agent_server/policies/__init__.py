"""Request policies every surface applies: API versions, rate limits, idempotency and retry guidance."""
