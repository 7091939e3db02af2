"""The codes of loading and checking jobs (`job.*`) and the errors that carry them: one family
of `Code`, kept beside the job loader as the store's and the fan-out's are beside theirs;
docs/errors.md lists them with every other code."""

from __future__ import annotations

from collections.abc import Sequence

from deepwork_core.base.error_codes import Code
from deepwork_core.base.errors import DeepWorkError, Problem


class JobCode(Code):
    """A `job.*` code; the string under each member says what it means."""

    JOB_ALREADY_EXISTS = "job.already_exists"
    """`deepwork jobs new` was asked for a job folder that exists."""
    JOB_DEPENDENCY_CYCLE = "job.dependency_cycle"
    """Step dependencies form a cycle, or a step depends on itself."""
    JOB_DUPLICATE_ARGUMENT = "job.duplicate_argument"
    """Warning (0.10 format): a step argument is declared twice; the first declaration is used."""
    JOB_DUPLICATE_GROUP_OUTPUT = "job.duplicate_group_output"
    """Two steps of one concurrent group declare the same output."""
    JOB_DUPLICATE_STEP_ID = "job.duplicate_step_id"
    """Two steps have the same `id`."""
    JOB_DUPLICATE_WORKFLOW = "job.duplicate_workflow"
    """Two workflows have the same `name`."""
    JOB_DUPLICATE_WORKFLOW_STEP = "job.duplicate_workflow_step"
    """A workflow lists the same step twice."""
    JOB_FILE_MISSING = "job.file_missing"
    """A file the job refers to (instructions, doc spec, hook file) does not exist."""
    JOB_INPUT_NOT_DEPENDENCY = "job.input_not_dependency"
    """A file input comes from a step that is not in `dependencies`."""
    JOB_INVALID = "job.invalid"
    """A job failed to load; the findings follow."""
    JOB_INVALID_APPROVAL = "job.invalid_approval"
    """A step's `approval.show` names something that is not one of its outputs."""
    JOB_INVALID_HOOK_ACTION = "job.invalid_hook_action"
    """A hook action is not exactly one of `prompt`, `prompt_file`, `script`."""
    JOB_INVALID_INPUT = "job.invalid_input"
    """A step input is neither a parameter (`name`, `description`) nor a file (`file`,
    `from_step`)."""
    JOB_INVALID_JSON_SCHEMA = "job.invalid_json_schema"
    """A `json_schema` of a step argument is not a valid JSON Schema."""
    JOB_INVALID_FOR_EACH = "job.invalid_for_each"
    """A misplaced `for_each`, its companion keys without it, or `isolation: worktree` or a
    0.10-format `concurrent_group` where no group takes it (docs/fan-out.md)."""
    JOB_INVALID_MAY_CHANGE = "job.invalid_may_change"
    """A `may_change` glob starts with `/` or contains `..`; globs are relative to the project."""
    JOB_INVALID_RUN_EACH = "job.invalid_run_each"
    """A review's `run_each` is neither `step` nor an output of the step."""
    JOB_INVALID_STEP_BODY = "job.invalid_step_body"
    """A step has none, or more than one, of `instructions`, `instructions_file` and
    `sub_workflow`."""
    JOB_INVALID_VALUE = "job.invalid_value"
    """A value is not allowed here."""
    JOB_JSON_SCHEMA_EXTERNAL_REF = "job.json_schema_external_ref"
    """A `$ref` in a `json_schema` points outside the schema (a URL or a file); DeepWork fetches
    nothing, so it is refused when the job loads."""
    JOB_JSON_SCHEMA_IGNORED = "job.json_schema_ignored"
    """Warning (0.10 format): `json_schema` on a `string` argument has no effect."""
    JOB_JSON_SCHEMA_REF_CYCLE = "job.json_schema_ref_cycle"
    """References in a `json_schema` lead back to where they started without descending into
    the document (`$ref: '#'`): an endless loop."""
    JOB_JSON_SCHEMA_UNSUPPORTED_PATTERN = "job.json_schema_unsupported_pattern"
    """A `pattern` or `patternProperties` key of a `json_schema` is not a regular expression RE2
    runs in linear time (backreferences, lookaround)."""
    JOB_MISSING_KEY = "job.missing_key"
    """A required key is missing."""
    JOB_NAME_MISMATCH = "job.name_mismatch"
    """The job's `name` differs from the name of its folder."""
    JOB_NOT_FOUND = "job.not_found"
    """No job of that name was found in any job folder."""
    JOB_PATH_OUTSIDE_JOB = "job.path_outside_job"
    """A path in `job.yml` points outside the job folder."""
    JOB_PATTERN_MISMATCH = "job.pattern_mismatch"
    """A name or version does not match its pattern."""
    JOB_SUB_WORKFLOW_CYCLE = "job.sub_workflow_cycle"
    """A workflow starts itself through `sub_workflow` steps, directly or through others of the
    job."""
    JOB_TOO_LONG = "job.too_long"
    """A value or list is longer than allowed."""
    JOB_TOO_SHORT = "job.too_short"
    """A value or list is shorter than allowed (for example empty)."""
    JOB_UNKNOWN_ARGUMENT = "job.unknown_argument"
    """A step input or output (0.10 format) names no declared step argument."""
    JOB_UNKNOWN_DEPENDENCY = "job.unknown_dependency"
    """`dependencies` names a step the job does not have."""
    JOB_UNKNOWN_FROM_STEP = "job.unknown_from_step"
    """An input's `from_step` names a step the job does not have."""
    JOB_UNKNOWN_INPUT_FILE = "job.unknown_input_file"
    """An input names a file the source step does not declare."""
    JOB_UNKNOWN_KEY = "job.unknown_key"
    """A key the format does not define (often a typo)."""
    JOB_UNKNOWN_WORKFLOW = "job.unknown_workflow"
    """A `sub_workflow` names a workflow the job does not define."""
    JOB_UNKNOWN_WORKFLOW_STEP = "job.unknown_workflow_step"
    """A workflow lists a step the job does not have."""
    JOB_UNREACHABLE_STEP = "job.unreachable_step"
    """Warning: a step is in no workflow, so agents cannot run it."""
    JOB_WORKFLOW_ORDER = "job.workflow_order"
    """A workflow runs a step before, or together with, one it depends on."""
    JOB_WRONG_TYPE = "job.wrong_type"
    """A value has the wrong type (for example a list where a map belongs)."""


class JobNotFoundError(DeepWorkError):
    code = JobCode.JOB_NOT_FOUND
    agent_fixable = True


class JobInvalidError(DeepWorkError):
    """A job failed to load; `problems` lists every finding."""

    code = JobCode.JOB_INVALID

    def __init__(self, message: str, problems: Sequence[Problem] = (), *, code: Code | None = None):
        super().__init__(message, code=code)
        self.problems = tuple(problems)
