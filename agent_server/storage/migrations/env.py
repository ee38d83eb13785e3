"""Alembic environment: runs on the connection handed over by agent_server.storage.migrate."""

from __future__ import annotations

from alembic import context
from sqlmodel import SQLModel

from agent_server.storage import tables  # noqa: F401  (registers every table on the metadata)

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=SQLModel.metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
