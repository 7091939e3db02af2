"""DeepWork core: the job model, parser, discovery, doc specs, config, sessions, engine and errors.

Pure Python with pydantic and PyYAML; it never imports mcp, fastmcp, click or jinja2. The names in
`__all__` are the public API the other DeepWork packages import; each is loaded on first use, so
importing this package (or the standard-library-only `deepwork_core.layout`) stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from deepwork_core.lazy import lazy_exports

if TYPE_CHECKING:
    from deepwork_core.approvals import (
        ApprovalChannel,
        ApprovalRecord,
        ApprovalRequest,
        ApprovalStore,
        record_decision,
    )
    from deepwork_core.branching import BranchOutcome, ensure_workflow_branch
    from deepwork_core.checkpoint import (
        Checkpoint,
        Gate,
        GateNeedsWork,
        GatePassed,
        GateSelfReviewRequested,
        GateVerdict,
        ProgressReporter,
        has_own_reviews,
    )
    from deepwork_core.config import (
        DEFAULT_REVIEW_TIMEOUT,
        DEFAULT_SECONDS_PER_EXTRA_FILE,
        EXTERNAL_RUNNERS,
        MAX_ATTEMPTS_LIMIT,
        PLATFORMS,
        TIMEOUT_FREE_FILES,
        TIMEOUT_LIMIT_S,
        DeepWorkConfig,
        QualityGateConfig,
        load_config,
    )
    from deepwork_core.conversion import convert_job, write_conversion
    from deepwork_core.discovery import (
        Catalog,
        JobCatalog,
        JobFolder,
        LoadedJob,
        parse_folder_list,
    )
    from deepwork_core.engine import BranchMaker, WorkflowEngine
    from deepwork_core.errors import (
        ConfigError,
        DeepWorkError,
        FileReadError,
        GitError,
        HookError,
        PathOutsideProjectError,
        Problem,
        ProcessOutputError,
        ProcessTimeoutError,
        QualityGateError,
        ReviewError,
        Severity,
        YamlError,
    )
    from deepwork_core.events import (
        EventName,
        read_events,
    )
    from deepwork_core.fsutil import (
        LockTimeout,
        atomic_write_text,
        file_lock,
        read_bytes_file,
        read_text_file,
    )
    from deepwork_core.git import run_git
    from deepwork_core.globs import glob_to_regex, normalise_glob
    from deepwork_core.identifiers import (
        GIT_DIR,
        NAME_PATTERN,
        check_outside_git_dir,
        resolve_inside,
    )
    from deepwork_core.layout import JOB_FILE, PROJECT_JOBS_DIR, TMP_DIR
    from deepwork_core.models import HookAction, Step
    from deepwork_core.navigation import (
        ActiveWorkflow,
        NavigationError,
        active_workflow,
        go_to_step,
    )
    from deepwork_core.overview import (
        ActiveEntry,
        ProjectOverview,
        project_overview,
    )
    from deepwork_core.parser import JobFormat, ParsedJob, check_job_files, parse_job_dir
    from deepwork_core.process import Completed, kill_all_children, run_bounded
    from deepwork_core.process_review import RULE_PREFIX
    from deepwork_core.quality import (
        DEFAULT_MAX_INLINE_FILES,
        REVIEWER_SYSTEM_PROMPT,
        QualityReviewTask,
        build_review_brief,
        build_review_message,
        build_review_payload,
        combined_feedback,
        plan_review_tasks,
        reply_schema_json,
        self_review_feedback,
        task_file_count,
        unjudged_criteria,
        verdict_from_reply,
        write_self_review_file,
    )
    from deepwork_core.results import (
        AbortResult,
        ApprovalPrompt,
        FinishResult,
        FinishStatus,
        StackItem,
        StartResult,
    )
    from deepwork_core.runtime_dir import ensure_tmp_dir
    from deepwork_core.scaffold import scaffold_job
    from deepwork_core.sessions import OutputValue, Session, SessionStore
    from deepwork_core.stats import Stats, StepStats, collect_stats
    from deepwork_core.verdicts import ReviewVerdict
    from deepwork_core.workflow_graph import (
        GraphRenderError,
        build_graph,
        to_dot,
        to_mermaid,
    )
    from deepwork_core.yamlio import YamlDocument, read_yaml_file

#: Module → the public names it defines; each is imported on first use (`deepwork_core.lazy`).
_HOMES = {
    "deepwork_core.approvals": (
        "ApprovalChannel",
        "ApprovalRecord",
        "ApprovalRequest",
        "ApprovalStore",
        "record_decision",
    ),
    "deepwork_core.globs": (
        "glob_to_regex",
        "normalise_glob",
    ),
    "deepwork_core.stats": (
        "Stats",
        "StepStats",
        "collect_stats",
    ),
    "deepwork_core.branching": ("BranchOutcome", "ensure_workflow_branch"),
    "deepwork_core.conversion": ("convert_job", "write_conversion"),
    "deepwork_core.checkpoint": (
        "Checkpoint",
        "Gate",
        "GateNeedsWork",
        "GatePassed",
        "GateSelfReviewRequested",
        "GateVerdict",
        "ProgressReporter",
        "has_own_reviews",
    ),
    "deepwork_core.config": (
        "DEFAULT_REVIEW_TIMEOUT",
        "DEFAULT_SECONDS_PER_EXTRA_FILE",
        "DeepWorkConfig",
        "EXTERNAL_RUNNERS",
        "MAX_ATTEMPTS_LIMIT",
        "PLATFORMS",
        "QualityGateConfig",
        "TIMEOUT_FREE_FILES",
        "TIMEOUT_LIMIT_S",
        "load_config",
    ),
    "deepwork_core.discovery": (
        "Catalog",
        "JobCatalog",
        "JobFolder",
        "LoadedJob",
        "parse_folder_list",
    ),
    "deepwork_core.engine": (
        "BranchMaker",
        "WorkflowEngine",
    ),
    "deepwork_core.errors": (
        "ConfigError",
        "DeepWorkError",
        "FileReadError",
        "GitError",
        "HookError",
        "PathOutsideProjectError",
        "Problem",
        "ProcessOutputError",
        "ProcessTimeoutError",
        "QualityGateError",
        "ReviewError",
        "Severity",
        "YamlError",
    ),
    "deepwork_core.fsutil": (
        "LockTimeout",
        "atomic_write_text",
        "file_lock",
        "read_bytes_file",
        "read_text_file",
    ),
    "deepwork_core.git": ("run_git",),
    "deepwork_core.identifiers": (
        "GIT_DIR",
        "NAME_PATTERN",
        "check_outside_git_dir",
        "resolve_inside",
    ),
    "deepwork_core.layout": (
        "JOB_FILE",
        "PROJECT_JOBS_DIR",
        "TMP_DIR",
    ),
    "deepwork_core.models": (
        "HookAction",
        "Step",
    ),
    "deepwork_core.parser": (
        "JobFormat",
        "ParsedJob",
        "check_job_files",
        "parse_job_dir",
    ),
    "deepwork_core.process": ("Completed", "kill_all_children", "run_bounded"),
    "deepwork_core.process_review": ("RULE_PREFIX",),
    "deepwork_core.quality": (
        "DEFAULT_MAX_INLINE_FILES",
        "QualityReviewTask",
        "REVIEWER_SYSTEM_PROMPT",
        "build_review_brief",
        "build_review_message",
        "build_review_payload",
        "combined_feedback",
        "plan_review_tasks",
        "reply_schema_json",
        "self_review_feedback",
        "task_file_count",
        "unjudged_criteria",
        "verdict_from_reply",
        "write_self_review_file",
    ),
    "deepwork_core.results": (
        "AbortResult",
        "ApprovalPrompt",
        "FinishResult",
        "FinishStatus",
        "StackItem",
        "StartResult",
    ),
    "deepwork_core.runtime_dir": ("ensure_tmp_dir",),
    "deepwork_core.scaffold": ("scaffold_job",),
    "deepwork_core.sessions": (
        "OutputValue",
        "Session",
        "SessionStore",
    ),
    "deepwork_core.verdicts": ("ReviewVerdict",),
    "deepwork_core.yamlio": (
        "YamlDocument",
        "read_yaml_file",
    ),
    "deepwork_core.events": (
        "EventName",
        "read_events",
    ),
    "deepwork_core.overview": (
        "ActiveEntry",
        "ProjectOverview",
        "project_overview",
    ),
    "deepwork_core.workflow_graph": (
        "GraphRenderError",
        "build_graph",
        "to_dot",
        "to_mermaid",
    ),
    "deepwork_core.navigation": (
        "ActiveWorkflow",
        "NavigationError",
        "active_workflow",
        "go_to_step",
    ),
}

__all__ = [
    "DEFAULT_MAX_INLINE_FILES",
    "DEFAULT_REVIEW_TIMEOUT",
    "DEFAULT_SECONDS_PER_EXTRA_FILE",
    "EXTERNAL_RUNNERS",
    "GIT_DIR",
    "JOB_FILE",
    "MAX_ATTEMPTS_LIMIT",
    "NAME_PATTERN",
    "PLATFORMS",
    "PROJECT_JOBS_DIR",
    "REVIEWER_SYSTEM_PROMPT",
    "RULE_PREFIX",
    "TIMEOUT_FREE_FILES",
    "TIMEOUT_LIMIT_S",
    "TMP_DIR",
    "AbortResult",
    "ActiveEntry",
    "ActiveWorkflow",
    "ApprovalChannel",
    "ApprovalPrompt",
    "ApprovalRecord",
    "ApprovalRequest",
    "ApprovalStore",
    "BranchMaker",
    "BranchOutcome",
    "Catalog",
    "Checkpoint",
    "Completed",
    "ConfigError",
    "DeepWorkConfig",
    "DeepWorkError",
    "EventName",
    "FileReadError",
    "FinishResult",
    "FinishStatus",
    "Gate",
    "GateNeedsWork",
    "GatePassed",
    "GateSelfReviewRequested",
    "GateVerdict",
    "GitError",
    "GraphRenderError",
    "HookAction",
    "HookError",
    "JobCatalog",
    "JobFolder",
    "JobFormat",
    "LoadedJob",
    "LockTimeout",
    "NavigationError",
    "OutputValue",
    "ParsedJob",
    "PathOutsideProjectError",
    "Problem",
    "ProcessOutputError",
    "ProcessTimeoutError",
    "ProgressReporter",
    "ProjectOverview",
    "QualityGateConfig",
    "QualityGateError",
    "QualityReviewTask",
    "ReviewError",
    "ReviewVerdict",
    "Session",
    "SessionStore",
    "Severity",
    "StackItem",
    "StartResult",
    "Stats",
    "Step",
    "StepStats",
    "WorkflowEngine",
    "YamlDocument",
    "YamlError",
    "active_workflow",
    "atomic_write_text",
    "build_graph",
    "build_review_brief",
    "build_review_message",
    "build_review_payload",
    "check_job_files",
    "check_outside_git_dir",
    "collect_stats",
    "combined_feedback",
    "convert_job",
    "ensure_tmp_dir",
    "ensure_workflow_branch",
    "file_lock",
    "glob_to_regex",
    "go_to_step",
    "has_own_reviews",
    "kill_all_children",
    "lazy_exports",
    "load_config",
    "normalise_glob",
    "parse_folder_list",
    "parse_job_dir",
    "plan_review_tasks",
    "project_overview",
    "read_bytes_file",
    "read_events",
    "read_text_file",
    "read_yaml_file",
    "record_decision",
    "reply_schema_json",
    "resolve_inside",
    "run_bounded",
    "run_git",
    "scaffold_job",
    "self_review_feedback",
    "task_file_count",
    "to_dot",
    "to_mermaid",
    "unjudged_criteria",
    "verdict_from_reply",
    "write_conversion",
    "write_self_review_file",
]

__getattr__ = lazy_exports(__name__, _HOMES)
