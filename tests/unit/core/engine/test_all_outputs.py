"""`all_outputs` of a completed workflow keeps every file a run made (docs/runtime.md): an
output name two steps produce (a job's instruction files written by `implement`, then the ones
`iterate` changed) lists the files of both, and no earlier step's file is dropped."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from deepwork_core.engine.results import FinishStatus
from deepwork_core.engine.workflow import WorkflowEngine
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.state.sessions import SessionStore
from deepwork_core.state.store.port import Store

JOB = """\
name: twice
version: "1.0.0"
summary: "Write the pages, then improve some"
common_job_info_provided_to_all_steps_at_runtime: "Pages live at the top of the project."
workflows:
  - name: main
    summary: "Write, improve"
    steps: [write, improve]
steps:
  - id: write
    name: Write
    description: Write every page and the index
    instructions_file: steps/write.md
    outputs:
      pages: {type: files, description: "Every page", required: true}
      index: {type: file, description: "The index", required: true}
    reviews: []
  - id: improve
    name: Improve
    description: Improve some pages and the index
    instructions_file: steps/improve.md
    dependencies: [write]
    outputs:
      pages: {type: files, description: "The pages that changed", required: true}
      index: {type: file, description: "The index", required: true}
    reviews: []
"""


def test_a_name_two_steps_produce_keeps_the_files_of_both(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    root = tmp_path.resolve()
    job_dir = root / ".deepwork" / "jobs" / "twice"
    (job_dir / "steps").mkdir(parents=True)
    (job_dir / "job.yml").write_text(JOB)
    for name in ("write", "improve"):
        (job_dir / "steps" / f"{name}.md").write_text(f"# {name}\n")
    for name in ("a.md", "b.md", "c.md", "index.md"):
        (root / name).write_text(f"{name}\n")
    engine = WorkflowEngine(
        root, JobCatalog.for_project(root), SessionStore(make_store(root), root)
    )
    engine.start("g", "twice", "main")
    engine.finish({"pages": ["a.md", "b.md"], "index": "index.md"})
    done = engine.finish({"pages": ["b.md", "c.md"], "index": "index.md"})
    assert done.status is FinishStatus.WORKFLOW_COMPLETE
    assert done.all_outputs == {"pages": ["a.md", "b.md", "c.md"], "index": "index.md"}
