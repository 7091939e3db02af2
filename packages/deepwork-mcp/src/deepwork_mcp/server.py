"""`create_server()`: the DeepWork MCP server (see `docs/config.md`, `docs/navigation.md`).

It wires the core services (job catalog, session store, workflow engine, quality gate, branch
maker) to FastMCP, hands them to the tools in the server's lifespan state
(`deepwork_mcp.tools.services`) and lists the workflow tools and the review tools. The project
is the given folder, or, when the server follows the client's roots, the client's first root
(one set of services per folder, made on first use). This is the server's composition root: it
opens each project's store, once, when that project's state is first needed (the URL from
`DEEPWORK_STORE_URL`, else `store.url` of that project's config, else its SQLite file), hands
it down, and closes it when the server's lifespan ends. Every tool call is logged
to the `deepwork.mcp` logger (stderr under `deepwork serve`) with the tool name and the stack.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import date
from functools import cache
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any

from anyio import to_thread
from deepwork_core import DeepWorkConfig, DeepWorkError, JobCatalog
from deepwork_core.base.config import (
    EXTERNAL_RUNNERS,
    ExternalRunner,
    QualityGateConfig,
    load_config,
)
from deepwork_core.base.errors import ConfigError
from deepwork_core.state.store.url import STORE_URL_ENV
from fastmcp import FastMCP
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools.base import ToolResult
from mcp.types import CallToolRequestParams

from deepwork_mcp.approvals.keys import approval_key, approver_name, gate_key
from deepwork_mcp.approvals.keys import state_dir as default_state_dir
from deepwork_mcp.listing import CompactToolListing
from deepwork_mcp.roots import ProjectRoot, Projects, ProjectServices, RootsMiddleware
from deepwork_mcp.server_instructions import build_instructions
from deepwork_mcp.tool_errors import ToolErrors
from deepwork_mcp.tools.reviews import register_review_tools
from deepwork_mcp.tools.services import Lifespan, ToolServices, lifespan
from deepwork_mcp.tools.workflows import register_workflow_tools

if TYPE_CHECKING:
    from deepwork_core.engine.branching import BranchOutcome
    from deepwork_core.engine.workflow import BranchMaker, WorkflowEngine
    from deepwork_core.evidence.watch import ChangeWatch
    from deepwork_core.gate.background import TaskJudge
    from deepwork_core.gate.calls import ReviewCalls
    from deepwork_core.gate.gates import Gate
    from deepwork_core.state.store.port import Store

    from deepwork_mcp.reviewers.cli import TraceEnv

logger = logging.getLogger("deepwork.mcp")

SERVER_NAME = "deepwork"

#: What a client without the DeepWork skill learns (docs/platforms.md): each status and what to
#: do, in a sentence each. Later capabilities get a sentence of their own here, in step order.
INSTRUCTIONS = """\
DeepWork runs multi-step workflows with quality gates.
1. Discover: get_workflows (jobs under errors: deepwork_jobs/repair).
2. Start: start_workflow returns begin_step. 3. Execute: follow it.
4. Checkpoint: finished_step(outputs); a concurrent group is one checkpoint (sub-agents, one \
call). reviewing: call again unchanged. awaiting_approval: show the person the feedback's \
command, wait, call again (never approve yourself). Error quality_gate.outputs_changed or \
session.changed: call again.
5. Iterate: needs_work -> fix per feedback, call again. Self-review: a fresh sub-agent judges \
outputs by the named review file; fix, call again with quality_review_override_reason = its \
outcome (never to skip a criterion).
6. Continue: next_step -> its begin_step. fan_out: use each instance's session_id with \
get_active_workflow, finished_step (workflow_complete: item done) or abort_workflow (item given \
up); then finished_step(parent session_id, outputs {}).
7. Complete: workflow_complete. Sub-agents: own agent_id on every call."""


def check_gate(settings: QualityGateConfig) -> None:
    """Raise `ConfigError` for an external runner `build_gate` cannot build (at start-up)."""
    runner = settings.external_runner
    if settings.enabled and runner is not None and runner not in EXTERNAL_RUNNERS:
        # A config built with model_copy skips validation.
        raise ConfigError(
            f"unknown external runner {runner!r}; use one of: "
            f"{', '.join(EXTERNAL_RUNNERS)} (or none for self-review)"
        )


def build_gate(settings: QualityGateConfig, trace_env: TraceEnv | None = None) -> Gate | None:
    """The quality gate for these settings: None (off), self-review, or a reviewer CLI
    (`trace_env`: the trace variables of its processes, when telemetry is on)."""
    check_gate(settings)
    if not settings.enabled:
        return None
    from deepwork_core.gate.gates import ExternalGate, SelfReviewGate  # with the engine
    from deepwork_review import GateRules

    rules = GateRules() if settings.deepreview_rules else None
    runner = settings.external_runner
    if runner is None:
        return SelfReviewGate(rules=rules, review_depth=settings.review_depth)

    def judge_for(queued: QualityGateConfig) -> TaskJudge:
        """The judge of a job another server queued under its settings (its reviewer CLI)."""
        return review_calls(queued, queued.external_runner or runner, trace_env)

    return ExternalGate(
        review_calls(settings, runner, trace_env),
        rules=rules,
        review_depth=settings.review_depth,
        wait_seconds=settings.wait_seconds,
        max_parallel=settings.max_parallel,
        settings=settings,
        judge_for=judge_for,
    )


def review_calls(
    settings: QualityGateConfig, runner: ExternalRunner, trace_env: TraceEnv | None
) -> ReviewCalls:
    """The gate's policy around `runner`'s CLI under `settings`."""
    from deepwork_core.gate.calls import ReviewCalls  # with the engine

    from deepwork_mcp.reviewers.cli import CliReviewer

    return ReviewCalls(
        CliReviewer(runner, trace_env=trace_env),
        base_timeout=settings.timeout_seconds,
        stall_timeout=settings.stall_timeout,
        stall_retries=settings.stall_retries,
        models=settings.models,
        budget=settings.budget,
        reuse=settings.reuse,
        prices=settings.prices,
        max_usd_per_day=settings.max_budget_usd_per_day,
    )


def branch_maker(project_root: Path) -> BranchMaker:
    """Switch `project_root`'s repository to the workflow branch of today."""
    from deepwork_core.engine.branching import ensure_workflow_branch

    def make(job_name: str, label: str) -> BranchOutcome:
        return ensure_workflow_branch(
            project_root, job_name=job_name, label=label, today=date.today()
        )

    return make


class _GateOnce:
    """The one quality gate of the server, built when the first engine needs it."""

    def __init__(self, settings: QualityGateConfig, trace_env: TraceEnv | None) -> None:
        self._settings = settings
        self._trace_env = trace_env
        self._lock = threading.Lock()
        self._built: list[Gate | None] = []

    def __call__(self) -> Gate | None:
        with self._lock:
            if not self._built:
                self._built.append(build_gate(self._settings, self._trace_env))
            return self._built[0]

    def close(self) -> None:
        """Stop the background work of the gate, if one was built (the engine a later call
        makes starts its workers again)."""
        with self._lock:
            built = self._built[0] if self._built else None
        if built is not None:
            built.close()


def create_server(
    project_root: Path | str,
    config: DeepWorkConfig | None = None,
    *,
    additional_jobs_folders: Sequence[Path] = (),
    follow_client_roots: bool = False,
    state_dir: Path | None = None,
    launch: str = "deepwork",
    trace_env: TraceEnv | None = None,
    shared_store: bool | None = None,
    headless: bool = False,
) -> FastMCP:
    """Build the server for `project_root` (resolved to an absolute path).

    With `follow_client_roots`, each tool call works on the client's first root instead, and
    `project_root` is only the fallback for clients without roots (`deepwork_mcp.roots`). The
    instructions describe `project_root`'s workflows.

    `config` defaults to `DeepWorkConfig()`, the same defaults `deepwork serve` starts from: the
    self-review quality gate, three external attempts, a 240 s external review timeout per task
    (plus 30 s per reviewed file beyond five), a workflow branch per top-level workflow.
    `additional_jobs_folders` are searched for jobs after the project's and the standard ones.
    `state_dir` holds the projects' approval keys (docs/security.md) and the gate key that signs
    receipts (docs/verify.md); by default the one `deepwork approve` uses, from
    `DEEPWORK_STATE_DIR`, `XDG_STATE_HOME` or the home folder.
    `launch` is how the user runs this DeepWork (`uvx deepwork==1.0.0`, `deepwork`): the
    approval answer tells them `<launch> approve <session>` (`deepwork_mcp.approvals.launch`).
    `trace_env` gives each external reviewer process its trace variables (docs/telemetry.md).
    `shared_store` (default: the project's store is a PostgreSQL server, named by
    `DEEPWORK_STORE_URL` or else by `store.url` of its config) makes every approval need a
    trusted approver's signature (docs/team.md). `headless`: no person attends, so a run parks
    where it would wait for one (docs/headless.md).
    """
    config = DeepWorkConfig() if config is None else config
    root = Path(project_root).resolve()
    gate_settings = config.quality_gate
    if gate_settings.max_attempts < 1:
        raise ConfigError("quality_gate.max_attempts must be at least 1")
    check_gate(gate_settings)
    keys = default_state_dir(os.environ) if state_dir is None else state_dir
    factory = _ServicesFactory(
        config, additional_jobs_folders, keys, shared_store, trace_env, headless=headless
    )

    where = ProjectRoot(fixed=None if follow_client_roots else root, fallback=root)
    projects = Projects(where, factory.make)
    outer = [RootsMiddleware(where)] if follow_client_roots else []
    tools = ToolServices(projects.get, launch=launch, platform=config.platform)
    mcp = FastMCP(
        SERVER_NAME,
        instructions=build_instructions(INSTRUCTIONS, projects.get(root).catalog.scan(), launch),
        version=_version(),
        mask_error_details=True,
        middleware=[*outer, CallLog(projects.get), ToolErrors(), CompactToolListing()],
        lifespan=_lifespan(tools, factory, projects),
    )
    register_workflow_tools(mcp)
    register_review_tools(mcp)
    return mcp


@cache
def _version() -> str:
    """This package's version (reading the installed metadata costs more than the rest of a
    server start)."""
    return version("deepwork-mcp")


def _lifespan(
    tools: ToolServices, factory: _ServicesFactory, projects: Projects[ProjectServices]
) -> Lifespan:
    """The server's lifespan: its state hands the tools their services; when it ends, the
    gate's workers stop, then every project's store closes (a later client of the same server
    opens them again)."""
    serving = lifespan(tools)

    @asynccontextmanager
    async def stopping(server: FastMCP[Any]) -> AsyncIterator[dict[str, Any]]:
        try:
            async with serving(server) as state:
                yield state
        finally:
            await to_thread.run_sync(_close_projects, factory.gate, projects)

    return stopping


def _close_projects(gate: _GateOnce, projects: Projects[ProjectServices]) -> None:
    gate.close()
    for services in projects.forget():
        services.close()


class _ServicesFactory:
    """What each project folder gets: its job catalog now; its store, opened once, and its
    workflow engine on first use."""

    def __init__(
        self,
        config: DeepWorkConfig,
        additional_jobs_folders: Sequence[Path],
        keys: Path,
        shared: bool | None,
        trace_env: TraceEnv | None = None,
        *,
        headless: bool = False,
    ) -> None:
        self.config = config
        self.headless = headless
        self.additional_jobs_folders = additional_jobs_folders
        self.keys = keys
        self.shared = shared
        #: The one quality gate of the server, for every project.
        self.gate = _GateOnce(config.quality_gate, trace_env)
        #: `DEEPWORK_STORE_URL` as the server found it at start (it wins over `store.url`).
        self.store_url = os.environ.get(STORE_URL_ENV) or None

    def make(self, folder: Path) -> ProjectServices:
        catalog = JobCatalog.for_project(folder, self.additional_jobs_folders)

        def open_project_store() -> Store:
            from deepwork_core.state.store.opening import choose_store_url, open_store

            store = open_store(choose_store_url(folder, self.store_url), folder)
            for notice in store.notices:
                logger.warning("%s", notice)
            return store

        def make_engine(store: Store) -> WorkflowEngine:
            # A PostgreSQL store is shared by the checkouts that name it (docs/team.md).
            shared = store.kind == "postgresql" if self.shared is None else self.shared
            return self.engine(folder, catalog, store, shared=shared)

        return ProjectServices(folder, catalog, open_project_store, make_engine)

    def engine(
        self, folder: Path, catalog: JobCatalog, store: Store, *, shared: bool
    ) -> WorkflowEngine:
        """The project's engine on its open `store` (`shared`: a store other machines use, so
        every approval needs a trusted approver's signature)."""
        from deepwork_core.engine.fanout.fan_in import recover
        from deepwork_core.engine.workflow import WorkflowEngine
        from deepwork_core.state.approvals.signatures import TrustedApprovers
        from deepwork_core.state.sessions import SessionStore

        config, settings = self.config, self.config.quality_gate
        engine = WorkflowEngine(
            folder,
            catalog,
            SessionStore(store, folder),
            gate=self.gate(),
            max_quality_attempts=settings.max_attempts,
            branch_maker=branch_maker(folder) if config.git.create_branch else None,
            output_limits=config.outputs,
            approval_key=approval_key(self.keys, folder),
            # Each project's own base ref says whom it trusts (docs/team.md).
            approvers=TrustedApprovers(
                folder, ref=load_config(folder).approvals.trusted_ref, shared=shared
            ),
            max_instances=config.limits.max_instances,
            watch=_change_watch(folder) if config.git.change_watch else None,
            headless=self.headless,
            receipt_key=gate_key(self.keys),
            author_approver=approver_name(self.keys, os.environ),
        )
        try:  # a crash may have left a fan-out half-made (docs/fan-out.md)
            recover(engine.fan, engine.store, catalog)
        except DeepWorkError as exc:  # the calls that touch it will say so
            logger.warning("fan-out recovery: %s: %s", exc.code, exc.message)
        return engine


def _change_watch(folder: Path) -> ChangeWatch:
    """The project's change watch, set up in a thread of its own (until it is ready the scope
    guard runs `git status`, docs/evidence.md)."""
    from deepwork_core.evidence.watch import ChangeWatch

    config_home = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    watch = ChangeWatch(folder, global_excludes=Path(config_home) / "git" / "ignore")
    threading.Thread(target=watch.start, name="deepwork-change-watch", daemon=True).start()
    return watch


class CallLog(Middleware):
    """Logs every tool call with its outcome and the caller's workflow stack after it (the
    stack of the call's `agent_id`, else the main stack)."""

    def __init__(self, projects: Callable[[], ProjectServices]) -> None:
        self._projects = projects

    async def on_call_tool(
        self,
        context: MiddlewareContext[CallToolRequestParams],
        call_next: CallNext[CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        name = context.message.name
        agent = (context.message.arguments or {}).get("agent_id")
        agent_id = agent if isinstance(agent, str) else None
        try:
            result = await call_next(context)
        except Exception as exc:
            await self._log(name, "error: " + str(exc).split("\n", 1)[0][:300], agent_id)
            raise
        await self._log(name, "ok", agent_id, _answered_stack(result))
        return result

    async def _log(
        self, tool: str, outcome: str, agent_id: str | None, answered: str | None = None
    ) -> None:
        try:
            if answered is not None:
                described = answered
            else:
                stack = await to_thread.run_sync(self._projects().stack, agent_id)
                described = " > ".join(f"{i.workflow}:{i.step}" for i in stack) or "empty"
        except DeepWorkError as exc:
            described = f"unreadable ({exc.code})"
        except Exception as exc:  # the log line must never turn an answer into an error
            described = f"unreadable ({type(exc).__name__})"
        whose = "" if agent_id is None else f" of agent {agent_id[:64]!r}"
        logger.info("tool=%s %s | stack%s: %s", tool, outcome, whose, described)


def _answered_stack(result: ToolResult) -> str | None:
    """The caller's stack as the answer already states it (workflow tools carry it), so the log
    line costs no second read of the state files; None when the answer has no stack."""
    content = result.structured_content
    stack = content.get("stack") if isinstance(content, dict) else None
    if not isinstance(stack, list):
        return None
    try:
        return " > ".join(f"{entry['workflow']}:{entry['step']}" for entry in stack) or "empty"
    except (TypeError, KeyError):
        return None
