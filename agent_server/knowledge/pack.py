"""The content pack: hand-edited YAML and Markdown files, validated at load.

The shipped pack lives in ``resources/content``; a folder named by ``AGENTGATE_CONTENT_DIR``
overrides it file by file. A malformed file stops the start with a message naming the file and field.
"""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agent_server.knowledge.pack_legal import LegalDocument, TaxTable
from agent_server.llm.grants import entry_problem, is_pattern


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Person(Strict):
    name: str
    role: str


class Headquarters(Strict):
    city: str
    country: str
    address: str


class Contact(Strict):
    email: str
    sales: str
    support: str
    phone: str


class Company(Strict):
    name: str
    legal_name: str
    tagline: str
    description: str
    founded: int
    headquarters: Headquarters
    website: str
    contact: Contact
    leadership: list[Person]
    languages: list[str]


class Plan(Strict):
    id: str
    name: str
    price_monthly: float | None
    currency: str
    requests_per_minute: int | None
    monthly_token_quota: int | None
    trial_days: int
    scopes: list[str]
    models: list[str]
    features: list[str]
    description: str
    # Active API keys a tenant may hold at once; null: no limit (docs/models-and-keys.md).
    max_keys: int | None = Field(default=None, ge=1)
    # The largest upload to /v1/files, in bytes (docs/batches.md); null: the default of plans with files.
    max_file_bytes: int | None = Field(default=None, ge=1)
    # Percent off the price of batch usage (docs/batches.md, "Money"); 0: batches cost what live calls do.
    batch_discount: int = Field(default=0, ge=0, le=100)
    # The plan of the keys POST /agent/auth issues to anonymous agents (docs/oauth.md): never offered
    # at registration, never sold, never listed among the plans to subscribe to.
    anonymous_agents: bool = False


class Model(Strict):
    id: str
    name: str
    vendor: str
    context_window: int
    input_price_per_mtok: float = Field(ge=0, description="in `currency` (major units) per 1M tokens")
    output_price_per_mtok: float = Field(ge=0)
    currency: str = Field(default="EUR", pattern=r"^[A-Z]{3}$")
    capabilities: list[str]
    description: str
    # Called with the tenant's own key for `provider` (docs/models-and-keys.md, "BYOK").
    byok: bool = False
    provider: str | None = Field(default=None, pattern=r"^[a-z0-9_.\-]+$")

    @model_validator(mode="after")
    def _byok_names_its_provider(self) -> Model:
        if self.byok and self.provider is None:
            raise ValueError("a byok model names its provider")
        return self


class ConsultingPackage(Strict):
    id: str
    name: str
    price: float
    currency: str
    duration: str
    fixed_fee: bool
    summary: str
    deliverables: list[str]
    # Working days on the buyer's calendar; set: a purchase needs a booking date range (ACP sessions).
    booking_days: int | None = Field(default=None, ge=1, le=30)


class Training(Strict):
    id: str
    name: str
    price: float
    currency: str
    format: str
    duration_hours: int
    level: str
    summary: str
    topics: list[str]


class HardwareSpecs(Strict):
    gpu: str
    memory_gb: int
    storage_tb: float


class HardwareOffering(Strict):
    id: str
    name: str
    price: float
    currency: str
    lead_time_weeks: int
    specs: HardwareSpecs
    summary: str


class Availability(Strict):
    days: list[str]
    hours: str


class DiscoveryCall(Strict):
    title: str
    duration_minutes: int
    price: float
    currency: str
    timezone: str
    availability: Availability
    languages: list[str]
    topics: list[str]
    what_to_prepare: list[str]


class FaqEntry(Strict):
    id: str
    question: str
    answer: str
    tags: list[str] = []


class Framework(Strict):
    id: str
    name: str
    status: Literal["compliant", "in_progress", "not_applicable", "planned"]
    scope: str
    evidence: str
    updated: str


class Control(Strict):
    id: str
    name: str
    description: str
    frameworks: list[str]


class ApiEntry(Strict):
    id: str
    name: str
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"]
    path: str = Field(pattern=r"^/")
    auth: Literal["none", "api_key", "jwt", "session_token"]
    description: str


class ContentPack(Strict):
    company: Company
    plans: list[Plan] = Field(min_length=1)
    models: list[Model] = Field(min_length=1)
    consulting: list[ConsultingPackage]
    training: list[Training]
    hardware: list[HardwareOffering]
    discovery_call: DiscoveryCall
    faq: list[FaqEntry] = Field(min_length=1)
    frameworks: list[Framework]
    controls: list[Control]
    apis: list[ApiEntry]
    terms: LegalDocument
    privacy: LegalDocument
    tax: TaxTable
    kb_core: str
    kb_full: str

    @model_validator(mode="after")
    def _references(self) -> ContentPack:
        """Ids are unique per file and cross-file references resolve (see the pack's README)."""
        for field in (
            "plans",
            "models",
            "consulting",
            "training",
            "hardware",
            "faq",
            "frameworks",
            "controls",
            "apis",
        ):
            seen: set[str] = set()
            for number, item in enumerate(getattr(self, field)):
                if item.id in seen:
                    raise _Bad(field, (number, "id"), f"duplicate id '{item.id}'")
                seen.add(item.id)
        models = {m.id for m in self.models}
        anonymous = [number for number, plan in enumerate(self.plans) if plan.anonymous_agents]
        if len(anonymous) > 1:
            raise _Bad(
                "plans", (anonymous[1], "anonymous_agents"), "only one plan may be for anonymous agents"
            )
        for number in anonymous:
            if "admin" in self.plans[number].scopes:
                raise _Bad("plans", (number, "scopes"), "a plan for anonymous agents cannot grant admin")
            if self.plans[number].trial_days < 1:  # the lifetime of its keys (docs/oauth.md)
                raise _Bad(
                    "plans", (number, "trial_days"), "a plan for anonymous agents needs trial_days >= 1"
                )
        for number, plan in enumerate(self.plans):
            for model in plan.models:
                # Patterns (gpt-4o*, *) also grant models declared only in the upstream settings.
                problem = entry_problem(model)
                if problem is None and not is_pattern(model) and model not in models:
                    problem = f"unknown model id '{model}' (grant upstream-only models with a pattern)"
                if problem is not None:
                    raise _Bad("plans", (number, "models"), problem)
        frameworks = {f.id for f in self.frameworks}
        for number, control in enumerate(self.controls):
            for framework in control.frameworks:
                if framework not in frameworks:
                    raise _Bad("controls", (number, "frameworks"), f"unknown framework id '{framework}'")
        return self


class _Bad(ValueError):
    """A cross-reference problem, located like a field error."""

    def __init__(self, field: str, loc: tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.field, self.loc, self.message = field, loc, message


class ContentError(ValueError):
    """A content file is missing or malformed; the message names the file and the field."""


# file name -> (top-level key inside the file or None for the whole document, pack field)
_YAML_FILES: dict[str, list[tuple[str | None, str]]] = {
    "company.yaml": [(None, "company")],
    "plans.yaml": [("plans", "plans")],
    "models.yaml": [("models", "models")],
    "consulting.yaml": [("packages", "consulting")],
    "training.yaml": [("trainings", "training")],
    "hardware.yaml": [("offerings", "hardware")],
    "discovery_call.yaml": [(None, "discovery_call")],
    "faq.yaml": [("faq", "faq")],
    "compliance.yaml": [("frameworks", "frameworks"), ("controls", "controls")],
    "api_catalog.yaml": [("apis", "apis")],
    "legal.yaml": [("terms", "terms"), ("privacy", "privacy")],
    "tax.yaml": [(None, "tax")],
}
# libyaml's safe loader when PyYAML has it: ten times faster than the pure-Python one, same result.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MARKDOWN_FILES = {"kb-core.md": "kb_core", "kb-full.md": "kb_full"}


def _pick(name: str, shipped: Path, override: Path | None) -> Path:
    if override is not None and (override / name).is_file():
        return override / name
    return shipped / name


def _where(key: str | None, loc: tuple[Any, ...]) -> str:
    """A location as the file's editor sees it: ``plans[1].requests_per_minute``."""
    text = key or ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(document)"


def shipped_content_dir() -> Path:
    """``resources/content``, found without importing ``resources``: its code registers capabilities
    and stands layers above this one; only its data folder is read here."""
    spec = find_spec("resources")
    if spec is None or spec.origin is None:
        raise RuntimeError("the resources package (the shipped content) is not installed")
    return Path(spec.origin).parent / "content"


# Packs read in this process by their files' (path, size, mtime): every app of a process (the tests
# start hundreds) shares one parse of unchanged files; an edited file has a new key.
_READ: dict[tuple[tuple[str, int, int], ...], ContentPack] = {}
_READ_MAX = 8


def load_pack(shipped: Path, override: Path | None = None) -> ContentPack:
    """Read and validate every content file; overriding files win by name."""
    names = [*_YAML_FILES, *_MARKDOWN_FILES]
    try:
        stats = [(path, path.stat()) for path in (_pick(name, shipped, override) for name in names)]
    except OSError:
        return _read_pack(shipped, override)  # a missing file: the read names it
    key = tuple((str(path), st.st_size, st.st_mtime_ns) for path, st in stats)
    if key not in _READ:
        if len(_READ) >= _READ_MAX:
            _READ.pop(next(iter(_READ)))
        _READ[key] = _read_pack(shipped, override)
    return _READ[key]


def _read_pack(shipped: Path, override: Path | None) -> ContentPack:
    data: dict[str, Any] = {}
    origin: dict[str, tuple[Path, str | None]] = {}
    for name, parts in _YAML_FILES.items():
        path = _pick(name, shipped, override)
        try:
            document = yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER)
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise ContentError(f"{path}: cannot be read as YAML: {exc}") from None
        for key, field in parts:
            if key is not None and (not isinstance(document, dict) or key not in document):
                raise ContentError(f"{path}: missing top-level key '{key}'")
            data[field] = document if key is None else document[key]
            origin[field] = (path, key)
    for name, field in _MARKDOWN_FILES.items():
        path = _pick(name, shipped, override)
        try:
            data[field] = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ContentError(f"{path}: cannot be read: {exc}") from None
        origin[field] = (path, None)
    try:
        return ContentPack.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        cause = first.get("ctx", {}).get("error")
        if isinstance(cause, _Bad):
            field, loc, message = cause.field, cause.loc, cause.message
        else:
            field, loc, message = str((*first["loc"], "")[0]), tuple(first["loc"][1:]), first["msg"]
        path, key = origin.get(field, (Path(field), None))
        raise ContentError(f"{path}: field {_where(key, loc)}: {message}") from None
