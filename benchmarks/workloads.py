"""Workload generators: projects the benchmarks run against, written into a given folder.

Each generator writes plain files (jobs, instruction files, a git repository with `.deepreview`
rules) and returns what the benchmark needs to drive it. Nothing here talks to the server.
"""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass
from pathlib import Path

from deepwork_core.base.process import run_bounded

GIT_TIMEOUT = 120.0
_GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_TERMINAL_PROMPT": "0",
}


def _jobs_dir(project: Path) -> Path:
    path = project / ".deepwork" / "jobs"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _step_yaml(step_id: str, previous: str | None, output: str) -> str:
    """One step with an output file, and a file input from the previous step when there is one."""
    if previous is None:
        inputs = "    inputs:\n      - name: topic\n        description: What the run is about\n"
        dependencies = "    dependencies: []\n"
    else:
        inputs = f"    inputs:\n      - file: {previous}_out.md\n        from_step: {previous}\n"
        dependencies = f"    dependencies:\n      - {previous}\n"
    return (
        f"  - id: {step_id}\n"
        f"    name: Step {step_id}\n"
        f"    description: Produce {output} for the benchmark workload\n"
        f"    instructions_file: steps/{step_id}.md\n"
        f"{inputs}"
        "    outputs:\n"
        f"      {output}:\n"
        "        type: file\n"
        f"        description: The result of {step_id}\n"
        "        required: true\n"
        f"{dependencies}"
        "    reviews: []\n"
    )


def write_job(
    jobs_dir: Path,
    name: str,
    *,
    steps: int,
    workflows: dict[str, int],
    summary: str | None = None,
) -> Path:
    """Write job `name` with `steps` chained steps and workflows {name: first-n-steps}.

    Every step has an instruction file under `steps/`. Returns the path of the job.yml.
    """
    job_dir = jobs_dir / name
    (job_dir / "steps").mkdir(parents=True, exist_ok=True)
    step_ids = [f"s{index:02d}" for index in range(1, steps + 1)]
    lines = [
        f"name: {name}\n",
        'version: "1.0.0"\n',
        f"summary: {summary or f'Benchmark job {name}'}\n",
        f"description: A generated job with {steps} steps used by the DeepWork benchmarks.\n",
        "common_job_info_provided_to_all_steps_at_runtime: |\n",
        "  This job exists to measure the DeepWork server. Each step writes one small file.\n",
        "workflows:\n",
    ]
    for workflow, length in workflows.items():
        lines.append(f"  - name: {workflow}\n")
        lines.append(f"    summary: Run the first {length} steps of {name}\n")
        lines.append("    steps:\n")
        lines.extend(f"      - {step_id}\n" for step_id in step_ids[:length])
    lines.append("steps:\n")
    previous: str | None = None
    for step_id in step_ids:
        lines.append(_step_yaml(step_id, previous, f"{step_id}_out.md"))
        (job_dir / "steps" / f"{step_id}.md").write_text(
            f"# {step_id}\n\nWrite `{step_id}_out.md` with one paragraph about the topic.\n"
        )
        previous = step_id
    job_yml = job_dir / "job.yml"
    job_yml.write_text("".join(lines))
    return job_yml


def write_job_014(jobs_dir: Path, name: str, *, steps: int, workflows: dict[str, int]) -> Path:
    """Like `write_job`, in the 0.10+ format: arguments, inline instructions, a review.

    Each step reads the previous step's output argument; the last output carries a review.
    """
    job_dir = jobs_dir / name
    job_dir.mkdir(parents=True, exist_ok=True)
    step_ids = [f"s{index:02d}" for index in range(1, steps + 1)]
    lines = [
        f"name: {name}\n",
        f"summary: Benchmark job {name} (0.10+ format)\n",
        "step_arguments:\n",
        "  - name: topic\n    description: What the run is about\n    type: string\n",
    ]
    for step_id in step_ids:
        lines.append(f"  - name: {step_id}_out.md\n")
        lines.append(f"    description: The result of {step_id}\n    type: file_path\n")
    lines.append("    review:\n      strategy: matches_together\n")
    lines.append("      instructions: The result MUST answer the topic.\n")
    lines.append("workflows:\n")
    for workflow, length in workflows.items():
        lines.append(f"  {workflow}:\n    summary: Run the first {length} steps of {name}\n")
        lines.append("    common_job_info_provided_to_all_steps_at_runtime: |\n")
        lines.append("      This job exists to measure the DeepWork server.\n    steps:\n")
        previous = "topic"
        for step_id in step_ids[:length]:
            lines.append(f"      - name: {step_id}\n")
            lines.append(f"        instructions: Write {step_id}_out.md about the topic.\n")
            lines.append(f"        inputs:\n          {previous}: {{}}\n")
            lines.append(f"        outputs:\n          {step_id}_out.md: {{}}\n")
            previous = f"{step_id}_out.md"
    job_yml = job_dir / "job.yml"
    job_yml.write_text("".join(lines))
    return job_yml


@dataclass(frozen=True)
class JobsProject:
    root: Path
    job_names: list[str]

    def job_yml(self, name: str) -> Path:
        return self.root / ".deepwork" / "jobs" / name / "job.yml"


def make_jobs_project(root: Path, count: int) -> JobsProject:
    """`count` jobs of 5 steps and 2 workflows (`full`: all 5, `short`: the first 2)."""
    jobs_dir = _jobs_dir(root)
    names = [f"bench_job_{index:04d}" for index in range(count)]
    for name in names:
        write_job(jobs_dir, name, steps=5, workflows={"full": 5, "short": 2})
    return JobsProject(root, names)


def make_mixed_project(root: Path, count: int) -> JobsProject:
    """`count` jobs like `make_jobs_project`, every second one in the 0.10+ format."""
    jobs_dir = _jobs_dir(root)
    names = [f"mixed_job_{index:04d}" for index in range(count)]
    for index, name in enumerate(names):
        writer = write_job_014 if index % 2 else write_job
        writer(jobs_dir, name, steps=5, workflows={"full": 5, "short": 2})
    return JobsProject(root, names)


def edit_job_summary(job_yml: Path, new_summary: str) -> None:
    """Change the `summary:` line of a generated job.yml (what a user's edit looks like)."""
    lines = job_yml.read_text().splitlines(keepends=True)
    edited = [
        f"summary: {new_summary}\n" if line.startswith("summary:") else line for line in lines
    ]
    job_yml.write_text("".join(edited))


LONG_JOB = "bench_long"
NESTED_JOB = "bench_nested"


def make_long_workflow(root: Path, steps: int) -> list[str]:
    """Job `bench_long` whose workflow `long` runs `steps` steps in a row, without reviews.

    The output files every step submits are created up front; returns them in step order.
    """
    write_job(_jobs_dir(root), LONG_JOB, steps=steps, workflows={"long": steps})
    return _write_outputs(root, steps)


def make_nested_job(root: Path) -> list[str]:
    """Job `bench_nested` with a one-step workflow `one`, started again and again to nest."""
    write_job(_jobs_dir(root), NESTED_JOB, steps=1, workflows={"one": 1})
    return _write_outputs(root, 1)


def _write_outputs(root: Path, steps: int) -> list[str]:
    out = root / "out"
    out.mkdir(exist_ok=True)
    paths = []
    for index in range(1, steps + 1):
        path = out / f"s{index:02d}_out.md"
        path.write_text(f"output of step {index}\n")
        paths.append(path.relative_to(root).as_posix())
    return paths


# --- reviews -----------------------------------------------------------------------------------

_EXTENSIONS = ("py", "py", "ts", "md", "json", "yml", "sql", "txt")


@dataclass(frozen=True)
class ReviewRepo:
    root: Path
    tracked: int
    changed: list[str]
    deepreview_files: int
    rules: int


def _git(root: Path, *args: str) -> None:
    env = {**os.environ, **_GIT_IDENTITY}
    result = run_bounded(["git", *args], cwd=root, timeout=GIT_TIMEOUT, env=env)
    if result.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {result.stderr.strip()}")


def _deepreview(index: int) -> str:
    """Three rules, one per strategy, scoped to the folder the file sits in."""
    return (
        f"python_{index:02d}:\n"
        "  description: Python files follow the conventions of this package.\n"
        "  match:\n"
        '    include: ["**/*.py"]\n'
        '    exclude: ["**/generated/**"]\n'
        "  review:\n"
        "    strategy: matches_together\n"
        "    instructions: |\n"
        "      Check naming, error handling and type hints of the changed Python files.\n"
        f"docs_{index:02d}:\n"
        "  description: Each changed document is accurate and readable.\n"
        "  match:\n"
        '    include: ["docs/**/*.md"]\n'
        "  review:\n"
        "    strategy: individual\n"
        "    instructions: Read the document and report stale or unclear passages.\n"
        "    additional_context:\n"
        "      unchanged_matching_files: true\n"
        f"schema_{index:02d}:\n"
        "  description: Schema changes are consistent with the code that uses them.\n"
        "  match:\n"
        '    include: ["**/*.sql", "config/**"]\n'
        "  review:\n"
        "    strategy: all_changed_files\n"
        "    instructions: Check that every changed file agrees with the schema change.\n"
        "    additional_context:\n"
        "      all_changed_filenames: true\n"
    )


def _file_path(index: int, packages: int) -> str:
    package = f"pkg{index % packages:02d}"
    within = (
        index // packages
    )  # the file's number inside its package: every package gets every kind
    extension = _EXTENSIONS[within % len(_EXTENSIONS)]
    if extension == "md":
        folder = "docs"
    elif extension in ("yml", "json"):
        folder = "config"
    else:
        folder = f"src/mod{(within // len(_EXTENSIONS)) % 10}"
    return f"{package}/{folder}/file_{index:05d}.{extension}"


def make_review_repo(root: Path, *, files: int, changed: int, deepreview_files: int) -> ReviewRepo:
    """A git repository: `files` tracked files committed on `main`, `changed` of them modified in
    one commit on branch `feature` (checked out), and one `.deepreview` with 3 rules in each of
    `deepreview_files` top-level folders.
    """
    root.mkdir(parents=True, exist_ok=True)
    paths = [_file_path(index, deepreview_files) for index in range(files)]
    for folder in {str(Path(path).parent) for path in paths}:
        (root / folder).mkdir(parents=True, exist_ok=True)
    for path in paths:
        (root / path).write_text(f"# {path}\nvalue = 1\n")
    for index in range(deepreview_files):
        (root / f"pkg{index:02d}" / ".deepreview").write_text(_deepreview(index))
    _git(root, "init", "--quiet", "--initial-branch=main")
    _git(root, "add", "-A")
    _git(root, "commit", "--quiet", "--no-gpg-sign", "-m", "base")
    _git(root, "checkout", "--quiet", "-b", "feature")
    changed_paths = sorted(random.Random(8).sample(paths, min(changed, files)))
    for path in changed_paths:
        (root / path).write_text(f"# {path}\nvalue = 2\n")
    _git(root, "commit", "--quiet", "--no-gpg-sign", "-a", "-m", "change")
    return ReviewRepo(root, files, changed_paths, deepreview_files, 3 * deepreview_files)


@dataclass(frozen=True)
class EvidenceRepo:
    root: Path
    tracked: int
    outputs: dict[str, str]  # output name -> project-relative path


def make_evidence_repo(root: Path, *, files: int, outputs: int, output_bytes: int) -> EvidenceRepo:
    """A git repository of `files` committed files, with `outputs` new (untracked) output files
    of `output_bytes` each: one checkpoint's worth of evidence to hash and guard.
    """
    root.mkdir(parents=True, exist_ok=True)
    for index in range(files):
        path = root / f"pkg{index % 20:02d}" / "src" / f"file_{index:05d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"value = {index}\n")
    _git(root, "init", "--quiet", "--initial-branch=main")
    _git(root, "add", "-A")
    _git(root, "commit", "--quiet", "--no-gpg-sign", "-m", "base")
    # Files written in the same second as the index are "racily clean" and re-read by every
    # `git status`; a repository that has been in use has none. Age the index past that.
    time.sleep(1.1)
    _git(root, "update-index", "--really-refresh")
    rng = random.Random(9)
    paths: dict[str, str] = {}
    (root / "out").mkdir()
    for index in range(outputs):
        relative = f"out/output_{index:02d}.md"
        line = "".join(rng.choice("abcdefghij ") for _ in range(99)) + "\n"
        (root / relative).write_text(line * (output_bytes // len(line)))
        paths[f"output_{index:02d}"] = relative
    return EvidenceRepo(root, files, paths)
