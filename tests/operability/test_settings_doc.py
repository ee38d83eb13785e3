"""docs/settings.md is the settings model, rendered: regenerate it when a setting changes."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings

from agent_server.foundation.settings import Settings
from agent_server.foundation.settings_doc import MEANINGS, PREFIX, REGENERATE, markdown, settings_reference

ROOT = Path(__file__).resolve().parents[2]


def test_the_document_is_the_model() -> None:
    assert (ROOT / "docs" / "settings.md").read_text() == markdown(), f"regenerate it: .venv/bin/{REGENERATE}"


def test_every_setting_has_one_row_with_a_meaning() -> None:
    rows = settings_reference()
    assert len(rows) == len(Settings.model_fields)
    assert [row.variable for row in rows if not row.meaning] == [], "give these Fields a description"
    assert len({row.variable for row in rows}) == len(rows)
    assert set(MEANINGS) <= set(Settings.model_fields), "meanings of settings that no longer exist"


def test_secret_settings_show_no_default() -> None:
    class Example(BaseSettings):
        # A section of its own.
        api_token: SecretStr = Field(default=SecretStr("hunter2-default"), description="A token.")
        retries: int = Field(default=3, ge=0, description="How often.")

    rows = {row.variable: row for row in settings_reference(Example)}
    assert rows["API_TOKEN"].secret and rows["API_TOKEN"].default == "(secret)"
    assert rows["RETRIES"].default == "`3`" and rows["RETRIES"].type == "integer, ≥ 0"
    assert rows["RETRIES"].section == "A section of its own"
    assert "hunter2" not in markdown(Example)
    real = {row.variable: row for row in settings_reference()}
    assert all(real[PREFIX + name].default == "(secret)" for name in ("JWT_SECRET", "SMTP_URL", "UPSTREAMS"))


def test_the_readme_links_the_reference() -> None:
    assert "(docs/settings.md)" in (ROOT / "README.md").read_text()
