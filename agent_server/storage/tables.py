"""Imports every table module, so SQLModel.metadata is complete for Alembic and tests."""

from agent_server.storage import records  # noqa: F401
