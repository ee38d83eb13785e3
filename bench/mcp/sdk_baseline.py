"""The anchor of bench/mcp: the bare SDK (mcp 2.x MCPServer, stateless + JSON) at /api/mcp.php in FastAPI.

Same tool name and a result of similar size as agentgate's get_company_info, none of agentgate's
middleware, registry or logging: the difference between the two runs is our cost.

    .venv/bin/uvicorn --app-dir bench/mcp sdk_baseline:app --port 8790 --log-level warning
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from fastapi import FastAPI
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import BaseModel

mcp = MCPServer("sdk-baseline", version="1", log_level="WARNING")


class Company(BaseModel):
    name: str
    legal_name: str
    tagline: str
    description: str
    founded: int
    website: str
    languages: list[str]


COMPANY = Company(
    name="agentgate",
    legal_name="Agentgate Labs GmbH",
    tagline="One secure gateway for every model your company uses.",
    description="An OpenAI-compatible gateway with tenants, keys, plans and an agent-first public API. " * 4,
    founded=2024,
    website="https://agentgate.example",
    languages=["en", "de"],
)


@mcp.tool()
async def get_company_info() -> Company:
    """Get the company's name, description, address, contacts and leadership."""
    return COMPANY


security = TransportSecuritySettings(allowed_hosts=["127.0.0.1:*", "localhost:*"], allowed_origins=[])
sub_app = mcp.streamable_http_app(
    streamable_http_path="/api/mcp.php", stateless_http=True, json_response=True, transport_security=security
)


@contextlib.asynccontextmanager
async def lifespan(_: FastAPI) -> AsyncIterator[None]:
    async with mcp.session_manager.run():
        yield


app = FastAPI(lifespan=lifespan)
app.router.routes.extend(sub_app.routes)


@app.get("/api/mcp.php/ready")
async def ready() -> dict[str, bool]:
    return {"ready": True}
