"""Settings: the one place the environment is read (prefix ``AGENTGATE_``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import AliasChoices, Field, SecretStr, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from agent_server.foundation.data_dir import default_data_dir
from agent_server.foundation.settings_llm import RouteEntry, UpstreamConfig
from agent_server.foundation.settings_rpc import InternalRpcKey

Mode = Literal["sandbox", "production"]
# The admin password `make run` supplies when none is set: published in the README, so anyone can try
# it. Sandbox mode takes it for the bootstrap admin; production refuses to start with it.
DEMO_PASSWORD = "agentgate-demo-password"


def _split_csv(value: object) -> object:
    if isinstance(value, str):
        return [item.strip() for item in value.split(",") if item.strip()]
    return value


class Settings(BaseSettings):
    """Everything configurable, read once at start and passed down."""

    model_config = SettingsConfigDict(env_prefix="AGENTGATE_", extra="ignore")

    mode: Mode = "sandbox"
    data_dir: Path = Field(default_factory=default_data_dir)  # the rule: agent_server/foundation/data_dir.py
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

    # Tenant gateway (docs/gateway.md).
    jwt_ttl_seconds: int = Field(default=3600, ge=60, le=86_400)
    key_cache_ttl_seconds: float = Field(
        default=0.5,
        gt=0,
        le=1.0,
        description="How long a process trusts a cached key; bounds revocation lag.",
    )
    rate_limit_window_seconds: float = Field(
        default=60.0, gt=0, description="Period of the per-key plan limits (GCRA; plans say per minute)."
    )
    negotiated_rate_limit: int = Field(
        default=6000, ge=1, description="Per-key limit of a negotiated plan whose tenant has no override."
    )

    # Public site API (docs/public-api.md). Limits are per client IP (GCRA).
    kv_prefix: str = Field(default="agentgate:", description="Prefix of every Redis key of this deployment.")
    chat_token_secret: SecretStr | None = Field(default=None, description="Default: generated in data_dir.")
    chat_token_ttl_seconds: int = Field(default=3600, ge=60)
    chat_token_min_age_seconds: float = Field(default=3.0, ge=0)
    site_chat_limit: int = Field(default=20, ge=1)
    site_chat_window_seconds: int = Field(default=3600, ge=1)
    site_chat_model: str = "agentgate-mock-small"
    site_ask_limit: int = Field(default=60, ge=1)
    site_ask_window_seconds: int = Field(default=3600, ge=1)
    site_jobs_limit: int = Field(default=60, ge=1)
    site_forms_limit: int = Field(default=20, ge=1, description="checkout and subscribe, per hour.")
    site_llm_requests_per_minute: int = Field(default=30, ge=1, description="Upstream budget of the site.")
    site_llm_tokens_per_day: int = Field(default=1_500_000, ge=1)
    leads_email: str | None = Field(
        default=None,
        description="Where requests for the discovery call are mailed (the team that answers them); "
        "default: the contact e-mail of the content pack.",
    )
    job_ttl_seconds: int = Field(default=1800, ge=1)
    job_worker: Literal["inprocess", "none"] = Field(
        default="inprocess", description="none: jobs wait for a separate worker process."
    )
    job_concurrency: int = Field(default=4, ge=1)
    job_lease_seconds: float = Field(default=120.0, gt=0, description="A running job is orphaned after this.")
    idempotency_ttl_seconds: int = Field(default=86_400, ge=60)
    idempotency_wait_seconds: float = Field(default=3.0, ge=0)
    health_timeout_seconds: float = Field(default=1.0, gt=0)

    # Administration and webhooks (docs/admin-and-webhooks.md).
    encryption_key: SecretStr | None = Field(
        default=None,
        description="Fernet key(s), comma-separated, first encrypts. Default: generated in data_dir.",
    )
    webhook_worker: bool = Field(default=True, description="false: deliveries wait for another process.")
    webhook_poll_seconds: float = Field(default=1.0, gt=0)
    webhook_timeout_seconds: float = Field(default=10.0, gt=0)
    webhook_retry_hours: float = Field(default=24.0, gt=0)
    webhook_max_per_tenant: int = Field(default=20, ge=1)
    usage_threshold_check_seconds: float = Field(default=10.0, gt=0)
    migrate_on_start: bool = Field(
        default=True, description="Apply database migrations when the app starts (serve does it once itself)."
    )
    quota_check_seconds: float = Field(
        default=10.0, gt=0, description="How often monthly token quotas are summed from usage rows."
    )
    audit_failed_login_limit: int = Field(default=5, ge=1, description="Failed logins that flag an entry.")
    audit_failed_login_window_seconds: int = Field(default=900, ge=1)
    csp_report_max_bytes: int = Field(default=16_384, ge=1024)
    csp_reports_per_ip_per_hour: int = Field(default=120, ge=1)

    # LLM backends and routing (docs/llm-routing.md). Both JSON; api keys stay SecretStr.
    upstreams: list[UpstreamConfig] = Field(
        default_factory=list, description="[{name, base_url, api_key, models: {public: upstream}}]"
    )
    routes: dict[str, list[RouteEntry]] | None = Field(
        default=None, description="{model: [{backend, weight, priority}]}; default: from upstreams."
    )
    llm_connect_timeout_seconds: float = Field(default=5.0, gt=0)
    llm_read_timeout_seconds: float = Field(default=30.0, gt=0, description="Per read, first byte included.")
    llm_retries: int = Field(default=1, ge=0, le=3, description="Same-backend retries before the first byte.")
    llm_retry_backoff_seconds: float = Field(default=0.1, ge=0)
    llm_max_connections: int = Field(default=1000, ge=1, description="Pool size per upstream.")
    llm_routing_check_seconds: float = Field(default=1.0, gt=0, description="How often a process re-checks.")
    llm_http_transport: Literal["pooled", "httpx"] = Field(
        default="pooled",
        description="httpx: httpx's own pool (slower; used anyway behind an https/SOCKS proxy).",
    )
    # Upstream reachability (docs/operations.md): checked in the background, reported by /health.
    llm_health_check_seconds: float = Field(
        default=15.0, gt=0, description="How often each upstream is checked."
    )
    llm_health_timeout_seconds: float = Field(default=5.0, gt=0, description="A slower check counts as down.")

    # Accounts: registration, mail, passwords, passkeys, single sign-on (docs/accounts.md).
    smtp_url: SecretStr | None = Field(
        default=None,
        description="smtp://user:pass@host:587 (STARTTLS when offered), smtp+starttls:// (required) or "
        "smtps:// (implicit TLS). Unset: mail is written to data_dir/outbox and the link is logged.",
    )
    mail_from: str | None = Field(default=None, description="From address; default no-reply@<public host>.")
    mail_worker: bool = Field(default=True, description="false: queued mail waits for another process.")
    mail_poll_seconds: float = Field(default=1.0, gt=0)
    mail_timeout_seconds: float = Field(default=10.0, gt=0)
    mail_retry_hours: float = Field(default=48.0, gt=0, description="After this, a message is given up.")
    registration_link_ttl_seconds: int = Field(default=3600, ge=60, le=7 * 86_400)
    password_reset_ttl_seconds: int = Field(default=1800, ge=60, le=86_400)
    invite_ttl_seconds: int = Field(default=7 * 86_400, ge=3600, le=30 * 86_400)
    register_limit_per_ip: int = Field(default=10, ge=1, description="Registrations per IP per hour.")
    register_limit_per_email: int = Field(default=3, ge=1, description="Registrations per e-mail per hour.")
    agent_auth_limit_per_ip: int = Field(
        default=10, ge=1, description="POST /agent/auth calls per client IP per hour (docs/oauth.md)."
    )
    agent_auth_limit_per_email: int = Field(
        default=3, ge=1, description="Anonymous keys issued per e-mail address per day (docs/oauth.md)."
    )
    agent_assertion_key_ttl_seconds: int = Field(
        default=3600,
        ge=300,
        le=30 * 86_400,
        description="Lifetime of a key POST /agent/auth issues for an identity assertion (docs/oauth.md).",
    )
    password_breach_api_url: str | None = Field(
        default=None, description="A k-anonymity range API (GET <url>/range/<5 hex>); unset: offline only."
    )
    password_breach_api_timeout_seconds: float = Field(default=2.0, gt=0)
    webauthn_rp_id: str | None = Field(default=None, description="Default: the host of public_base_url.")
    webauthn_rp_name: str | None = Field(default=None, description="Default: the company name.")
    webauthn_origins: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="Origins passkeys may be used from; default: public and app URL."
    )
    sso_state_ttl_seconds: int = Field(default=600, ge=60, le=3600)
    dns_nameservers: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="ip or ip:port for domain checks (DNS TXT); default: the system's."
    )

    # Billing (docs/billing.md).
    billing_provider: Literal["sandbox", "stripe"] = Field(
        default="sandbox", description="sandbox: in-process, no network, no charges (make run)."
    )
    billing_path_segment: str = Field(
        default="billing_provider",
        pattern=r"^[a-z][a-z0-9_-]{1,39}$",
        description="The routes' first segment.",
    )
    billing_allow_sandbox_in_production: bool = Field(
        default=False,
        description="Production refuses to start with the sandbox provider unless this is true.",
    )
    stripe_api_key: SecretStr | None = None
    stripe_api_base: str | None = Field(default=None, description="Another Stripe-compatible API base URL.")
    stripe_webhook_secret: SecretStr | None = Field(default=None, description="whsec_… of the endpoint.")
    billing_webhook_tolerance_seconds: int = Field(default=300, ge=30, le=3600)
    billing_grace_days: int = Field(default=7, ge=0, le=60, description="After a failed renewal.")
    billing_currency: str = Field(default="EUR", pattern=r"^[A-Z]{3}$")

    # MCP beyond the stateless default: sessions, resumable streams, change notifications (docs/discovery.md).
    mcp_sessions: bool = Field(
        default=False,
        description="Offer stateful sessions: an initialize from a client accepting SSE opens one "
        "(logging/setLevel, resources/subscribe, server-to-client requests, resumable streams).",
    )
    mcp_session_idle_seconds: float = Field(
        default=1800.0, gt=0, description="A quiet session ends after this."
    )
    mcp_max_sessions: int = Field(default=1000, ge=1, description="Per process; more get 503.")
    mcp_event_history: int = Field(default=100, ge=1, description="Events kept per stream for resumption.")
    mcp_sse_retry_ms: int = Field(default=1000, ge=0, description="The retry hint of resumable streams.")
    mcp_content_check_seconds: float = Field(
        default=2.0, ge=0, description="How often the content pack is checked for changes; 0: never."
    )
    mcp_progress_seconds: float = Field(
        default=2.0, gt=0, description="Interval of progress notifications while a long tool runs."
    )

    # The contract's neutral names as this deployment spells them (docs/deployment.md, "Names").
    office_suite_path_segment: str = Field(
        default="office_suite",
        pattern=r"^[a-z][a-z0-9_-]{1,39}$",
        description="The office-suite connector routes: /admin/<segment>/...",
    )
    search_provider_path_segment: str = Field(
        default="search_provider",
        pattern=r"^[a-z][a-z0-9_-]{1,39}$",
        description="The search-provider connector routes: /admin/<segment>/...",
    )
    header_prefix: str = Field(
        default="X-Platform-",
        pattern=r"^[A-Za-z][A-Za-z0-9]*(-[A-Za-z0-9]+)*-$",
        max_length=40,
        description="Of the service's own headers: <prefix>Token (chat proxy), <prefix>Signature (webhooks).",
    )

    # Discovery, versioning and probes (docs/discovery.md).
    app_url: str | None = Field(
        default=None, description="Dashboard and registration portal; default: public_base_url."
    )
    consultant_codes: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="Comma-separated codes that /consultant-code/validate accepts."
    )

    # MCP fast path (docs/performance.md) and the internal JSON-RPC bridge (docs/internal-rpc.md).
    mcp_fast_path: bool = Field(
        default=True, description="Answer hot stateless MCP JSON requests without the SDK's transport."
    )
    internal_rpc_keys: list[InternalRpcKey] = Field(
        default_factory=list,
        description='JSON [{"id", "secret", "scopes"}] of calling services; empty: /internal/rpc is not served.',
    )
    internal_rpc_tolerance_seconds: int = Field(
        default=300, ge=10, le=3600, description="How old (or early) a signed request's timestamp may be."
    )

    # The gateway's response cache (docs/gateway.md "The response cache"); Redis when redis_url is set.
    response_cache: bool = Field(
        default=False, description="Answer exact repeats of chat completions and embeddings from a cache."
    )
    response_cache_ttl_seconds: float = Field(default=300.0, gt=0, le=30 * 86_400)
    response_cache_max_bytes: int = Field(
        default=64 * 1_048_576,
        ge=65_536,
        description="In-process store: least recently used out beyond this.",
    )
    response_cache_max_entry_bytes: int = Field(
        default=1_048_576, ge=1024, description="Larger answers are not stored."
    )
    response_cache_sampled: bool = Field(
        default=False, description="Also cache chat with n > 1 or a temperature other than 0."
    )
    # Stored Responses API answers (docs/gateway.md "Stored responses"), deleted by the job sweep.
    responses_retention_days: int = Field(
        default=30,
        ge=1,
        le=3650,
        description="How long /v1/responses answers (store not false) can be read and chained.",
    )

    # Files and batches (docs/batches.md).
    files_store: Literal["auto", "directory", "database"] = Field(
        default="auto",
        description="Where /v1/files content lives: `directory` (data_dir/files, one host), `database` "
        "(chunks in the database, every process and host); `auto`: `database` with "
        "AGENTGATE_DATABASE_URL, else `directory`.",
    )
    files_retention_days: int = Field(
        default=30, ge=1, le=3650, description="Uploaded files and batch outputs are deleted after this."
    )
    batch_share_percent: int = Field(
        default=50,
        ge=1,
        le=100,
        description="The most of a key's live rate limit its batches take, in percent of the window.",
    )
    batch_slice_seconds: float = Field(
        default=20.0,
        gt=0,
        description="A batch job runs lines this long, then queues its next slice (within the job lease).",
    )

    # Logs, metrics and traces (docs/operations.md). Traces follow the standard OTEL_* variables.
    log_format: Literal["text", "json"] = Field(
        default="text", description="One JSON object per line with json."
    )
    access_log: bool = Field(
        default=False, description="One log line per request (request id, status, duration)."
    )
    http_keepalive_seconds: int = Field(
        default=5,
        ge=1,
        le=3600,
        description="How long an idle client connection stays open; longer than a load balancer's idle timeout.",
    )
    metrics_token: SecretStr | None = Field(
        default=None, description="Bearer token /metrics/prometheus requires; unset: open."
    )
    metrics_dir: Path | None = Field(
        default=None,
        description="Where worker processes share their counters; `serve --workers N` sets a fresh one.",
    )
    metrics_flush_seconds: float = Field(
        default=1.0, gt=0, le=60, description="How often a worker shares its counters (a scrape's lag)."
    )
    otel_traces_endpoint: str | None = Field(
        default=None,
        validation_alias=AliasChoices(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT", "otel_traces_endpoint"
        ),
        description="The OTLP collector; traces are off while unset.",
    )
    otel_traces_protocol: Literal["http/protobuf", "grpc"] = Field(
        default="http/protobuf",
        validation_alias=AliasChoices(
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL", "otel_traces_protocol"
        ),
        description="The OTLP transport: HTTP with protobuf bodies, or gRPC.",
    )
    otel_traces_exporter: str = Field(
        default="otlp",
        validation_alias=AliasChoices("OTEL_TRACES_EXPORTER", "otel_traces_exporter"),
        description="`none` turns traces off although a collector is named.",
    )
    otel_sdk_disabled: bool = Field(
        default=False,
        validation_alias=AliasChoices("OTEL_SDK_DISABLED", "otel_sdk_disabled"),
        description="`true` turns traces off.",
    )

    @property
    def tracing(self) -> bool:
        """Traces are exported: a collector is named and the standard switches do not turn them off."""
        exporters = {e.strip() for e in self.otel_traces_exporter.split(",")}
        return bool(self.otel_traces_endpoint) and "otlp" in exporters and not self.otel_sdk_disabled

    @field_validator(
        "allowed_hosts",
        "allowed_origins",
        "consultant_codes",
        "webauthn_origins",
        "dns_nameservers",
        mode="before",
    )
    @classmethod
    def _csv(cls, value: object) -> object:
        return _split_csv(value)

    @field_validator("admin_password")
    @classmethod
    def _not_the_demo_password_in_production(
        cls, value: SecretStr | None, info: ValidationInfo
    ) -> SecretStr | None:
        production = info.data.get("mode") == "production"
        if production and value is not None and value.get_secret_value() == DEMO_PASSWORD:
            raise ValueError(
                "is the published demo password of `make run`; production refuses to start with it. "
                "Set a password of your own (docs/accounts.md, Passwords)."
            )
        return value

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
    def app_base_url(self) -> str:
        """Where people open links from mail (the dashboard and registration portal)."""
        return (self.app_url or self.public_base_url).rstrip("/")

    @property
    def public_host(self) -> str:
        """host:port of the public base URL, which must always pass the Host check."""
        rest = self.public_base_url.split("://", 1)[-1]
        return rest.split("/", 1)[0]
