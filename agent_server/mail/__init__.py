"""Outgoing mail: a durable outbox in the database, sent by a worker over SMTP or into a folder."""
