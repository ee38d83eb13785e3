"""Agent discovery documents, each checked by the validator real clients use."""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path

import httpx
import pytest
import yaml
from a2a.client.card_resolver import parse_agent_card
from a2a.compat.v0_3.types import AgentCard as AgentCardV03
from a2a.types.a2a_pb2 import AgentCard
from a2a.utils.proto_utils import validate_proto_required_fields
from fastapi import FastAPI
from fastapi.routing import iter_route_contexts
from google.protobuf.json_format import ParseDict
from skills_ref import validate as validate_skill_dir

from tests.wellknown.conftest import json_of, schema_validator
from wellknown.mcp import CARD_PATHS

LINKSET = 'application/linkset+json; profile="https://www.rfc-editor.org/info/rfc9727"'


def tool_names(app: FastAPI) -> set[str]:
    return {t.name for t in app.state.registry.tools}


async def test_api_catalog_is_an_rfc9727_linkset(client: httpx.AsyncClient, app: FastAPI) -> None:
    response = await client.get("/.well-known/api-catalog")
    doc = json_of(response)
    assert response.headers["content-type"] == LINKSET
    schema_validator("linkset").validate(doc)
    api, mcp, acp = doc["linkset"]  # acp: the Agentic Commerce Protocol (tests/commerce)
    assert acp["anchor"] == "http://127.0.0.1:8000/agentic_commerce"
    assert api["service-desc"][0]["href"] == "http://127.0.0.1:8000/openapi.json"
    assert api["service-doc"] and api["service-meta"]
    paths = {c.path_format for c in iter_route_contexts(app.routes)}
    status = "/api/status.php" if "/api/status.php" in paths else "/health"
    assert api["status"][0]["href"] == f"http://127.0.0.1:8000{status}"
    assert mcp["anchor"] == "http://127.0.0.1:8000/api/mcp.php"
    for context in doc["linkset"]:  # every link is served
        for relation, targets in context.items():
            if relation != "anchor":
                for target in targets:
                    assert (await client.get(target["href"])).status_code == 200, target


async def test_api_catalog_head_carries_the_api_catalog_link(client: httpx.AsyncClient) -> None:
    response = await client.head("/.well-known/api-catalog")
    assert response.status_code == 200
    link = response.headers["Link"]
    assert '</.well-known/api-catalog>; rel="api-catalog"' in link
    assert 'type="application/linkset+json"' in link


async def test_agent_card_is_a_valid_a2a_v1_card_with_every_tool(
    client: httpx.AsyncClient, app: FastAPI
) -> None:
    response = await client.get("/.well-known/agent-card.json")
    doc = json_of(response)
    card = ParseDict(copy.deepcopy(doc), AgentCard())  # strict: an unknown member fails
    validate_proto_required_fields(card)
    assert {s.id for s in card.skills} == tool_names(app)
    assert all(s.tags for s in card.skills)
    assert response.headers["access-control-allow-origin"] == "*"
    assert "etag" in response.headers
    again = await client.get(
        "/.well-known/agent-card.json", headers={"If-None-Match": response.headers["etag"]}
    )
    assert again.status_code == 304


async def test_legacy_agent_card_is_a_valid_a2a_03_card(client: httpx.AsyncClient, app: FastAPI) -> None:
    doc = json_of(await client.get("/.well-known/agent.json"))
    legacy = AgentCardV03.model_validate(doc)
    assert legacy.protocol_version == "0.3.0"
    assert {s.id for s in legacy.skills} == tool_names(app)
    resolved = parse_agent_card(copy.deepcopy(doc))  # how a2a-sdk clients read an old card
    validate_proto_required_fields(resolved)


@pytest.mark.parametrize("path", [*CARD_PATHS, "/api/mcp.php"])
async def test_mcp_server_card_matches_the_published_schema(
    client: httpx.AsyncClient, app: FastAPI, path: str
) -> None:
    doc = json_of(await client.get(path))
    schema_validator("mcp-server-card").validate(doc)
    assert doc["remotes"][0]["url"] == "http://127.0.0.1:8000/api/mcp.php"
    assert {t["name"] for t in doc["tools"]} == tool_names(app)


async def test_skills_index_and_every_skill_validate(
    client: httpx.AsyncClient, app: FastAPI, tmp_path: Path
) -> None:
    index = json_of(await client.get("/.well-known/agent-skills/index.json"))
    schema_validator("agent-skills-index").validate(index)
    names = {s["name"] for s in index["skills"]}
    assert {n.replace("_", "-") for n in tool_names(app)} <= names
    for skill in index["skills"]:
        response = await client.get(skill["url"])
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/markdown")
        assert skill["digest"] == "sha256:" + hashlib.sha256(response.content).hexdigest()
        folder = tmp_path / skill["name"]
        folder.mkdir()
        (folder / "SKILL.md").write_bytes(response.content)
        assert validate_skill_dir(folder) == [], skill["name"]
        front = yaml.safe_load(response.text.split("---\n")[1])
        assert front["description"] == skill["description"]
    assert (await client.head("/.well-known/agent-skills/index.json")).status_code == 200
    missing = await client.get("/.well-known/agent-skills/no-such-skill/SKILL.md")
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "not_found"


async def test_agents_md_describes_the_live_service(client: httpx.AsyncClient, app: FastAPI) -> None:
    response = await client.get("/AGENTS.md")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/markdown")
    text = response.text
    assert text.startswith("# ")
    for name in tool_names(app):
        assert f"`{name}`" in text
    for needle in (
        "/api/mcp.php",
        "/api/tools.php",
        "API-Version",
        "WWW-Authenticate",
        "Retry-After",
        "/openapi.json",
    ):
        assert needle in text, needle
    for plan in app.state.services.knowledge.pack.plans:
        assert plan.name in text


async def test_versioning_policy_is_served(client: httpx.AsyncClient) -> None:
    response = await client.get("/docs/versioning")
    assert response.status_code == 200 and "2026-05-18" in response.text
