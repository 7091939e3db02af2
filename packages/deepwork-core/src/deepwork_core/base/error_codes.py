"""Every stable error code DeepWork reports, each defined once with what it means.

Codes are `area.snake_case`. A code reaches a user in one of three ways: as the start of an MCP
tool error (`<code>: <message>`), as a `file:line: <code>: <message>` finding about a file the
user wrote (`job.yml`, a doc spec, a `.deepreview`), or on the `deepwork` command line's stderr.
The full list, with the same meanings, is docs/errors.md.

Code raises and compares `ErrorCode` members, never the code text: `code=ErrorCode.GIT_FAILED`.
An `ErrorCode` is a `str` whose value is the code (`str()`, f-strings and JSON give `git.failed`).
The string under each member is its meaning; `docs/errors.md` is generated from them (`python
tools/gen_errors_doc.py write`); tests check the page is current, that no code is written as a
literal in the packages, and that every member is used.
"""

from __future__ import annotations

from enum import StrEnum

from deepwork_core.base.error_areas import AREAS as AREAS  # its old home; still importable
from deepwork_core.base.error_areas import area_of as area_of
from deepwork_core.base.error_areas import member_meanings


class Code(StrEnum):
    """What every family of codes shares (no members of its own): `ErrorCode` here, and a
    family a subpackage keeps beside the code that reports it when its codes are many
    (`deepwork_core.jobs.errors`, `deepwork_core.receipts.codes`). One page, docs/errors.md,
    lists them all."""

    @property
    def meaning(self) -> str:
        """What the code means and what to do about it (the string under the member)."""
        return member_meanings(type(self))[self.name]


class ErrorCode(Code):
    """A stable error code; the string literal under each member says what it means."""

    APPROVAL_ALREADY_DECIDED = "approval.already_decided"
    """The approval request was already approved or rejected; a request is decided once (the
    next `finished_step` opens a new one if needed)."""
    APPROVAL_BYTES_NOT_STORED = "approval.bytes_not_stored"
    """A decision away from the checkout that serves the run was refused: the store does not
    hold every byte of a shown file (larger than 256 KiB, binary, over the request's 2 MiB, or
    requested before the store kept bytes), so nobody could see it there. Decide where the run
    is served; the message names the project and machine. Nothing is recorded."""
    APPROVAL_CANCELLED = "approval.cancelled"
    """The request was cancelled (the run was aborted or moved back): nothing was recorded."""
    APPROVAL_CORRUPT = "approval.corrupt"
    """An approval in the store (or an old file under `.deepwork/tmp/approvals/` being imported)
    cannot be read; have the agent call `finished_step` again, which opens a new request."""
    APPROVAL_ERROR = "approval.error"
    """Generic approval error."""
    APPROVAL_EXPIRED = "approval.expired"
    """The request's `expires_after` passed before enough approvers approved: nothing completes
    and no decision is recorded; the agent calls `go_to_step` to ask anew, or aborts."""
    APPROVAL_INSIDE_RUN = "approval.inside_run"
    """`deepwork approve` (or the dashboard) was started inside a headless run's agent
    (`DEEPWORK_RUN` is set): a decision from inside the run never counts. A person decides from
    their own shell (docs/headless.md)."""
    APPROVAL_KEY_UNAVAILABLE = "approval.key_unavailable"
    """The project's approval key could not be read or created (or none was given to the
    engine), so no decision can be recorded or verified; the message names the file and why."""
    APPROVAL_KEY_UNSAFE = "approval.key_unsafe"
    """The approval key file is refused: a symbolic link, not a regular file, readable or writable
    by group or others, owned by another user, or not a 32-byte key. Fix its mode (`chmod 600`) or
    delete it (a new key is made; decisions sealed with the old one stop counting)."""
    APPROVAL_NONE_PENDING = "approval.none_pending"
    """The session has no step waiting for approval."""
    APPROVAL_NOT_ELIGIBLE = "approval.not_eligible"
    """The step's policy does not let this approver count: not in its `approvers`, the run's
    author under `not_by_author`, or already counted. Nothing is recorded."""
    APPROVAL_POLICY_UNMEETABLE = "approval.policy_unmeetable"
    """A step's approval policy cannot be met by the approvers trusted on the base ref (say
    `required: 3` and only two trusted keys match `approvers`, or every listed approver is the
    run's author under `not_by_author`): the request is refused when it would open, naming the
    job file, and nothing is recorded. Merge more approvers' keys into the base branch, or
    change the policy."""
    APPROVAL_OUTPUTS_CHANGED = "approval.outputs_changed"
    """A file shown for approval changed after the request was opened; the agent must call
    `finished_step` again so the new content is reviewed first."""
    APPROVAL_REQUEST_CHANGED = "approval.request_changed"
    """The approval request was replaced by a newer one while the human looked at it; look at
    the new one."""
    APPROVAL_REQUEST_UNVERIFIED = "approval.request_unverified"
    """The approval request is not the one the server opened: its seal does not verify with the
    project's approval key (the file was edited, or the key was replaced since). Nothing is
    decided or logged; the agent calls `finished_step` again and the server asks anew."""
    APPROVAL_UNTRUSTED_KEY = "approval.untrusted_key"
    """The signer's `.pub` is not committed on the trusted ref (only in the working tree,
    untracked, or on the run's branch): it counts once merged there. Nothing is recorded."""
    APPROVAL_UNVERIFIED = "approval.unverified"
    """An approval decision was refused: its MAC does not verify with the project's approval key,
    it lacks a valid signature by an approver the project trusts (`.deepwork/approvers/`) where
    signatures are required, or the session's event log has no matching `approval` event. It
    was not written by `deepwork approve`, the dashboard or the client's form, or was edited
    since; the step keeps waiting until a human approves it properly (docs/security.md)."""

    ARGUMENTS_INVALID = "arguments.invalid"
    """A tool was called with arguments its input schema rejects; the error names each bad
    argument. Call again with arguments that match the schema."""

    CALIBRATION_CASE_INVALID = "calibration.case_invalid"
    """A calibration case (`library/calibration/` or `.deepwork/calibration/`) cannot be used:
    not YAML, not of the case's shape, a criterion with no expected verdict, or an output path
    outside its folder; the message names the file and the line."""
    CALIBRATION_NO_CASES = "calibration.no_cases"
    """`deepwork calibrate` found no case to run (`--case` matched none)."""
    CONFIG_INVALID = "config.invalid"
    """`.deepwork/config.yml` is not valid (unknown key, wrong type, bad value)."""
    CONVERT_FILE_EXISTS = "convert.file_exists"
    """The converted job would overwrite a file (the converted `job.yml`, its backup, or an
    instruction file); move it away first."""
    CONVERT_INVALID_RESULT = "convert.invalid_result"
    """The converted job would not be valid; a bug in the converter, please report it."""
    CONVERT_INVALID_SOURCE = "convert.invalid_source"
    """The job to convert is not valid; fix it first (`deepwork jobs validate`)."""
    CONVERT_SAME_FORMAT = "convert.same_format"
    """The job is already written in the format asked for."""
    DASHBOARD_BIND_FAILED = "dashboard.bind_failed"
    """`deepwork dashboard` could not listen on the asked port of 127.0.0.1 (in use, or not
    allowed); pick another with `--port`, or `--port 0` for any free one."""

    DEEPWORK_ERROR = "deepwork.error"
    """Generic DeepWork error; every specific error has its own code."""
    DOC_SPEC_INVALID = "doc_spec.invalid"
    """A doc spec file is invalid; the findings follow."""
    DOC_SPEC_INVALID_VALUE = "doc_spec.invalid_value"
    """A doc spec frontmatter key has a value of the wrong kind."""
    DOC_SPEC_MISSING_KEY = "doc_spec.missing_key"
    """A doc spec frontmatter lacks a required key."""
    DOC_SPEC_NO_FRONTMATTER = "doc_spec.no_frontmatter"
    """A doc spec does not start with a `---` frontmatter block, or the block is not closed."""
    DOC_SPEC_UNKNOWN_KEY = "doc_spec.unknown_key"
    """A doc spec frontmatter has a key the format does not define."""
    DOC_SPEC_UNREADABLE = "doc_spec.unreadable"
    """A doc spec file cannot be read or is too large."""
    DOC_SPEC_YAML = "doc_spec.yaml"
    """A doc spec frontmatter is not valid YAML."""
    EVENTS_CORRUPT = "events.corrupt"
    """An event log line is not an event record, or the log is not a regular file (named)."""
    EVENTS_ERROR = "events.error"
    """Generic event log error."""
    EVENTS_TOO_LARGE = "events.too_large"
    """An event log is larger than the 64 MiB a reader loads."""
    FILE_NOT_FOUND = "file.not_found"
    """A project file that was to be read does not exist."""
    FILE_NOT_REGULAR = "file.not_regular"
    """A project file is a FIFO, socket, device or folder: never opened, so it cannot block."""
    FILE_NOT_TEXT = "file.not_text"
    """A project file is not UTF-8 text."""
    FILE_TOO_LARGE = "file.too_large"
    """A project file is larger than the limit for its kind (`docs/limits.md`)."""
    FILE_UNREADABLE = "file.unreadable"
    """A project file cannot be opened or read."""
    GIT_FAILED = "git.failed"
    """A git command exited with an error."""
    GIT_NOT_INSTALLED = "git.not_installed"
    """git is not on `PATH`."""
    GIT_OUTPUT_TOO_LARGE = "git.output_too_large"
    """A git command printed more than its output cap and was killed."""
    GIT_TIMEOUT = "git.timeout"
    """A git command ran past its time limit and was killed."""
    GRAPH_RENDER_FAILED = "graph.render_failed"
    """Graphviz `dot` failed or ran past its time limit while drawing SVG."""
    GRAPH_RENDERER_MISSING = "graph.renderer_missing"
    """SVG needs Graphviz's `dot` on `PATH`: install Graphviz or use `--format mermaid`."""
    HOOK_BAD_INPUT = "hook.bad_input"
    """The event on a hook's stdin is not a JSON object."""
    HOOK_BAD_PLATFORM = "hook.bad_platform"
    """`DEEPWORK_HOOK_PLATFORM` names a platform other than `claude` or `gemini`."""
    HOOK_BAD_SETTING = "hook.bad_setting"
    """A hook time-limit variable is not a finite number of seconds above 0 and at most one day."""
    HOOK_ERROR = "hook.error"
    """Generic hook error."""
    HOOK_PROMPT_FILE = "hook.prompt_file"
    """A job hook's `prompt_file` cannot be read."""
    HOOK_SCRIPT_FAILED = "hook.script_failed"
    """A job hook script could not start or exited with an error."""
    HOOK_SCRIPT_OUTPUT_TOO_LARGE = "hook.script_output_too_large"
    """A job hook script printed more than 1 MiB and was killed."""
    HOOK_SCRIPT_TIMEOUT = "hook.script_timeout"
    """A job hook script ran past its time limit and was killed."""
    HOOK_STDIN_TIMEOUT = "hook.stdin_timeout"
    """No complete event arrived on a hook's stdin in time."""
    HOOK_UNKNOWN = "hook.unknown"
    """`deepwork hook` was given a hook name it does not know."""
    IDENTIFIER_INVALID = "identifier.invalid"
    """A job, workflow, step or session name does not match its pattern."""

    INPUTS_FILE_NOT_FOUND = "inputs.file_not_found"
    """A start parameter of type `file_path` names a file that does not exist."""
    INPUTS_INVALID = "inputs.invalid"
    """The values given to `start_workflow` are not valid."""
    INPUTS_MISSING = "inputs.missing"
    """`start_workflow` lacks a required start parameter of a 0.10-format workflow (or gives it
    blank); the error names each with its description, for the agent to ask the user."""
    INPUTS_UNKNOWN = "inputs.unknown"
    """`inputs` names a parameter no step of the workflow declares; the error lists the accepted
    ones."""
    INPUTS_WRONG_TYPE = "inputs.wrong_type"
    """A start parameter has the wrong type: text for `string`, a path or a list of paths for
    `file_path`."""

    INSTALL_CONFIG_INVALID = "install.config_invalid"
    """`deepwork install` cannot merge into a client's configuration file: it is not plain JSON
    (comments included) or its entries have the wrong shape; nothing was written."""
    INSTALL_FILE_CONFLICT = "install.file_conflict"
    """`deepwork install` would overwrite a file that DeepWork did not write; nothing was written
    (`--force` overwrites it)."""

    INTERNAL_ERROR = "internal.error"
    """A tool failed on a bug; the traceback is in the server log."""

    LIBRARY_JOB_EXISTS = "library.job_exists"
    """`deepwork jobs add` found the job's folder in the project already; nothing was written
    (`--force` replaces it)."""
    LIBRARY_UNKNOWN_JOB = "library.unknown_job"
    """`deepwork jobs add` was given a name the job library does not have; the message lists the
    library's jobs."""

    NAVIGATION_ERROR = "navigation.error"
    """Generic navigation error."""
    NAVIGATION_FORWARD_JUMP = "navigation.forward_jump"
    """`go_to_step` named a step after the current one; it only goes back. The message lists the
    valid targets."""
    NAVIGATION_UNKNOWN_STEP = "navigation.unknown_step"
    """`go_to_step` named a step that is not in the session's workflow. The message lists the
    valid targets."""

    OUTPUTS_EMPTY_LIST = "outputs.empty_list"
    """A `files` output was submitted as an empty list."""
    OUTPUTS_FILE_NOT_FOUND = "outputs.file_not_found"
    """A submitted output path does not exist, or is too long."""
    OUTPUTS_INVALID = "outputs.invalid"
    """Submitted outputs do not match the step's declaration."""
    OUTPUTS_JSON_TOO_DEEP = "outputs.json_too_deep"
    """A file checked against a `json_schema` nests arrays and objects more than 100 levels deep."""
    OUTPUTS_JSON_TOO_LARGE = "outputs.json_too_large"
    """A file checked against a `json_schema` is larger than `outputs.json_max_bytes` (default
    16 MiB); the error names both sizes."""
    OUTPUTS_MISSING = "outputs.missing"
    """A required output was not submitted."""
    OUTPUTS_NOT_A_FILE = "outputs.not_a_file"
    """A submitted output path is a folder or other non-file."""
    OUTPUTS_SCHEMA_CHECK_TIMEOUT = "outputs.schema_check_timeout"
    """Checking a file against its `json_schema` took longer than `outputs.json_check_seconds`
    (default 10 s)."""
    OUTPUTS_SCHEMA_MISMATCH = "outputs.schema_mismatch"
    """A submitted file does not parse as JSON or does not satisfy the output’s `json_schema`;
    the error names each violation."""
    OUTPUTS_SCHEMA_UNUSABLE = "outputs.schema_unusable"
    """An output's `json_schema` cannot be run safely (a reference outside it, an endless loop, a
    pattern RE2 cannot run); `deepwork jobs validate` names it."""
    OUTPUTS_UNKNOWN = "outputs.unknown"
    """An output name the step does not declare was submitted."""
    OUTPUTS_WRONG_TYPE = "outputs.wrong_type"
    """A `file` output was not one path, or a `files` output not a list of paths."""

    PATH_GIT_INTERNAL = "path.git_internal"
    """A path lies inside a `.git` folder; git's own files are never an output or a review input."""
    PATH_OUTSIDE_PROJECT = "path.outside_project"
    """A path resolves, after symbolic links, outside the project."""

    PROCESS_CANCELLED = "process.cancelled"
    """A subprocess was stopped because its caller gave up (the call was cancelled)."""
    PROCESS_OUTPUT_TOO_LARGE = "process.output_too_large"
    """A subprocess printed more than its output cap and was killed with its group."""
    PROCESS_STALLED = "process.stalled"
    """A subprocess printed nothing for its stall timeout and was killed with its group."""
    PROCESS_TIMEOUT = "process.timeout"
    """A subprocess ran past its time limit and was killed with its group."""

    QUALITY_GATE_BAD_OUTPUT = "quality_gate.bad_output"
    """The reviewer's answer is not the expected JSON verdict."""
    QUALITY_GATE_BUDGET_EXHAUSTED = "quality_gate.budget_exhausted"
    """The run spent its review budget: no reviewer starts; continue with self-review or raise
    `quality_gate.budget` (not an attempt)."""
    QUALITY_GATE_DAY_BUDGET_EXHAUSTED = "quality_gate.day_budget_exhausted"
    """The project's reviews spent or hold `quality_gate.max_budget_usd_per_day` today, on every
    server of the store, or a reviewer stopped at its slice of it: no reviewer starts until the
    day resets (not an attempt)."""
    QUALITY_GATE_DEEPREVIEW_INVALID = "quality_gate.deepreview_invalid"
    """A warning in `finished_step`'s `warnings`: a `.deepreview` file or rule could not be
    loaded, so the rules it concerns were not applied at the gate."""
    QUALITY_GATE_ERROR = "quality_gate.error"
    """Generic quality gate error."""
    QUALITY_GATE_EXECUTION_ERROR = "quality_gate.execution_error"
    """The reviewer failed while it ran (claude `error_during_execution`, a codex `turn.failed`,
    a gemini error result)."""
    QUALITY_GATE_EXIT_CODE = "quality_gate.exit_code"
    """The reviewer process exited with an error."""
    QUALITY_GATE_IS_ERROR = "quality_gate.is_error"
    """The reviewer reported an error instead of a verdict."""
    QUALITY_GATE_MAX_ATTEMPTS = "quality_gate.max_attempts"
    """The step failed review as many times as allowed; the feedback follows."""
    QUALITY_GATE_MAX_TURNS = "quality_gate.max_turns"
    """The reviewer ended with `subtype: error_max_turns` before it answered."""
    QUALITY_GATE_NOT_INSTALLED = "quality_gate.not_installed"
    """The reviewer command (`claude`, `codex` or `gemini`) is not on `PATH`."""
    QUALITY_GATE_OUTPUT_TOO_LARGE = "quality_gate.output_too_large"
    """The reviewer printed more than 8 MiB and was stopped."""
    QUALITY_GATE_OUTPUTS_CHANGED = "quality_gate.outputs_changed"
    """Files under review changed while a background review ran; call again (not an attempt)."""
    QUALITY_GATE_OVERRIDE_REASON_EMPTY = "quality_gate.override_reason_empty"
    """`quality_review_override_reason` was given but blank."""
    QUALITY_GATE_REVIEWER_FAILED = "quality_gate.reviewer_failed"
    """A background review ended with an unexpected error of the reviewer adapter."""
    QUALITY_GATE_REVIEWER_STALLED = "quality_gate.reviewer_stalled"
    """The reviewer went silent past `quality_gate.stall_timeout`, and so did its retry; use
    the self-review file named in the answer (not an attempt)."""
    QUALITY_GATE_STRUCTURED_OUTPUT_RETRIES = "quality_gate.structured_output_retries"
    """The reviewer ended with `subtype: error_max_structured_output_retries`."""
    QUALITY_GATE_TIMEOUT = "quality_gate.timeout"
    """A review ran past its time limit and was killed."""
    QUALITY_GATE_TRUNCATED = "quality_gate.truncated"
    """The reviewer's event stream ended without a result event."""
    QUALITY_GATE_UNKNOWN_SUBTYPE = "quality_gate.unknown_subtype"
    """The reviewer's result has a `subtype` this version does not know."""

    REVIEW_BASE_REF_UNKNOWN = "review.base_ref_unknown"
    """The base ref to compare the branch with does not exist."""
    REVIEW_CONFIG_INVALID = "review.config_invalid"
    """A `.deepreview` file or one of its rules is invalid."""
    REVIEW_CONFIG_OUTSIDE_PROJECT = "review.config_outside_project"
    """A `.deepreview` file is a symbolic link out of the project; it is ignored."""
    REVIEW_ERROR = "review.error"
    """Generic review error."""
    REVIEW_INSTRUCTIONS_INVALID = "review.instructions_invalid"
    """A rule's `instructions` is neither text nor `{file: …}`."""
    REVIEW_INSTRUCTIONS_MISSING = "review.instructions_missing"
    """A rule's instructions file cannot be read."""
    REVIEW_INSTRUCTIONS_OUTSIDE_PROJECT = "review.instructions_outside_project"
    """A rule's instructions file is outside the project."""
    REVIEW_INSTRUCTIONS_TOO_LARGE = "review.instructions_too_large"
    """A rule's instructions (inline or from a file) are longer than 256 KiB."""
    REVIEW_LOCK_TIMEOUT = "review.lock_timeout"
    """Another run held the lock on the review files for too long."""
    REVIEW_NO_PROJECT = "review.no_project"
    """The project folder does not exist."""
    REVIEW_NOT_A_GIT_REPOSITORY = "review.not_a_git_repository"
    """Changed files can only be found in a git work tree."""
    REVIEW_STATE_UNREADABLE = "review.state_unreadable"
    """A review pass list in `.deepwork/tmp/review_passes/` is not a file or cannot be read."""
    REVIEW_STDIN_TIMEOUT = "review.stdin_timeout"
    """`deepwork review` began reading a file list on stdin that did not end in time."""
    REVIEW_TOO_LARGE = "review.too_large"
    """One review run would write more than 64 MiB of instruction files."""
    REVIEW_UNKNOWN_REVIEW_ID = "review.unknown_review_id"
    """`mark_review_as_passed` was given an id no run handed out."""
    REVIEW_UNSUPPORTED_PLATFORM = "review.unsupported_platform"
    """The review tasks were asked for a platform DeepWork does not format for."""

    RUN_AGENT_MISSING = "run.agent_missing"
    """`deepwork run --agent X`: the agent's CLI is not on `PATH`, or (Gemini CLI) the DeepWork
    extension is not installed; the message says what to install."""
    RUN_BUSY = "run.busy"
    """`deepwork run JOB`: this checkout's main stack already holds an active run (parked, or left
    by an agent that failed or timed out), inside which the new one would be nested; resume that
    run with `deepwork run --resume`, or abort it first (docs/headless.md)."""
    RUN_NOT_RESUMABLE = "run.not_resumable"
    """`deepwork run --resume`: the session is not an active top-level run of this store
    (completed, aborted, nested, or in no project of it)."""
    RUN_WRONG_BRANCH = "run.wrong_branch"
    """`deepwork run --resume` of a run another checkout served: this checkout is not on the
    run's branch; check it out (as pushed) and resume again (docs/headless.md)."""
    RUN_OUTPUT_CHANGED = "run.output_changed"
    """`deepwork run --resume`: a completed step's output differs in this checkout from the
    bytes its step was accepted with (or is missing); it is named, and nothing is run again
    (docs/headless.md)."""

    SCAFFOLD_TEMPLATE = "scaffold.template"
    """A job template has a placeholder the scaffold does not fill (a bug)."""

    SERVE_BIND_FAILED = "serve.bind_failed"
    """`deepwork serve` over http or sse could not listen on the asked address and port
    (in use, or not allowed); pick another with `--port`, or `--port 0` for any free one."""

    SESSION_CHANGED = "session.changed"
    """The session moved on while its review ran; the result was discarded."""
    SESSION_ERROR = "session.error"
    """Generic session error."""
    SESSION_JOB_CHANGED = "session.job_changed"
    """The job was edited mid-run and the current step no longer matches; abort and restart."""
    SESSION_NONE_ACTIVE = "session.none_active"
    """No workflow is active (and no `session_id` was given)."""
    SESSION_NOT_ACTIVE = "session.not_active"
    """The given session exists but is completed or aborted."""
    SESSION_NOT_FOUND = "session.not_found"
    """No session has the given id."""
    SESSION_PARKED = "session.parked"
    """A headless run is parked for a person (docs/headless.md); the agent stops, and
    `deepwork run --resume SESSION` continues it after the person acted."""
    SESSION_STATE_CORRUPT = "session.state_corrupt"
    """A session in the store, or an old state file being imported, cannot be read; it is named."""

    TEXT_INVALID = "text.invalid"
    """Text is not valid Unicode (a lone surrogate)."""
    TEXT_TOO_LONG = "text.too_long"
    """Text is longer than the limit for that argument."""

    TRUST_KEY_MALFORMED = "trust.key_malformed"
    """A `.pub` file as committed on the trusted ref is not one public key; the message names
    it. No key of its folder is trusted until it is fixed there (docs/security.md)."""
    TRUST_REF_NOT_FOUND = "trust.ref_not_found"
    """The ref keys are trusted from (`approvals.trusted_ref`, else `origin/HEAD`, `main`,
    `master`) names no commit, or the project is not in git; the message names the ref."""

    WORKFLOW_EMPTY = "workflow.empty"
    """The workflow has no steps."""
    WORKFLOW_NOT_FOUND = "workflow.not_found"
    """The job has no workflow of that name; the error lists its workflows."""
    WORKFLOW_SUB_WORKFLOW_DEPTH = "workflow.sub_workflow_depth"
    """Sub-workflow steps would nest workflows too deep; look for a loop of `sub_workflow`
    references across jobs."""

    YAML_DUPLICATE_KEY = "yaml.duplicate_key"
    """A mapping has the same key twice."""
    YAML_EMPTY = "yaml.empty"
    """The file is empty."""
    YAML_INVALID = "yaml.invalid"
    """Generic YAML error."""
    YAML_NOT_MAPPING = "yaml.not_mapping"
    """The top level is not a mapping."""
    YAML_NOT_TEXT = "yaml.not_text"
    """The file is binary or not UTF-8."""
    YAML_SYNTAX = "yaml.syntax"
    """The file is not valid YAML."""
    YAML_TOO_COMPLEX = "yaml.too_complex"
    """The document nests too deeply or uses too many aliases."""
    YAML_TOO_LARGE = "yaml.too_large"
    """The file is larger than allowed."""
    YAML_UNREADABLE = "yaml.unreadable"
    """The file cannot be read."""
