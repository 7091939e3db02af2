"""The server's settings: `DeepWorkConfig`, the one source of every default (`docs/config.md`).

`.deepwork/config.yml` is read into it (a missing file means every default). Unknown keys and
wrong types are a `ConfigError` naming the key path and line. Command-line flags win over the
file: the CLI applies them with `model_copy(update=...)`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Final, Literal, get_args

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from deepwork_core.base.errors import ConfigError, YamlError
from deepwork_core.base.layout import CONFIG_FILE
from deepwork_core.base.yamlio import YamlDocument, parse_yaml, read_yaml_file

#: The external reviewers `quality_gate.external_runner` may name (None: self-review).
ExternalRunner = Literal["claude", "codex", "gemini"]
EXTERNAL_RUNNERS: Final[tuple[ExternalRunner, ...]] = get_args(ExternalRunner)
#: Per-review-task timeout of the external reviewer, in seconds ...
DEFAULT_REVIEW_TIMEOUT: Final = 240
#: ... plus this many seconds for each reviewed file beyond `TIMEOUT_FREE_FILES`.
DEFAULT_SECONDS_PER_EXTRA_FILE: Final = 30
TIMEOUT_FREE_FILES: Final = 5
#: Failed external reviews allowed per checkpoint before `finished_step` errors.
DEFAULT_MAX_QUALITY_ATTEMPTS: Final = 3
#: The platforms the review tools can format tasks for.
Platform = Literal["claude", "gemini"]
PLATFORMS: Final[tuple[Platform, ...]] = get_args(Platform)
#: The platform the review tools format for when the config names none.
DEFAULT_PLATFORM: Final[Platform] = "claude"
#: Upper bounds of the quality-gate settings (the file and the command-line flags alike).
MAX_ATTEMPTS_LIMIT: Final = 100
TIMEOUT_LIMIT_S: Final = 24 * 3600
#: The largest file a `json_schema` output may be, in bytes (docs/limits.md) ...
DEFAULT_JSON_MAX_BYTES: Final = 16 * 1024 * 1024
JSON_MAX_BYTES_LIMIT: Final = 1024 * 1024 * 1024
#: ... and the time one output's `json_schema` check may take, in seconds.
DEFAULT_JSON_CHECK_SECONDS: Final = 10.0
JSON_CHECK_SECONDS_LIMIT: Final = 600.0
#: How much a review brief holds (docs/quality-gate.md, "Review depth").
ReviewDepth = Literal["light", "standard", "thorough"]
REVIEW_DEPTHS: Final[tuple[ReviewDepth, ...]] = get_args(ReviewDepth)
DEFAULT_REVIEW_DEPTH: Final[ReviewDepth] = "standard"
#: Seconds a reviewer may stay silent (no stream event) before it is killed and retried.
DEFAULT_STALL_TIMEOUT: Final = 60.0
DEFAULT_STALL_RETRIES: Final = 1
#: Reviewer processes run at once.
DEFAULT_MAX_PARALLEL: Final = 4
#: How long one `finished_step` waits for its background reviews before answering `reviewing`.
DEFAULT_WAIT_SECONDS: Final = 20.0
#: Hosts end a tool call after about 60 s; a call waits at most this long.
WAIT_SECONDS_LIMIT: Final = 45.0
MAX_PARALLEL_LIMIT: Final = 64
#: Which earlier verdicts a review task may reuse (docs/quality-gate.md, "Verdicts reused").
ReuseMode = Literal["passes", "all", "off"]
DEFAULT_REUSE: Final[ReuseMode] = "passes"


def off_as_written(value: object) -> object:
    """YAML reads an unquoted `off` (`reuse: off`, a job's `scope_guard: off`) as false: it is
    the mode `off`."""
    return "off" if value is False else value


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ReviewModels(_Section):
    """The `--model` the external reviewer is run with, per review depth (None: the CLI's own)."""

    light: str | None = Field(default=None, min_length=1)
    standard: str | None = Field(default=None, min_length=1)
    thorough: str | None = Field(default=None, min_length=1)

    def for_depth(self, depth: ReviewDepth) -> str | None:
        model: str | None = getattr(self, depth)
        return model


class ReviewBudget(_Section):
    """What the external reviews of one workflow run (nested runs included) may spend."""

    #: Strict: a finite positive number (`.inf`, `.nan`, `true` and strings are refused).
    max_cost_usd: float | None = Field(default=None, gt=0, allow_inf_nan=False, strict=True)
    max_tokens: int | None = Field(default=None, gt=0, strict=True)


class ModelPrice(_Section):
    """What one model costs, in USD per million tokens (docs/quality-gate.md, "Prices").

    Strict: finite numbers of at least 0. Cached input is priced as plain input unless
    `cache_read` / `cache_write` say otherwise."""

    input: float = Field(ge=0, allow_inf_nan=False, strict=True)
    output: float = Field(ge=0, allow_inf_nan=False, strict=True)
    cache_read: float | None = Field(default=None, ge=0, allow_inf_nan=False, strict=True)
    cache_write: float | None = Field(default=None, ge=0, allow_inf_nan=False, strict=True)


#: A model name (or the start of one, `claude-sonnet`) -> its price.
PriceTable = dict[Annotated[str, Field(min_length=1, max_length=200)], ModelPrice]


class QualityGateConfig(_Section):
    enabled: bool = True
    #: None = self-review by the agent; else the CLI run as the reviewer (claude, codex, gemini).
    external_runner: ExternalRunner | None = None
    max_attempts: int = Field(default=DEFAULT_MAX_QUALITY_ATTEMPTS, ge=1, le=MAX_ATTEMPTS_LIMIT)
    timeout_seconds: int = Field(default=DEFAULT_REVIEW_TIMEOUT, ge=1, le=TIMEOUT_LIMIT_S)
    #: Run the `.deepreview` rules matching a step's output files as reviews at its checkpoint.
    deepreview_rules: bool = True
    #: The default depth of every review; a review's own `depth:` in job.yml wins.
    review_depth: ReviewDepth = DEFAULT_REVIEW_DEPTH
    models: ReviewModels = Field(default_factory=ReviewModels)
    stall_timeout: float = Field(default=DEFAULT_STALL_TIMEOUT, gt=0, le=TIMEOUT_LIMIT_S)
    stall_retries: int = Field(default=DEFAULT_STALL_RETRIES, ge=0, le=MAX_ATTEMPTS_LIMIT)
    budget: ReviewBudget = Field(default_factory=ReviewBudget)
    max_parallel: int = Field(default=DEFAULT_MAX_PARALLEL, ge=1, le=MAX_PARALLEL_LIMIT)
    #: How long `finished_step` waits for its reviews before answering `reviewing`.
    wait_seconds: float = Field(default=DEFAULT_WAIT_SECONDS, ge=0, le=WAIT_SECONDS_LIMIT)
    #: Which verdicts of the same brief over the same bytes a review task reuses.
    reuse: Annotated[ReuseMode, BeforeValidator(off_as_written)] = DEFAULT_REUSE
    #: Prices per model over the defaults (`deepwork_core.gate.costs.prices`).
    prices: PriceTable = Field(default_factory=dict)
    #: What the project's reviews may spend per day (UTC), across every server on the store.
    max_budget_usd_per_day: float | None = Field(
        default=None, gt=0, allow_inf_nan=False, strict=True
    )


class GitConfig(_Section):
    create_branch: bool = True
    #: Follow file changes with the kernel's watch so checkpoints skip `git status` (Linux).
    change_watch: bool = True


class OutputsConfig(_Section):
    """Bounds of the `json_schema` check of submitted outputs (docs/limits.md)."""

    json_max_bytes: int = Field(default=DEFAULT_JSON_MAX_BYTES, ge=1, le=JSON_MAX_BYTES_LIMIT)
    json_check_seconds: float = Field(
        default=DEFAULT_JSON_CHECK_SECONDS, gt=0, le=JSON_CHECK_SECONDS_LIMIT
    )


class StoreConfig(_Section):
    """Where run state lives (docs/runtime-layout.md): None is the project's SQLite file; a
    `postgresql://` URL shares one database between checkouts. `DEEPWORK_STORE_URL` wins."""

    url: str | None = None


class VerifyRule(_Section):
    """One rule of `verify.require` (docs/verify.md): a changed file matching `paths` needs a
    valid receipt of `job` (and `workflow`) that declares it, approved or reviewed if asked."""

    paths: list[str] = Field(min_length=1)
    job: str | None = None
    workflow: str | None = None
    approval: bool = False
    reviewed: bool = False


class VerifyConfig(_Section):
    """What `deepwork verify` requires, as committed on the base ref (docs/verify.md)."""

    require: list[VerifyRule] = Field(default_factory=list)
    require_countersign: bool = False


class ApprovalsConfig(_Section):
    """Human approvals (docs/team.md): `trusted_ref` is the git ref whose committed
    `.deepwork/approvers/*.pub` files are trusted (None: `origin/HEAD`, else `main`, else
    `master`)."""

    trusted_ref: str | None = Field(
        default=None, min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_][A-Za-z0-9_./@{}^~+-]*$"
    )


class LimitsConfig(_Section):
    """Caps on what one run may start (docs/limits.md)."""

    #: The most instances one `for_each` step may fan out to (docs/fan-out.md).
    max_instances: int = Field(default=200, ge=1, le=100_000)


class WebhookConfig(_Section):
    """Where `deepwork run` posts when a run parks, completes or fails (docs/headless.md)."""

    url: str = Field(pattern=r"^https?://\S+$")
    #: The environment variable holding the HMAC secret (the secret never goes in the file).
    secret_env: str = Field(default="DEEPWORK_WEBHOOK_SECRET", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")


class NotifyConfig(_Section):
    """Whom a run no person attends tells (docs/headless.md)."""

    webhook: WebhookConfig | None = None
    #: Where people open the team's dashboard (its `--public-url`); `deepwork run` links a parked
    #: run's page under it (`<url>/run/<session>?project=<id>`).
    dashboard_url: str | None = Field(default=None, pattern=r"^https?://\S+$")


class DeepWorkConfig(_Section):
    version: str = "1.0"
    platforms: list[Platform] = Field(default_factory=lambda: [DEFAULT_PLATFORM])
    quality_gate: QualityGateConfig = Field(default_factory=QualityGateConfig)
    git: GitConfig = Field(default_factory=GitConfig)
    outputs: OutputsConfig = Field(default_factory=OutputsConfig)
    store: StoreConfig = Field(default_factory=StoreConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    verify: VerifyConfig = Field(default_factory=VerifyConfig)
    approvals: ApprovalsConfig = Field(default_factory=ApprovalsConfig)
    notify: NotifyConfig = Field(default_factory=NotifyConfig)

    @property
    def platform(self) -> str:
        """The platform the review tools format for: the first of `platforms`."""
        return self.platforms[0] if self.platforms else DEFAULT_PLATFORM


def load_config(project_root: Path) -> DeepWorkConfig:
    """Read `<project_root>/.deepwork/config.yml`; defaults when the file does not exist."""
    path = project_root / CONFIG_FILE
    if not path.is_file():
        return DeepWorkConfig()
    try:
        document = read_yaml_file(path)
    except YamlError as exc:
        raise ConfigError(f"{path}: {exc.message}") from None
    return _validate(document, str(path))


def parse_config(raw: bytes, where: str) -> DeepWorkConfig:
    """The settings in `raw`, the bytes of a config file named `where` in errors (a file as
    committed on a git ref: `deepwork verify`)."""
    try:
        document = parse_yaml(raw)
    except YamlError as exc:
        raise ConfigError(f"{where}: {exc.message}") from None
    return _validate(document, where)


def _validate(document: YamlDocument, path: str) -> DeepWorkConfig:
    data = document.data
    if data is None:
        return DeepWorkConfig()
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping, not {type(data).__name__}")
    try:
        return DeepWorkConfig.model_validate(data)
    except ValidationError as exc:
        findings = []
        for error in exc.errors():
            key_path = tuple(error["loc"])
            dotted = ".".join(str(part) for part in key_path) or "<top>"
            line = document.line_of(key_path)
            where = f"{path}:{line}" if line is not None else str(path)
            what = "unknown key" if error["type"] == "extra_forbidden" else error["msg"]
            findings.append(f"{where}: {dotted}: {what}")
        raise ConfigError("invalid config: " + "; ".join(findings)) from None
