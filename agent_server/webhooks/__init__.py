"""Signed, durable webhooks: endpoints, a delivery queue in the database and a leased worker."""
