"""Configuration shapes for LLM upstreams and routes, read from settings (JSON in the environment).

``AGENTGATE_UPSTREAMS``: ``[{"name", "base_url", "api_key", "models": {public_id: upstream_id}}]``
(a model's value may also be an object with its metadata: ``DeclaredModel``, docs/models-and-keys.md)
``AGENTGATE_ROUTES``: ``{public_id: [{"backend", "weight", "priority"}]}`` (optional)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

MOCK_BACKEND = "mock"


# -- Models declared once (issue 14): per-model metadata in the upstream settings -----------------


class ModelPrice(BaseModel):
    """Integer minor units (cents for EUR) per million tokens, so a request's cost is exact."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: int = Field(ge=0, description="minor units per 1M prompt tokens")
    output: int = Field(default=0, ge=0, description="minor units per 1M completion tokens")
    currency: str | None = Field(
        default=None, pattern=r"^[A-Z]{3}$", description="ISO 4217; default the catalogue's currency"
    )


class DeclaredModel(BaseModel):
    """What an upstream says about one of its public models: routed, listed and priced from here."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    upstream: str | None = Field(default=None, max_length=200, description="upstream id; default the same")
    price: ModelPrice | None = None
    context_window: int | None = Field(default=None, ge=1)
    capabilities: tuple[str, ...] | None = Field(default=None, max_length=20)
    owned_by: str | None = Field(default=None, max_length=100)
    byok: bool = Field(default=False, description="called with the tenant's own provider key")


def _split_declared(data: Any) -> Any:
    """``models`` values that are objects become ``models`` (public -> upstream id) plus ``declared``
    (public -> metadata): the LLM layer keeps reading a plain id map."""
    if not isinstance(data, dict) or not isinstance(data.get("models"), dict):
        return data
    ids: dict[str, Any] = {}
    declared = dict(data.get("declared") or {})
    for public, value in data["models"].items():
        if isinstance(value, dict):
            meta = DeclaredModel.model_validate(value)
            declared[public] = meta
            ids[public] = meta.upstream or public
        else:
            ids[public] = value
    return {**data, "models": ids, "declared": declared}


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
    # The network path (docs/llm-routing.md): proxies come from HTTP(S)_PROXY / NO_PROXY.
    ca_bundle: Path | None = Field(
        default=None, description="PEM file of the CAs to trust for this upstream instead of the system's."
    )
    # Models declared once (issue 14, docs/models-and-keys.md): metadata of the ``models`` entries
    # given as objects, and the provider whose key a tenant stores for this upstream's BYOK models.
    declared: dict[str, DeclaredModel] = Field(default_factory=dict)
    provider: str | None = Field(default=None, min_length=1, max_length=100, pattern=r"^[a-z0-9_.\-]+$")
    # The wire dialect (issue 14, docs/gateway.md "The Anthropic Messages API"): an "openai"
    # upstream serves chat completions and the other OpenAI endpoints, and /v1/messages reaches it
    # translated; an "anthropic" one serves the Messages API only, and /v1/messages passes to it as sent.
    dialect: Literal["openai", "anthropic"] = "openai"

    @model_validator(mode="before")
    @classmethod
    def _declared_models(cls, data: Any) -> Any:
        return _split_declared(data)

    @property
    def provider_name(self) -> str:
        """The BYOK provider of this upstream: ``provider``, else the name in lower case."""
        return self.provider or self.name.lower()

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

    @field_validator("ca_bundle")
    @classmethod
    def _bundle_exists(cls, value: Path | None) -> Path | None:
        if value is not None and not value.is_file():
            raise ValueError(f"ca_bundle {value} is not a file")
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
