"""The registry of every stable error code DeepWork reports, with what each one means.

Codes are `area.snake_case`. A code reaches a user in one of three ways: as the start of an MCP
tool error (`<code>: <message>`), as a `file:line: <code>: <message>` finding about a file the
user wrote (`job.yml`, a doc spec, a `.deepreview`), or on the `deepwork` command line's stderr.

`docs/errors.md` is generated from this table (`python tools/gen_errors_doc.py write`), and a
test checks that every code the packages use is listed here and every listed code is used.
"""

from __future__ import annotations

#: Area (the part before the dot) -> what the codes of that area are about.
AREAS: dict[str, str] = {
    "approval": "Human approvals of a step (`deepwork approve`, the client's form).",
    "arguments": "Tool arguments that do not match the tool's input schema.",
    "config": "`.deepwork/config.yml` and other settings.",
    "convert": "`deepwork jobs convert`: writing a job in the other `job.yml` format.",
    "deepwork": "The root of the error hierarchy.",
    "doc_spec": "Doc spec files (Markdown with YAML frontmatter) that outputs refer to.",
    "events": "Session event logs under `.deepwork/tmp/events/` (`deepwork log`).",
    "file": "Reading a file of the project (`docs/limits.md`); callers usually report these "
    "under their own code.",
    "git": "Running git.",
    "graph": "Drawing a workflow (`deepwork jobs graph`).",
    "hook": "`deepwork hook NAME`, the command the plugins run on lifecycle events.",
    "identifier": "Names and ids sent by an agent.",
    "inputs": "Start parameters given to `start_workflow` (`inputs`).",
    "internal": "Bugs.",
    "job": "Loading and checking `job.yml` files, and finding jobs.",
    "navigation": "Moving within a workflow (`go_to_step`).",
    "outputs": "Outputs submitted to `finished_step`.",
    "path": "Paths sent by an agent.",
    "process": "Subprocesses.",
    "quality_gate": "The quality gate and its reviewer.",
    "review": "DeepWork Reviews: `.deepreview` files, changed files, review tasks.",
    "scaffold": "`deepwork jobs new`.",
    "session": "Workflow sessions and the stack under `.deepwork/tmp/`.",
    "text": "Free text sent by an agent.",
    "workflow": "Workflows of a job.",
    "yaml": "Reading any YAML file safely.",
}

#: Code -> what it means and what to do about it.
CODES: dict[str, str] = {
    "approval.already_decided": "The approval request was already approved or rejected; a "
    "request is decided once (the next `finished_step` opens a new one if needed).",
    "approval.corrupt": "An approval file under `.deepwork/tmp/approvals/` cannot be read; "
    "delete it and have the agent call `finished_step` again.",
    "approval.error": "Generic approval error.",
    "approval.none_pending": "The session has no step waiting for approval.",
    "approval.outputs_changed": "A file shown for approval changed after the request was "
    "opened; the agent must call `finished_step` again so the new content is reviewed first.",
    "approval.request_changed": "The approval request was replaced by a newer one while the "
    "human looked at it; look at the new one.",
    "arguments.invalid": "A tool was called with arguments its input schema rejects; the error "
    "names each bad argument. Call again with arguments that match the schema.",
    "config.invalid": "`.deepwork/config.yml` is not valid (unknown key, wrong type, bad value).",
    "deepwork.error": "Generic DeepWork error; every specific error has its own code.",
    "doc_spec.invalid": "A doc spec file is invalid; the findings follow.",
    "doc_spec.invalid_value": "A doc spec frontmatter key has a value of the wrong kind.",
    "doc_spec.missing_key": "A doc spec frontmatter lacks a required key.",
    "doc_spec.no_frontmatter": "A doc spec does not start with a `---` frontmatter block, or "
    "the block is not closed.",
    "doc_spec.unknown_key": "A doc spec frontmatter has a key the format does not define.",
    "doc_spec.unreadable": "A doc spec file cannot be read or is too large.",
    "doc_spec.yaml": "A doc spec frontmatter is not valid YAML.",
    "events.corrupt": "An event log has a line that is not an event record, or is not a regular "
    "file; the error names the file and line.",
    "events.error": "Generic event log error.",
    "events.too_large": "An event log is larger than the 64 MiB a reader loads.",
    "file.not_found": "A project file that was to be read does not exist.",
    "file.not_regular": "A project file is a FIFO, socket, device or folder; it is not opened "
    "for reading, so it cannot block.",
    "file.not_text": "A project file is not UTF-8 text.",
    "file.too_large": "A project file is larger than the limit for its kind (`docs/limits.md`).",
    "file.unreadable": "A project file cannot be opened or read.",
    "git.failed": "A git command exited with an error.",
    "git.not_installed": "git is not on `PATH`.",
    "git.output_too_large": "A git command printed more than its output cap and was killed.",
    "git.timeout": "A git command ran past its time limit and was killed.",
    "graph.render_failed": "Graphviz `dot` failed or ran past its time limit while drawing SVG.",
    "graph.renderer_missing": "SVG needs Graphviz's `dot` program, which is not on `PATH`; "
    "install Graphviz or use `--format mermaid`.",
    "hook.bad_input": "The event on a hook's stdin is not a JSON object.",
    "hook.bad_platform": "`DEEPWORK_HOOK_PLATFORM` names a platform other than `claude` or "
    "`gemini`.",
    "hook.bad_setting": "A hook time-limit variable is not a finite number of seconds above 0 "
    "and at most one day.",
    "hook.error": "Generic hook error.",
    "hook.prompt_file": "A job hook's `prompt_file` cannot be read.",
    "hook.script_failed": "A job hook script could not start or exited with an error.",
    "hook.script_output_too_large": "A job hook script printed more than 1 MiB and was killed.",
    "hook.script_timeout": "A job hook script ran past its time limit and was killed.",
    "hook.stdin_timeout": "No complete event arrived on a hook's stdin in time.",
    "hook.unknown": "`deepwork hook` was given a hook name it does not know.",
    "identifier.invalid": "A job, workflow, step or session name does not match its pattern.",
    "internal.error": "A tool failed on a bug; the traceback is in the server log.",
    "job.already_exists": "`deepwork jobs new` was asked for a job folder that exists.",
    "job.dependency_cycle": "Step dependencies form a cycle, or a step depends on itself.",
    "job.duplicate_group_output": "Two steps of one concurrent group declare the same output.",
    "job.duplicate_step_id": "Two steps have the same `id`.",
    "job.duplicate_workflow": "Two workflows have the same `name`.",
    "job.duplicate_workflow_step": "A workflow lists the same step twice.",
    "job.file_missing": "A file the job refers to (instructions, doc spec, hook file) does not "
    "exist.",
    "job.input_not_dependency": "A file input comes from a step that is not in `dependencies`.",
    "job.invalid": "A job failed to load; the findings follow.",
    "job.invalid_approval": "A step's `approval.show` names something that is not one of its "
    "outputs.",
    "job.invalid_hook_action": "A hook action is not exactly one of `prompt`, `prompt_file`, "
    "`script`.",
    "job.invalid_input": "A step input is neither a parameter (`name`, `description`) nor a "
    "file (`file`, `from_step`).",
    "job.invalid_may_change": "A `may_change` glob starts with `/` or contains `..`; globs are "
    "relative to the project.",
    "job.invalid_run_each": "A review's `run_each` is neither `step` nor an output of the step.",
    "job.invalid_value": "A value is not allowed here.",
    "job.missing_key": "A required key is missing.",
    "job.name_mismatch": "The job's `name` differs from the name of its folder.",
    "job.not_found": "No job of that name was found in any job folder.",
    "job.path_outside_job": "A path in `job.yml` points outside the job folder.",
    "job.pattern_mismatch": "A name or version does not match its pattern.",
    "job.too_long": "A value or list is longer than allowed.",
    "job.too_short": "A value or list is shorter than allowed (for example empty).",
    "job.unknown_dependency": "`dependencies` names a step the job does not have.",
    "job.unknown_from_step": "An input's `from_step` names a step the job does not have.",
    "job.unknown_input_file": "An input names a file the source step does not declare.",
    "job.unknown_key": "A key the format does not define (often a typo).",
    "job.unknown_workflow_step": "A workflow lists a step the job does not have.",
    "job.unreachable_step": "Warning: a step is in no workflow, so agents cannot run it.",
    "job.workflow_order": "A workflow runs a step before, or together with, one it depends on.",
    "job.wrong_type": "A value has the wrong type (for example a list where a map belongs).",
    "navigation.error": "Generic navigation error.",
    "navigation.forward_jump": "`go_to_step` named a step after the current one; it only goes "
    "back. The message lists the valid targets.",
    "navigation.unknown_step": "`go_to_step` named a step that is not in the session's workflow. "
    "The message lists the valid targets.",
    "outputs.empty_list": "A `files` output was submitted as an empty list.",
    "outputs.file_not_found": "A submitted output path does not exist, or is too long.",
    "outputs.invalid": "Submitted outputs do not match the step's declaration.",
    "outputs.missing": "A required output was not submitted.",
    "outputs.not_a_file": "A submitted output path is a folder or other non-file.",
    "outputs.unknown": "An output name the step does not declare was submitted.",
    "outputs.wrong_type": "A `file` output was not one path, or a `files` output not a list of "
    "paths.",
    "path.git_internal": "A path lies inside a `.git` folder; git's own files are never an "
    "output or a review input.",
    "path.outside_project": "A path resolves, after symbolic links, outside the project.",
    "process.cancelled": "A subprocess was stopped because its caller gave up (the call was "
    "cancelled).",
    "process.output_too_large": "A subprocess printed more than its output cap and was killed "
    "with its group.",
    "process.timeout": "A subprocess ran past its time limit and was killed with its group.",
    "quality_gate.bad_output": "The reviewer's answer is not the expected JSON verdict.",
    "quality_gate.error": "Generic quality gate error.",
    "quality_gate.exit_code": "The reviewer process exited with an error.",
    "quality_gate.is_error": "The reviewer reported an error instead of a verdict.",
    "quality_gate.max_attempts": "The step failed review as many times as allowed; the feedback "
    "follows.",
    "quality_gate.not_installed": "The reviewer command (`claude`) is not on `PATH`.",
    "quality_gate.output_too_large": "The reviewer printed more than 8 MiB and was stopped.",
    "quality_gate.override_reason_empty": "`quality_review_override_reason` was given but blank.",
    "quality_gate.timeout": "A review ran past its time limit and was killed.",
    "review.base_ref_unknown": "The base ref to compare the branch with does not exist.",
    "review.config_invalid": "A `.deepreview` file or one of its rules is invalid.",
    "review.config_outside_project": "A `.deepreview` file is a symbolic link out of the project; "
    "it is ignored.",
    "review.error": "Generic review error.",
    "review.instructions_invalid": "A rule's `instructions` is neither text nor `{file: …}`.",
    "review.instructions_missing": "A rule's instructions file cannot be read.",
    "review.instructions_outside_project": "A rule's instructions file is outside the project.",
    "review.instructions_too_large": "A rule's instructions (inline or from a file) are longer "
    "than 256 KiB.",
    "review.lock_timeout": "Another run held the lock on the review files for too long.",
    "review.no_project": "The project folder does not exist.",
    "review.state_unreadable": "A review pass list under `.deepwork/tmp/review_passes/` is not "
    "a regular file or cannot be read or written.",
    "review.not_a_git_repository": "Changed files can only be found in a git work tree.",
    "review.stdin_timeout": "`deepwork review` began reading a file list on stdin that did not "
    "end in time.",
    "review.too_large": "One review run would write more than 64 MiB of instruction files.",
    "review.unknown_review_id": "`mark_review_as_passed` was given an id no run handed out.",
    "review.unsupported_platform": "The review tasks were asked for a platform DeepWork does not "
    "format for.",
    "scaffold.template": "A job template has a placeholder the scaffold does not fill (a bug).",
    "session.changed": "The session moved on while its review ran; the result was discarded.",
    "session.error": "Generic session error.",
    "session.job_changed": "The job was edited while its workflow ran and the current step no "
    "longer matches; abort and start again.",
    "session.lock_timeout": "Another process held the state lock for too long.",
    "session.none_active": "No workflow is active (and no `session_id` was given).",
    "session.not_active": "The given session exists but is completed or aborted.",
    "session.not_found": "No session has the given id.",
    "session.state_corrupt": "A state file under `.deepwork/tmp/` cannot be read; it is named.",
    "text.invalid": "Text is not valid Unicode (a lone surrogate).",
    "text.too_long": "Text is longer than the limit for that argument.",
    "workflow.empty": "The workflow has no steps.",
    "workflow.not_found": "The job has no workflow of that name; the error lists its workflows.",
    "yaml.duplicate_key": "A mapping has the same key twice.",
    "yaml.empty": "The file is empty.",
    "yaml.invalid": "Generic YAML error.",
    "yaml.not_mapping": "The top level is not a mapping.",
    "yaml.not_text": "The file is binary or not UTF-8.",
    "yaml.syntax": "The file is not valid YAML.",
    "yaml.too_complex": "The document nests too deeply or uses too many aliases.",
    "yaml.too_large": "The file is larger than allowed.",
    "yaml.unreadable": "The file cannot be read.",
    "convert.file_exists": "The converted job would overwrite a file (the converted `job.yml`, its "
    "backup, or an instruction file); move it away first.",
    "convert.invalid_result": "The converted job would not be valid; a bug in the converter, "
    "please report it.",
    "convert.invalid_source": "The job to convert is not valid; fix it first (`deepwork jobs "
    "validate`).",
    "convert.same_format": "The job is already written in the format asked for.",
    "inputs.file_not_found": "A start parameter of type `file_path` names a file that does not "
    "exist.",
    "inputs.invalid": "The values given to `start_workflow` are not valid.",
    "inputs.unknown": "`inputs` names a parameter no step of the workflow declares; the error "
    "lists the accepted ones.",
    "inputs.wrong_type": "A start parameter has the wrong type: text for `string`, a path or a "
    "list of paths for `file_path`.",
    "job.duplicate_argument": "Warning (0.10+ format): a step argument is declared twice; the "
    "first declaration is used.",
    "job.invalid_json_schema": "A `json_schema` of a step argument is not a valid JSON Schema.",
    "job.json_schema_external_ref": "A `$ref` in a `json_schema` points outside the schema (a "
    "URL or a file); DeepWork fetches nothing, so it is refused when the job loads.",
    "job.json_schema_ref_cycle": "References in a `json_schema` lead back to where they started "
    "without descending into the document (`$ref: '#'`): an endless loop.",
    "job.json_schema_unsupported_pattern": "A `pattern` or `patternProperties` key of a "
    "`json_schema` is not a regular expression RE2 runs in linear time (backreferences, "
    "lookaround).",
    "job.invalid_step_body": "A step has none, or more than one, of `instructions`, "
    "`instructions_file` and `sub_workflow`.",
    "job.json_schema_ignored": "Warning (0.10+ format): `json_schema` on a `string` argument has "
    "no effect.",
    "job.sub_workflow_cycle": "A workflow starts itself through `sub_workflow` steps, directly or "
    "through others of the job.",
    "job.unknown_argument": "A step input or output (0.10+ format) names no declared step "
    "argument.",
    "job.unknown_workflow": "A `sub_workflow` names a workflow the job does not define.",
    "outputs.json_too_large": "A file checked against a `json_schema` is larger than "
    "`outputs.json_max_bytes` (default 16 MiB); the error names both sizes.",
    "outputs.json_too_deep": "A file checked against a `json_schema` nests arrays and objects "
    "more than 100 levels deep.",
    "outputs.schema_check_timeout": "Checking a file against its `json_schema` took longer than "
    "`outputs.json_check_seconds` (default 10 s).",
    "outputs.schema_unusable": "An output's `json_schema` cannot be run safely (a reference "
    "outside it, an endless loop, a pattern RE2 cannot run); `deepwork jobs validate` names it.",
    "outputs.schema_mismatch": "A submitted file does not parse as JSON or does not satisfy the "
    "output’s `json_schema`; the error names each violation.",
    "workflow.sub_workflow_depth": "Sub-workflow steps would nest workflows too deep; look for a "
    "loop of `sub_workflow` references across jobs.",
}


def area_of(code: str) -> str:
    """The area of `code`: the part before the first dot."""
    return code.split(".", 1)[0]
