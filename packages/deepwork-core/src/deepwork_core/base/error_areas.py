"""The areas of the error codes: the part of a code before the dot, and what it is about.

`docs/errors.md` has one section per area (`python tools/gen_errors_doc.py write`); a test
checks that every code of every family (`deepwork_core.base.error_codes.ErrorCode`,
`deepwork_core.jobs.errors.JobCode`, `deepwork_core.receipts.codes.ReceiptCode`) falls in one
of these areas.
"""

from __future__ import annotations

from functools import cache

#: Area (the part before the dot) -> what the codes of that area are about.
AREAS: dict[str, str] = {
    "approval": "Human approvals of a step (`deepwork approve`, the client's form).",
    "arguments": "Tool arguments that do not match the tool's input schema.",
    "audit": "`deepwork audit`: a run's approvals exported as one signed record and checked "
    "offline (docs/team.md).",
    "calibration": "`deepwork calibrate`: reviewers measured against cases with known verdicts "
    "(docs/quality-gate.md).",
    "config": "`.deepwork/config.yml` and other settings.",
    "convert": "`deepwork jobs convert`: writing a job in the other `job.yml` format.",
    "dashboard": "`deepwork dashboard` and `deepwork report`: the pages of runs in a browser.",
    "deepwork": "The root of the error hierarchy.",
    "doc_spec": "Doc spec files (Markdown with YAML frontmatter) that outputs refer to.",
    "events": "Session event logs under `.deepwork/tmp/events/` (`deepwork log`).",
    "fan_out": "Steps run once per item (`for_each`) and their worktrees (docs/fan-out.md).",
    "file": "Reading a file of the project (`docs/limits.md`); callers usually report these "
    "under their own code.",
    "git": "Running git.",
    "graph": "Drawing a workflow (`deepwork jobs graph`).",
    "hook": "`deepwork hook NAME`, the command the plugins run on lifecycle events.",
    "identifier": "Names and ids sent by an agent.",
    "inputs": "Start parameters given to `start_workflow` (`inputs`).",
    "install": "`deepwork install`: writing DeepWork into a client's project files "
    "(docs/platforms.md).",
    "internal": "Bugs.",
    "job": "Loading and checking `job.yml` files, and finding jobs.",
    "library": "`deepwork jobs add`: copying a job of the job library into a project "
    "(docs/job-library.md).",
    "navigation": "Moving within a workflow (`go_to_step`).",
    "outputs": "Outputs submitted to `finished_step`.",
    "path": "Paths sent by an agent.",
    "process": "Subprocesses.",
    "quality_gate": "The quality gate and its reviewer.",
    "receipt": "The receipt a completed run leaves in `.deepwork/receipts/` (docs/verify.md).",
    "review": "DeepWork Reviews: `.deepreview` files, changed files, review tasks.",
    "run": "`deepwork run`: a job run by an agent no person attends (docs/headless.md).",
    "scaffold": "`deepwork jobs new`.",
    "serve": "`deepwork serve` over http or sse: the address it listens on.",
    "session": "Workflow sessions and the stack under `.deepwork/tmp/`.",
    "store": "The store of run state: SQLite or PostgreSQL (docs/runtime-layout.md).",
    "text": "Free text sent by an agent.",
    "verify": "`deepwork verify`: the findings about receipts, keys and policy (docs/verify.md).",
    "trust": "Public keys trusted as committed on the base ref (docs/security.md).",
    "workflow": "Workflows of a job.",
    "yaml": "Reading any YAML file safely.",
}


def area_of(code: str) -> str:
    """The area of `code`: the part before the first dot."""
    return code.split(".", 1)[0]


@cache
def member_meanings(family: type) -> dict[str, str]:
    """Member name -> meaning, read from the string under each member of the code family
    `family` (`ErrorCode`, or another family of `Code`).

    Parsed from the family's module source when first asked for (by the docs generator and the
    tests), so the server, which never needs a meaning, never pays for it.
    """
    import ast
    import sys
    from itertools import pairwise
    from pathlib import Path

    module = sys.modules[family.__module__]
    source = Path(str(module.__file__)).read_text(encoding="utf-8")
    tree = ast.parse(source)
    body = next(
        n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == family.__name__
    ).body
    meanings: dict[str, str] = {}
    for member, doc in pairwise(body):
        if (
            isinstance(member, ast.Assign)
            and isinstance(member.targets[0], ast.Name)
            and isinstance(doc, ast.Expr)
            and isinstance(doc.value, ast.Constant)
            and isinstance(doc.value.value, str)
        ):
            meanings[member.targets[0].id] = " ".join(doc.value.value.split())
    return meanings
