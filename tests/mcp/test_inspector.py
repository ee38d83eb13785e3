"""The MCP Inspector CLI (``@modelcontextprotocol/inspector --cli --transport http``, pinned in tests/mcp/node)
against a live server with the service's own registry: it lists and calls every tool, lists and reads
every resource, lists the templates and prompts and renders a prompt, in both protocol eras."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_server.foundation.settings import Settings
from tests.conftest import LiveServer
from tests.mcp.support import NODE, URL, live, node_tool
from tests.test_surfaces import EXAMPLES, RESOURCE_URIS, TOOL_NAMES

ERAS = ["legacy", "modern"]  # the initialize handshake, and 2026-07-28 without one
Inspect = Callable[..., dict[str, Any]]  # (era, method, *arguments) -> the JSON-RPC result


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    node_tool("@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js")
    settings = Settings(data_dir=tmp_path_factory.mktemp("inspector"), redis_url=None, database_url=None)
    with live(settings) as running:
        yield running


@pytest.fixture
def inspect(server: LiveServer, tmp_path: Path) -> Inspect:
    cli = node_tool("@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js")
    # HOME: the Inspector keeps a catalogue file there; a temporary one keeps it out of the real home.
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "PATH": f"{NODE.parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }

    def run(era: str, method: str, *arguments: str) -> dict[str, Any]:
        command = [str(NODE), str(cli), "--cli", f"{server.url}{URL}", "--transport", "http"]
        command += ["--protocol-era", era, "--method", method, *arguments, "--format", "json", "-q"]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, check=False)
        assert done.returncode == 0, f"{method} {arguments}: {done.stdout[-2000:]} {done.stderr[-2000:]}"
        return json.loads(done.stdout)["result"]

    return run


@pytest.mark.parametrize("era", ERAS)
def test_inspector_lists_and_calls_every_tool(inspect: Inspect, era: str) -> None:
    tools = {t["name"]: t for t in inspect(era, "tools/list")["tools"]}
    assert sorted(tools) == sorted(TOOL_NAMES)
    for name in TOOL_NAMES:
        result = inspect(
            era, "tools/call", "--tool-name", name, "--tool-args-json", json.dumps(EXAMPLES[name])
        )
        assert result.get("isError") is not True, (name, result)
        assert (
            result["structuredContent"]
            and json.loads(result["content"][0]["text"]) == result["structuredContent"]
        )


@pytest.mark.parametrize("era", ERAS)
def test_inspector_lists_and_reads_every_resource(inspect: Inspect, era: str) -> None:
    resources = {r["uri"]: r for r in inspect(era, "resources/list")["resources"]}
    assert sorted(resources) == sorted(RESOURCE_URIS)
    for uri, resource in resources.items():
        contents = inspect(era, "resources/read", "--uri", uri)["contents"]
        assert contents[0]["uri"] == uri and contents[0]["mimeType"] == resource["mimeType"]
        assert len(contents[0]["text"]) > 50
    templates = inspect(era, "resources/templates/list")["resourceTemplates"]
    assert {t["uriTemplate"] for t in templates} == {"faq://entry/{id}", "pricing://table/{category}"}
    entry = inspect(era, "resources/read", "--uri", "faq://entry/api-key-format")["contents"][0]
    assert json.loads(entry["text"])["id"] == "api-key-format"


@pytest.mark.parametrize("era", ERAS)
def test_inspector_lists_and_renders_prompts(inspect: Inspect, era: str) -> None:
    prompts = {p["name"] for p in inspect(era, "prompts/list")["prompts"]}
    assert "plan_consulting_engagement" in prompts
    rendered = inspect(
        era,
        "prompts/get",
        "--prompt-name",
        "plan_consulting_engagement",
        "--prompt-args",
        "goal=an agent for our support desk",
        "package=agent-architecture-review",
    )
    text = rendered["messages"][0]["content"]["text"]
    assert "an agent for our support desk" in text and "Agent Architecture Review" in text
