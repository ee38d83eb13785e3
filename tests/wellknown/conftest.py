"""Helpers of the discovery, versioning and probe tests: the published JSON Schemas and an app with
a version registry that holds a deprecated and a retired version besides the current one."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
from fastapi import FastAPI

from agent_server.foundation.clock import ManualClock
from agent_server.foundation.settings import Settings
from agent_server.policies.versions import CURRENT_VERSION, ApiVersion, VersionRegistry
from http_facade.app import create_app
from tests.conftest import BASE_URL, running

SCHEMAS = Path(__file__).parent / "schemas"
NOW = datetime.fromtimestamp(ManualClock().now(), tz=UTC)  # the manual clock's start
DEPRECATED = "2025-11-01"  # deprecated 60 days ago, retires in 300 days
ENDING = "2025-09-01"  # deprecated long ago, retires in 10 days: the month-11 warning
RETIRED = "2025-01-01"  # its sunset has passed


def schema_validator(name: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    if name == "mcp-server-card":  # the published file has no root; its card is a $def
        schema = {"$ref": "#/$defs/ServerCard", "$defs": schema["$defs"]}
    return jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())


def make_versions() -> VersionRegistry:
    return VersionRegistry(
        [
            ApiVersion(CURRENT_VERSION),
            ApiVersion(
                DEPRECATED,
                "deprecated",
                deprecated_at=NOW - timedelta(days=60),
                sunset_at=NOW + timedelta(days=300),
                successor=CURRENT_VERSION,
            ),
            ApiVersion(
                ENDING,
                "deprecated",
                deprecated_at=NOW - timedelta(days=355),
                sunset_at=NOW + timedelta(days=10),
                successor=CURRENT_VERSION,
            ),
            ApiVersion(
                RETIRED,
                "deprecated",
                deprecated_at=NOW - timedelta(days=400),
                sunset_at=NOW - timedelta(days=35),
                successor=CURRENT_VERSION,
            ),
        ]
    )


@pytest.fixture
async def versioned_app(settings: Settings, clock: ManualClock) -> AsyncIterator[FastAPI]:
    async with running(create_app(settings, clock=clock, versions=make_versions())) as application:
        yield application


@pytest.fixture
async def versioned(versioned_app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(versioned_app)
    async with httpx.AsyncClient(transport=transport, base_url=BASE_URL) as c:
        yield c


@pytest.fixture
def https_settings(tmp_path: Path) -> Settings:
    """Settings of a deployment behind HTTPS: RFC 8414 and RFC 9728 want an https issuer/resource."""
    return Settings(
        data_dir=tmp_path,
        public_base_url="https://api.agentgate.example",
        allowed_hosts=["api.agentgate.example", "127.0.0.1:*"],
        redis_url=None,
        database_url=None,
    )


@pytest.fixture
async def https_client(https_settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    async with running(create_app(https_settings)) as application:
        transport = httpx.ASGITransport(application)
        async with httpx.AsyncClient(transport=transport, base_url="https://api.agentgate.example") as c:
            yield c


def json_of(response: httpx.Response) -> Any:
    assert response.status_code == 200, response.text
    return response.json()
