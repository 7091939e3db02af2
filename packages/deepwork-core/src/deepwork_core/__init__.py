"""DeepWork core: the job model, parser, discovery, doc specs, config, sessions, engine and errors.

Pure Python with pydantic and PyYAML; it never imports mcp, fastmcp, click or jinja2. The names in
`__all__` are the public API the other DeepWork packages import; each is loaded on first use, so
importing this package (or the standard-library-only `deepwork_core.layout`) stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from deepwork_core.lazy import lazy_exports

if TYPE_CHECKING:
    from deepwork_core.branching import (
        ensure_workflow_branch as ensure_workflow_branch,
    )
    from deepwork_core.checkpoint import (
        Checkpoint as Checkpoint,
    )
    from deepwork_core.checkpoint import (
        Gate as Gate,
    )
    from deepwork_core.checkpoint import (
        GateNeedsWork as GateNeedsWork,
    )
    from deepwork_core.checkpoint import (
        GatePassed as GatePassed,
    )
    from deepwork_core.checkpoint import (
        GateSelfReviewRequested as GateSelfReviewRequested,
    )
    from deepwork_core.checkpoint import (
        GateVerdict as GateVerdict,
    )
    from deepwork_core.checkpoint import (
        ProgressReporter as ProgressReporter,
    )
    from deepwork_core.config import (
        DEFAULT_REVIEW_TIMEOUT as DEFAULT_REVIEW_TIMEOUT,
    )
    from deepwork_core.config import (
        DEFAULT_SECONDS_PER_EXTRA_FILE as DEFAULT_SECONDS_PER_EXTRA_FILE,
    )
    from deepwork_core.config import (
        EXTERNAL_RUNNERS as EXTERNAL_RUNNERS,
    )
    from deepwork_core.config import (
        TIMEOUT_FREE_FILES as TIMEOUT_FREE_FILES,
    )
    from deepwork_core.config import (
        DeepWorkConfig as DeepWorkConfig,
    )
    from deepwork_core.config import (
        QualityGateConfig as QualityGateConfig,
    )
    from deepwork_core.config import (
        load_config as load_config,
    )
    from deepwork_core.discovery import (
        JobCatalog as JobCatalog,
    )
    from deepwork_core.discovery import (
        JobFolder as JobFolder,
    )
    from deepwork_core.discovery import (
        LoadedJob as LoadedJob,
    )
    from deepwork_core.discovery import (
        parse_folder_list as parse_folder_list,
    )
    from deepwork_core.engine import (
        BranchMaker as BranchMaker,
    )
    from deepwork_core.engine import (
        WorkflowEngine as WorkflowEngine,
    )
    from deepwork_core.errors import (
        ConfigError as ConfigError,
    )
    from deepwork_core.errors import (
        DeepWorkError as DeepWorkError,
    )
    from deepwork_core.errors import (
        GitError as GitError,
    )
    from deepwork_core.errors import (
        HookError as HookError,
    )
    from deepwork_core.errors import (
        PathOutsideProjectError as PathOutsideProjectError,
    )
    from deepwork_core.errors import (
        Problem as Problem,
    )
    from deepwork_core.errors import (
        ProcessTimeoutError as ProcessTimeoutError,
    )
    from deepwork_core.errors import (
        QualityGateError as QualityGateError,
    )
    from deepwork_core.errors import (
        ReviewError as ReviewError,
    )
    from deepwork_core.errors import (
        Severity as Severity,
    )
    from deepwork_core.errors import (
        YamlError as YamlError,
    )
    from deepwork_core.fsutil import (
        LockTimeout as LockTimeout,
    )
    from deepwork_core.fsutil import (
        atomic_write_text as atomic_write_text,
    )
    from deepwork_core.fsutil import (
        file_lock as file_lock,
    )
    from deepwork_core.git import (
        run_git as run_git,
    )
    from deepwork_core.identifiers import (
        NAME_PATTERN as NAME_PATTERN,
    )
    from deepwork_core.identifiers import (
        resolve_inside as resolve_inside,
    )
    from deepwork_core.layout import (
        JOB_FILE as JOB_FILE,
    )
    from deepwork_core.models import (
        HookAction as HookAction,
    )
    from deepwork_core.models import (
        Step as Step,
    )
    from deepwork_core.parser import (
        ParsedJob as ParsedJob,
    )
    from deepwork_core.parser import (
        check_job_files as check_job_files,
    )
    from deepwork_core.parser import (
        parse_job_dir as parse_job_dir,
    )
    from deepwork_core.process import (
        run_bounded as run_bounded,
    )
    from deepwork_core.quality import (
        DEFAULT_MAX_INLINE_FILES as DEFAULT_MAX_INLINE_FILES,
    )
    from deepwork_core.quality import (
        QualityReviewTask as QualityReviewTask,
    )
    from deepwork_core.quality import (
        build_review_payload as build_review_payload,
    )
    from deepwork_core.quality import (
        build_system_prompt as build_system_prompt,
    )
    from deepwork_core.quality import (
        combined_feedback as combined_feedback,
    )
    from deepwork_core.quality import (
        plan_review_tasks as plan_review_tasks,
    )
    from deepwork_core.quality import (
        reply_schema_json as reply_schema_json,
    )
    from deepwork_core.quality import (
        self_review_feedback as self_review_feedback,
    )
    from deepwork_core.quality import (
        task_file_count as task_file_count,
    )
    from deepwork_core.quality import (
        verdict_from_reply as verdict_from_reply,
    )
    from deepwork_core.quality import (
        write_self_review_file as write_self_review_file,
    )
    from deepwork_core.results import (
        AbortResult as AbortResult,
    )
    from deepwork_core.results import (
        FinishResult as FinishResult,
    )
    from deepwork_core.results import (
        FinishStatus as FinishStatus,
    )
    from deepwork_core.results import (
        StackItem as StackItem,
    )
    from deepwork_core.results import (
        StartResult as StartResult,
    )
    from deepwork_core.runtime_dir import (
        TMP_DIR as TMP_DIR,
    )
    from deepwork_core.runtime_dir import (
        ensure_tmp_dir as ensure_tmp_dir,
    )
    from deepwork_core.scaffold import (
        scaffold_job as scaffold_job,
    )
    from deepwork_core.sessions import (
        OutputValue as OutputValue,
    )
    from deepwork_core.sessions import (
        Session as Session,
    )
    from deepwork_core.sessions import (
        SessionStore as SessionStore,
    )
    from deepwork_core.verdicts import (
        ReviewVerdict as ReviewVerdict,
    )
    from deepwork_core.yamlio import (
        YamlDocument as YamlDocument,
    )
    from deepwork_core.yamlio import (
        read_yaml_file as read_yaml_file,
    )

#: Module → the public names it defines; imported on first use (see `deepwork_core.lazy`).
_HOMES = {
    "deepwork_core.branching": ("ensure_workflow_branch",),
    "deepwork_core.checkpoint": (
        "Checkpoint",
        "Gate",
        "GateNeedsWork",
        "GatePassed",
        "GateSelfReviewRequested",
        "GateVerdict",
        "ProgressReporter",
    ),
    "deepwork_core.config": (
        "DEFAULT_REVIEW_TIMEOUT",
        "DEFAULT_SECONDS_PER_EXTRA_FILE",
        "DeepWorkConfig",
        "EXTERNAL_RUNNERS",
        "QualityGateConfig",
        "TIMEOUT_FREE_FILES",
        "load_config",
    ),
    "deepwork_core.discovery": (
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
        "GitError",
        "HookError",
        "PathOutsideProjectError",
        "Problem",
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
    ),
    "deepwork_core.git": ("run_git",),
    "deepwork_core.identifiers": (
        "NAME_PATTERN",
        "resolve_inside",
    ),
    "deepwork_core.layout": ("JOB_FILE",),
    "deepwork_core.models": (
        "HookAction",
        "Step",
    ),
    "deepwork_core.parser": (
        "ParsedJob",
        "check_job_files",
        "parse_job_dir",
    ),
    "deepwork_core.process": ("run_bounded",),
    "deepwork_core.quality": (
        "DEFAULT_MAX_INLINE_FILES",
        "QualityReviewTask",
        "build_review_payload",
        "build_system_prompt",
        "combined_feedback",
        "plan_review_tasks",
        "reply_schema_json",
        "self_review_feedback",
        "task_file_count",
        "verdict_from_reply",
        "write_self_review_file",
    ),
    "deepwork_core.results": (
        "AbortResult",
        "FinishResult",
        "FinishStatus",
        "StackItem",
        "StartResult",
    ),
    "deepwork_core.runtime_dir": (
        "TMP_DIR",
        "ensure_tmp_dir",
    ),
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
}

__all__ = [
    "DEFAULT_MAX_INLINE_FILES",
    "DEFAULT_REVIEW_TIMEOUT",
    "DEFAULT_SECONDS_PER_EXTRA_FILE",
    "EXTERNAL_RUNNERS",
    "JOB_FILE",
    "NAME_PATTERN",
    "TIMEOUT_FREE_FILES",
    "TMP_DIR",
    "AbortResult",
    "BranchMaker",
    "Checkpoint",
    "ConfigError",
    "DeepWorkConfig",
    "DeepWorkError",
    "FinishResult",
    "FinishStatus",
    "Gate",
    "GateNeedsWork",
    "GatePassed",
    "GateSelfReviewRequested",
    "GateVerdict",
    "GitError",
    "HookAction",
    "HookError",
    "JobCatalog",
    "JobFolder",
    "LoadedJob",
    "LockTimeout",
    "OutputValue",
    "ParsedJob",
    "PathOutsideProjectError",
    "Problem",
    "ProcessTimeoutError",
    "ProgressReporter",
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
    "Step",
    "WorkflowEngine",
    "YamlDocument",
    "YamlError",
    "atomic_write_text",
    "build_review_payload",
    "build_system_prompt",
    "check_job_files",
    "combined_feedback",
    "ensure_tmp_dir",
    "ensure_workflow_branch",
    "file_lock",
    "lazy_exports",
    "load_config",
    "parse_folder_list",
    "parse_job_dir",
    "plan_review_tasks",
    "read_yaml_file",
    "reply_schema_json",
    "resolve_inside",
    "run_bounded",
    "run_git",
    "scaffold_job",
    "self_review_feedback",
    "task_file_count",
    "verdict_from_reply",
    "write_self_review_file",
]

__getattr__ = lazy_exports(__name__, _HOMES)
