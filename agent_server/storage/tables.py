"""Imports every table module, so SQLModel.metadata is complete for Alembic and tests."""

from agent_server.accounts import passkey_tables  # noqa: F401
from agent_server.accounts import tables as account_tables  # noqa: F401
from agent_server.agent_auth import tables as agent_auth_tables  # noqa: F401
from agent_server.billing import tables as billing_tables  # noqa: F401
from agent_server.commerce import tables as commerce_tables  # noqa: F401
from agent_server.files import tables as file_tables  # noqa: F401  (and the batch tables)
from agent_server.gateway import response_tables  # noqa: F401
from agent_server.gateway import tables as gateway_tables  # noqa: F401
from agent_server.llm import tables as llm_tables  # noqa: F401
from agent_server.mail import tables as mail_tables  # noqa: F401
from agent_server.oauth import tables as oauth_tables  # noqa: F401
from agent_server.reminders import tables as reminder_tables  # noqa: F401
from agent_server.site import tables as site_tables  # noqa: F401
from agent_server.storage import records  # noqa: F401
from agent_server.webhooks import tables as webhook_tables  # noqa: F401
