"""Configuration shapes for LLM upstreams and routes, read from settings (JSON in the environment).

``AGENTGATE_UPSTREAMS``: ``[{"name", "base_url", "api_key", "models": {public_id: upstream_id}}]``
``AGENTGATE_ROUTES``: ``{public_id: [{"backend", "weight", "priority"}]}`` (optional)
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

MOCK_BACKEND = "mock"


class UpstreamConfig(BaseModel):
    """One OpenAI-compatible upstream. The key stays a SecretStr: its repr never shows the value."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_.\-]+$")
    base_url: str = Field(min_length=1, description="e.g. https://api.openai.com/v1 (the /v1 included)")
    api_key: SecretStr = SecretStr("")
    models: dict[str, str] = Field(default_factory=dict, description="public model id -> upstream id")
    connect_timeout_seconds: float | None = Field(default=None, gt=0)
    read_timeout_seconds: float | None = Field(default=None, gt=0)
    max_connections: int | None = Field(default=None, ge=1)

    @field_validator("models", mode="before")
    @classmethod
    def _list_means_same_id(cls, value: object) -> object:
        # A plain list of ids is shorthand for "the same id upstream".
        if isinstance(value, list):
            return {str(item): str(item) for item in value}
        return value

    @field_validator("name")
    @classmethod
    def _not_reserved(cls, value: str) -> str:
        if value == MOCK_BACKEND:
            raise ValueError(f"'{MOCK_BACKEND}' is reserved for the built-in mock backend")
        return value

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("base_url must start with http:// or https://")
        return value.rstrip("/")


class RouteEntry(BaseModel):
    """One backend of a model's route; see docs/llm-routing.md for how entries are ordered."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: str = Field(min_length=1, max_length=100)
    weight: float = Field(default=1.0, ge=0)
    priority: int = Field(default=0, ge=0, description="Lower is tried first; equal values form a group.")
