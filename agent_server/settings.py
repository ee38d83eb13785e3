"""Settings: the one place the environment is read (prefix ``AGENTGATE_``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

Mode = Literal["sandbox", "production"]


def _split_csv(value: object) -> object:
    if isinstance(value, str):
        return [item.strip() for item in value.split(",") if item.strip()]
    return value


class Settings(BaseSettings):
    """Everything configurable, read once at start and passed down."""

    model_config = SettingsConfigDict(env_prefix="AGENTGATE_", extra="ignore")

    mode: Mode = "sandbox"
    data_dir: Path = Path("./var")
    database_url: str | None = Field(default=None, description="Default: SQLite file in data_dir.")
    redis_url: str | None = None
    content_dir: Path | None = Field(
        default=None, description="Folder whose files override the shipped pack."
    )
    service_name: str = "agentgate"
    public_base_url: str = "http://127.0.0.1:8000"
    allowed_hosts: Annotated[list[str], NoDecode] = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
    allowed_origins: Annotated[list[str], NoDecode] = [
        "http://127.0.0.1:*",
        "http://localhost:*",
        "http://[::1]:*",
    ]
    max_request_bytes: int = Field(default=1_048_576, ge=1024)
    tool_timeout_seconds: float = Field(default=10.0, gt=0)
    redis_timeout_seconds: float = Field(default=0.5, gt=0)

    weather_provider: Literal["sandbox", "open_meteo"] = "sandbox"
    weather_base_url: str = "https://api.open-meteo.com"
    geocoding_base_url: str = "https://geocoding-api.open-meteo.com"

    admin_email: str | None = None
    admin_password: SecretStr | None = None
    jwt_secret: SecretStr | None = Field(default=None, description="Default: generated and kept in data_dir.")
    log_level: str = "INFO"

    @field_validator("allowed_hosts", "allowed_origins", mode="before")
    @classmethod
    def _csv(cls, value: object) -> object:
        return _split_csv(value)

    @property
    def sandbox(self) -> bool:
        return self.mode == "sandbox"

    @property
    def sync_database_url(self) -> str:
        """The SQLAlchemy URL for migrations: psycopg 3 for PostgreSQL, pysqlite for SQLite."""
        url = self.database_url or f"sqlite:///{(self.data_dir / 'agentgate.db').as_posix()}"
        for prefix in ("postgres://", "postgresql://"):
            if url.startswith(prefix):
                return "postgresql+psycopg://" + url[len(prefix) :]
        return url

    @property
    def async_database_url(self) -> str:
        """The same database through an asyncio driver (psycopg 3 async, aiosqlite)."""
        url = self.sync_database_url
        if url.startswith("sqlite:"):
            return "sqlite+aiosqlite:" + url[len("sqlite:") :]
        return url

    @property
    def public_host(self) -> str:
        """host:port of the public base URL, which must always pass the Host check."""
        rest = self.public_base_url.split("://", 1)[-1]
        return rest.split("/", 1)[0]
