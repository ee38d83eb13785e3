"""The content pack: shipped files, per-file overrides, and errors that name the file and the field."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from agent_server.capabilities.services import build_services, close_services
from agent_server.foundation.settings import Settings
from agent_server.knowledge.pack import ContentError, load_pack, shipped_content_dir

SHIPPED = shipped_content_dir()
SPEC_EVENTS = {"usage.threshold_reached", "key.rotated", "invoice.created", "audit.flagged"}


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def shipped_yaml(name: str) -> dict:
    return yaml.safe_load((SHIPPED / name).read_text(encoding="utf-8"))


def test_shipped_pack_loads_with_at_least_25_faq_entries() -> None:
    pack = load_pack(SHIPPED)
    assert len(pack.faq) >= 25
    assert len({entry.id for entry in pack.faq}) == len(pack.faq)
    assert pack.company.name and pack.plans and pack.models and pack.kb_core and pack.kb_full


def test_override_folder_replaces_one_file_and_keeps_the_rest(tmp_path: Path) -> None:
    plans = shipped_yaml("plans.yaml")
    plans["plans"][0]["name"] = "Tiny"
    plans["plans"][0]["price_monthly"] = 1.5
    write(tmp_path, "plans.yaml", yaml.safe_dump(plans))
    write(tmp_path, "kb-core.md", "# Overridden core\n\n## Only section\n\nOverridden text.\n")

    pack = load_pack(SHIPPED, tmp_path)
    shipped = load_pack(SHIPPED)
    assert pack.plans[0].name == "Tiny" and pack.plans[0].price_monthly == 1.5
    assert pack.kb_core.startswith("# Overridden core")
    assert pack.faq == shipped.faq and pack.company == shipped.company and pack.kb_full == shipped.kb_full


async def test_content_dir_setting_comes_from_the_environment_and_reaches_the_services(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    company = shipped_yaml("company.yaml")
    company["tagline"] = "Overridden through AGENTGATE_CONTENT_DIR"
    override = tmp_path / "content"
    write(override, "company.yaml", yaml.safe_dump(company))
    monkeypatch.setenv("AGENTGATE_CONTENT_DIR", str(override))

    settings = Settings(data_dir=tmp_path / "data")
    assert settings.content_dir == override
    services = build_services(settings)
    try:
        assert services.knowledge.pack.company.tagline == "Overridden through AGENTGATE_CONTENT_DIR"
        assert services.knowledge.pack.plans == load_pack(SHIPPED).plans
    finally:
        await close_services(services)


def test_an_unrelated_file_in_the_override_folder_is_ignored(tmp_path: Path) -> None:
    write(tmp_path, "notes.txt", "not content")
    assert load_pack(SHIPPED, tmp_path) == load_pack(SHIPPED)


def error_for(tmp_path: Path, name: str, text: str) -> str:
    path = write(tmp_path, name, text)
    with pytest.raises(ContentError) as raised:
        load_pack(SHIPPED, tmp_path)
    message = str(raised.value)
    assert str(path) in message  # names the overriding file, not the shipped one
    return message


def test_bad_yaml_names_the_file_and_the_line(tmp_path: Path) -> None:
    message = error_for(tmp_path, "faq.yaml", "faq:\n  - id: x\n    question: [unclosed\n")
    assert "cannot be read as YAML" in message and "line" in message


def test_missing_top_level_key_names_the_key(tmp_path: Path) -> None:
    message = error_for(tmp_path, "models.yaml", "catalogue: []\n")
    assert "missing top-level key 'models'" in message


def test_missing_field_names_the_entry_and_the_field(tmp_path: Path) -> None:
    faq = shipped_yaml("faq.yaml")
    del faq["faq"][2]["answer"]
    message = error_for(tmp_path, "faq.yaml", yaml.safe_dump(faq))
    assert "faq[2].answer" in message and "required" in message.lower()


def test_wrong_type_names_the_field_path(tmp_path: Path) -> None:
    plans = shipped_yaml("plans.yaml")
    plans["plans"][1]["requests_per_minute"] = "lots"
    message = error_for(tmp_path, "plans.yaml", yaml.safe_dump(plans))
    assert "plans[1].requests_per_minute" in message and "integer" in message


def test_wrong_type_in_a_whole_document_file_names_the_nested_field(tmp_path: Path) -> None:
    company = shipped_yaml("company.yaml")
    company["headquarters"]["city"] = ["not", "a", "string"]
    message = error_for(tmp_path, "company.yaml", yaml.safe_dump(company))
    assert "headquarters.city" in message


def test_unknown_field_is_refused(tmp_path: Path) -> None:
    training = shipped_yaml("training.yaml")
    training["trainings"][0]["colour"] = "blue"
    message = error_for(tmp_path, "training.yaml", yaml.safe_dump(training))
    assert "trainings[0].colour" in message


def test_duplicate_ids_are_refused(tmp_path: Path) -> None:
    faq = shipped_yaml("faq.yaml")
    faq["faq"][3]["id"] = faq["faq"][0]["id"]
    message = error_for(tmp_path, "faq.yaml", yaml.safe_dump(faq))
    assert "faq[3].id" in message and "duplicate" in message


def test_plan_referring_to_an_unknown_model_is_refused(tmp_path: Path) -> None:
    plans = shipped_yaml("plans.yaml")
    plans["plans"][0]["models"].append("no-such-model")
    message = error_for(tmp_path, "plans.yaml", yaml.safe_dump(plans))
    assert "plans[0].models" in message and "no-such-model" in message


def test_invalid_api_auth_value_is_refused(tmp_path: Path) -> None:
    catalog = shipped_yaml("api_catalog.yaml")
    catalog["apis"][0]["auth"] = "magic"
    message = error_for(tmp_path, "api_catalog.yaml", yaml.safe_dump(catalog))
    assert "apis[0].auth" in message


def test_broken_shipped_file_stops_the_load(tmp_path: Path) -> None:
    copy = tmp_path / "pack"
    shutil.copytree(SHIPPED, copy)
    (copy / "kb-full.md").unlink()
    with pytest.raises(ContentError, match=r"kb-full\.md"):
        load_pack(copy)


# Consistency of the shipped texts with the spec.


def test_api_catalog_lists_the_public_job_endpoints() -> None:
    apis = {(a.method, a.path): a for a in load_pack(SHIPPED).apis}
    assert apis[("POST", "/api/jobs")].auth == "none"
    assert apis[("GET", "/api/jobs/{id}")].auth == "none"


def test_webhook_events_named_anywhere_are_exactly_the_spec_events() -> None:
    texts = {p.name: p.read_text(encoding="utf-8") for p in SHIPPED.iterdir() if p.suffix in {".md", ".yaml"}}
    named: set[str] = set()
    for name, text in texts.items():
        assert not re.search(r"\bjob\.(succeeded|failed|created|cancelled)\b", text), name
        named |= set(re.findall(r"\b(?:usage|key|invoice|audit|job)\.[a-z_]+\b", text))
    assert named == SPEC_EVENTS
    kb_full = texts["kb-full.md"]
    assert all(event in kb_full for event in SPEC_EVENTS)


def test_kb_full_mcp_example_calls_the_ask_tool_by_its_name() -> None:
    kb_full = (SHIPPED / "kb-full.md").read_text(encoding="utf-8")
    calls = re.findall(r'"method":\s*"tools/call",\s*"params":\s*\{"name":\s*"([^"]+)"', kb_full)
    assert calls == ["ask_agentgate"]
    assert '"arguments": {"query":' in kb_full
