"""Load the rendered plugins into the real clients, offline, with no account.

    python tools/check_plugins.py [--cache DIR]

Claude Code and Gemini CLI here; Codex CLI, OpenCode, Copilot CLI and the Cursor files in
`tools/check_agents.py`. Installs pinned versions of the clients from the npm registry into
prefixes under `--cache` (reused on the next run; a client that does not install is skipped,
saying so), builds this repository's wheels into a temporary folder and points
`UV_FIND_LINKS` at it, so the plugins' own `uvx deepwork==<version> serve` starts the code of
this checkout. Every client runs with a temporary HOME and without credentials. Prints one line
per check and exits 1 listing every failure.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import check_agents  # a sibling script: tools/ is sys.path[0]
from client_checks import (
    CLAUDE_SKILLS,
    GEMINI_SKILLS,
    ROOT,
    TOOLS,
    VERSION,
    CheckFailed,
    indent,
    ok,
    run,
    tail,
)
from deepwork_core.base.errors import ProcessTimeoutError

CLAUDE_CODE = "@anthropic-ai/claude-code@2.1.197"
GEMINI_CLI = "@google/gemini-cli@0.61.0"


# Claude Code's sub-agent tool is `Agent` (alias `Task`, its former name). The model sees
# `Agent`, but the `init` event of `--output-format stream-json` reports it under the old name
# for SDK compatibility, so the check looks for `Task` there.
SUBAGENT_TOOL = "Agent"
SUBAGENT_TOOL_IN_INIT = "Task"
# The plugin's read-only reviewer agent, as Claude Code names plugin agents.
REVIEWER_AGENT = "deepwork:reviewer"
# Only these variables reach the clients: no API key or login can make them call a model.
PASSED_ENV = (
    "PATH",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "UV_INDEX_URL",
    "UV_DEFAULT_INDEX",
    "UV_INDEX",
    "UV_NATIVE_TLS",
    "PYENV_ROOT",
)


@dataclass
class Report:
    failures: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def check(self, name: str, action: Callable[[], str | None]) -> bool:
        """Run one check, print its outcome, remember a failure; True when it passed."""
        started = time.monotonic()
        try:
            detail = action()
        except Exception as exc:  # also a client answering in a shape this script did not expect
            known = isinstance(exc, CheckFailed | ProcessTimeoutError)
            message = str(exc) if known else f"{type(exc).__name__}: {exc}"
            self.failures.append(f"{name}: {message}")
            print(f"FAIL {name} ({time.monotonic() - started:.1f} s)\n{indent(message)}")
            return False
        suffix = f": {detail}" if detail else ""
        print(f"ok   {name} ({time.monotonic() - started:.1f} s){suffix}")
        return True

    def skip(self, name: str, reason: str) -> None:
        """A check that could not run here (no binary, no network): said, never a failure."""
        self.skipped.append(name)
        print(f"SKIP {name}\n{indent(reason)}")


def install_clients(cache: Path) -> Path:
    """The npm prefix holding both clients, installed once per pinned pair of versions."""
    prefix = cache / f"{CLAUDE_CODE}+{GEMINI_CLI}".replace("/", "_").replace("@", "")
    bins = prefix / "node_modules" / ".bin"
    if (bins / "claude").exists() and (bins / "gemini").exists():
        return prefix
    npm = shutil.which("npm")
    if npm is None:
        raise CheckFailed("npm is not on PATH")
    cache.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="npm-", dir=cache))
    ok(
        [
            npm,
            "install",
            "--prefix",
            str(staging),
            "--no-audit",
            "--no-fund",
            "--no-save",
            "--loglevel=error",
            CLAUDE_CODE,
            GEMINI_CLI,
        ],
        os.environ,
        timeout=900,
    )
    shutil.rmtree(prefix, ignore_errors=True)
    staging.rename(prefix)
    return prefix


@contextmanager
def sandbox(bins: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """A temporary folder with `home/`, `wheels/` and `project/`, and the clients' environment."""
    uv_cache = ok(["uv", "cache", "dir"], os.environ).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="deepwork-plugins-") as tmp:
        base = Path(tmp)
        for name in ("home", "wheels", "project"):
            (base / name).mkdir()
        env = {key: os.environ[key] for key in PASSED_ENV if key in os.environ}
        env.update(
            PATH=f"{bins}{os.pathsep}{env.get('PATH', '')}",
            HOME=str(base / "home"),
            # Our wheels come from here (check_uvx_resolves_this_checkout proves it).
            UV_FIND_LINKS=str(base / "wheels"),
            UV_CACHE_DIR=uv_cache,  # the developer's cache: no third-party wheel is fetched again
            UV_PYTHON=sys.executable,
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            DISABLE_AUTOUPDATER="1",
            # `claude -p` waits for MCP servers before the init event, 5 s unless told otherwise
            MCP_CONNECTION_NONBLOCKING="false",
            MCP_CONNECT_TIMEOUT_MS="30000",
        )
        yield base, env


def build_wheels(wheels: Path, env: Mapping[str, str]) -> str:
    ok(
        ["uv", "build", "--all-packages", "--no-sources", "--quiet", "-o", str(wheels)],
        env,
        timeout=300,
    )
    names = sorted(p.name for p in wheels.glob("*.whl"))
    expected = {
        f"{n}-{VERSION}-py3-none-any.whl"
        for n in ("deepwork", "deepwork_core", "deepwork_review", "deepwork_mcp")
    }
    if not expected <= set(names):
        raise CheckFailed(f"expected wheels {sorted(expected)}, found {names}")
    return f"{len(names)} wheels"


def check_uvx_resolves_this_checkout(project: Path, env: Mapping[str, str]) -> str:
    """`uvx deepwork==<version>` must install our wheels (and warms uv's cache for the clients)."""
    probe = (
        "import importlib.metadata as m, deepwork_mcp; "
        "print(m.version('deepwork'), m.version('deepwork-mcp'))"
    )
    result = ok(
        ["uvx", "--from", f"deepwork=={VERSION}", "python", "-c", probe],
        env,
        cwd=project,
        timeout=300,
    )
    if result.stdout.split() != [VERSION, VERSION]:
        raise CheckFailed(f"uvx resolved another deepwork: {tail(result)}")
    ok(["uvx", f"deepwork=={VERSION}", "serve", "--help"], env, cwd=project, timeout=120)
    return f"deepwork=={VERSION} from the wheels of this checkout; `serve --help` works"


def offline(env: Mapping[str, str]) -> dict[str, str]:
    """The clients' environment: uv answers from the cache warmed above, never the network.

    This keeps server start-up within the clients' connection wait, and needs no TLS settings
    (Gemini CLI strips variables such as SSL_CERT_FILE from its MCP servers' environment).
    """
    return {**env, "UV_OFFLINE": "1"}


def _init_event(stdout: str) -> dict[str, Any]:
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if event.get("type") == "system" and event.get("subtype") == "init":
            return dict(event)
    raise CheckFailed(f"no system/init event in the stream-json output:\n{stdout[-2000:]}")


def check_claude_session(project: Path, env: Mapping[str, str], *extra: str) -> str:
    """`claude -p` loads the plugin: skills listed, `deepwork` MCP server connected with tools."""
    argv = ["claude", "-p", "x", *extra, "--output-format", "stream-json", "--verbose"]
    init = _init_event(run(argv, env, cwd=project, timeout=180).stdout)
    problems = []
    plugins = [p.get("name") for p in init.get("plugins", [])]
    if "deepwork" not in plugins:
        problems.append(f"plugin deepwork not loaded; plugins: {plugins}")
    missing_skills = [s for s in CLAUDE_SKILLS if f"deepwork:{s}" not in init.get("skills", [])]
    if missing_skills:
        problems.append(f"skills missing: {missing_skills}; skills: {init.get('skills')}")
    servers = {s.get("name"): s.get("status") for s in init.get("mcp_servers", [])}
    status = servers.get("plugin:deepwork:deepwork")
    if status != "connected":
        problems.append(f"MCP server plugin:deepwork:deepwork is {status!r}, not 'connected'")
    prefix = "mcp__plugin_deepwork_deepwork__"
    missing_tools = [t for t in TOOLS if prefix + t not in init.get("tools", [])]
    if status == "connected" and missing_tools:
        problems.append(f"tools missing: {missing_tools}")
    # The skills name Claude Code's sub-agent tool; it must exist under that name.
    if SUBAGENT_TOOL_IN_INIT not in init.get("tools", []):
        problems.append(
            f"no {SUBAGENT_TOOL} tool (listed as {SUBAGENT_TOOL_IN_INIT!r}), which the skills "
            f"name; tools: {init.get('tools')}"
        )
    agents = init.get("agents")
    if not isinstance(agents, list) or REVIEWER_AGENT not in agents:
        problems.append(f"agent {REVIEWER_AGENT} not loaded; agents: {agents}; keys: {list(init)}")
    if problems:
        raise CheckFailed("\n".join(problems))
    return (
        f"{len(CLAUDE_SKILLS)} skills, server connected, {len(TOOLS)} tools, "
        f"{SUBAGENT_TOOL} tool, agent {REVIEWER_AGENT}"
    )


def _hook_responses(stdout: str, event: str) -> list[dict[str, Any]]:
    responses = []
    for line in stdout.splitlines():
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            continue
        if item.get("subtype") == "hook_response" and item.get("hook_event") == event:
            responses.append(dict(item))
    return responses


def check_claude_hooks(project: Path, env: Mapping[str, str]) -> str:
    """The plugin's hooks really run in Claude Code (SessionStart fires without a model turn).

    With no workflow active, the guard in the hook command answers with nothing and never starts
    `uvx`; with one active, `session_start` (through `uvx deepwork==<version>`) briefs the agent.
    """
    from deepwork_core.engine.workflow import WorkflowEngine
    from deepwork_core.jobs.discovery import JobCatalog
    from deepwork_core.state.sessions import SessionStore
    from deepwork_core.state.store.opening import open_store

    argv = [
        "claude", "-p", "x", "--plugin-dir", str(ROOT / "plugins" / "claude"),
        "--output-format", "stream-json", "--verbose", "--include-hook-events",
    ]  # fmt: skip
    idle = _hook_responses(run(argv, env, cwd=project, timeout=180).stdout, "SessionStart")
    if not idle or any(r.get("exit_code") != 0 or r.get("stdout") for r in idle):
        raise CheckFailed(f"with no workflow active, SessionStart hooks answered: {idle}")

    with open_store(None, project) as store:
        sessions = SessionStore(store, project)
        engine = WorkflowEngine(project, JobCatalog.for_project(project), sessions)
        started = engine.start("check the plugin hooks", "deepwork_jobs", "new_job")
        try:
            answered = run(argv, env, cwd=project, timeout=180).stdout
            active = _hook_responses(answered, "SessionStart")
        finally:
            engine.abort("plugin check done")
    briefing = " ".join(str(r.get("stdout", "")) for r in active)
    if started.brief.session_id not in briefing or "deepwork_jobs" not in briefing:
        raise CheckFailed(f"SessionStart did not brief the active workflow: {active}")
    return "SessionStart: silent with no workflow; briefs the active workflow through uvx"


def check_claude_marketplace_install(project: Path, env: Mapping[str, str]) -> str:
    """The README's path: add this repository as a marketplace, install the plugin."""
    ok(["claude", "plugin", "marketplace", "add", str(ROOT)], env, cwd=project)
    ok(["claude", "plugin", "install", "deepwork@deepwork"], env, cwd=project)
    listed = ok(["claude", "plugin", "list", "--json"], env, cwd=project).stdout
    entries = json.loads(listed)
    ours = [e for e in entries if str(e.get("id", e.get("name", ""))).startswith("deepwork@")]
    if not ours or not all(e.get("enabled", True) for e in ours):
        raise CheckFailed(f"deepwork@deepwork is not installed and enabled:\n{listed[-2000:]}")
    return check_claude_session(project, env)


def check_gemini(
    project: Path, home: Path, env: Mapping[str, str]
) -> Iterator[tuple[str, Callable[[], str | None]]]:
    """The Gemini checks, in order: validate, install, MCP server connected, skills listed."""
    plugin = str(ROOT / "plugins" / "gemini")
    # Trust the project folder so that workspace-level features are not switched off.
    (home / ".gemini").mkdir(exist_ok=True)
    (home / ".gemini" / "trustedFolders.json").write_text(
        json.dumps({str(project): "TRUST_FOLDER"}), encoding="utf-8"
    )

    def validate() -> str:
        result = ok(["gemini", "extensions", "validate", plugin], env, cwd=project)
        if "successfully validated" not in result.stdout + result.stderr:
            raise CheckFailed(tail(result))
        return "validated"

    def install() -> str:
        ok(
            ["gemini", "extensions", "install", plugin, "--consent", "--skip-settings"],
            env,
            cwd=project,
            input_text="y\n",
        )
        listed = ok(["gemini", "extensions", "list"], env, cwd=project)
        if f"deepwork ({VERSION})" not in listed.stdout + listed.stderr:
            raise CheckFailed(
                f"deepwork {VERSION} not in `gemini extensions list`:\n{tail(listed)}"
            )
        return f"deepwork {VERSION} installed"

    def mcp() -> str:
        result = ok(["gemini", "mcp", "list"], env, cwd=project, timeout=180)
        lines = [
            line for line in (result.stdout + result.stderr).splitlines() if "deepwork" in line
        ]
        if not any("Connected" in line and "Disconnected" not in line for line in lines):
            raise CheckFailed(
                f"`gemini mcp list` does not show deepwork connected:\n{tail(result)}"
            )
        return lines[0].strip()

    def skills() -> str:
        result = ok(["gemini", "skills", "list"], env, cwd=project, timeout=180)
        text = result.stdout + result.stderr
        missing = [s for s in GEMINI_SKILLS if s not in text]
        if missing:
            raise CheckFailed(
                f"skills missing from `gemini skills list`: {missing}\n{tail(result)}"
            )
        return ", ".join(GEMINI_SKILLS)

    yield "gemini extensions validate plugins/gemini", validate
    yield "gemini extensions install plugins/gemini", install
    yield "gemini mcp list: deepwork connected", mcp
    yield "gemini skills list: the DeepWork skills", skills


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--cache",
        type=Path,
        default=ROOT / ".nox" / "_plugin_clients",
        help="where the npm prefixes of the clients are kept between runs",
    )
    args = parser.parse_args(argv)
    report = Report()
    prefix: Path | None = None
    try:
        prefix = install_clients(args.cache)
        print(f"ok   install {CLAUDE_CODE}, {GEMINI_CLI} in {prefix}")
    except CheckFailed as exc:
        report.skip(f"Claude Code and Gemini CLI checks ({CLAUDE_CODE}, {GEMINI_CLI})", str(exc))
    bins = prefix / "node_modules" / ".bin" if prefix else args.cache / "none"
    with sandbox(bins) as (base, env):
        project = base / "project"
        ok(["git", "init", "-q"], env, cwd=project)
        if not report.check("build the wheels", lambda: build_wheels(base / "wheels", env)):
            return _finish(report)
        report.check(
            f"uvx deepwork=={VERSION} resolves to this checkout",
            lambda: check_uvx_resolves_this_checkout(project, env),
        )
        if prefix is not None:
            for name, action in _claude_and_gemini_steps(base, offline(env)):
                report.check(name, action)
        report.check("cursor files against tools/schemas/", check_agents.validate_cursor)
        for spec, binary, steps in check_agents.CLIENTS:
            try:
                client_bins = check_agents.install_client(args.cache, spec, binary)
            except CheckFailed as exc:
                report.skip(
                    f"{binary} checks ({spec})", f"{exc}\nthe {binary} files were NOT checked"
                )
                continue
            print(f"ok   install {spec}")
            for name, action in steps(client_bins, base, env):
                report.check(name, action)
    return _finish(report)


def _claude_and_gemini_steps(
    base: Path, clients: dict[str, str]
) -> list[tuple[str, Callable[[], str | None]]]:
    project = base / "project"
    env = {key: value for key, value in clients.items() if key != "UV_OFFLINE"}
    clients_b = {**clients, "HOME": str(base / "home-marketplace")}
    Path(clients_b["HOME"]).mkdir()
    return [
        (
            "claude plugin validate --strict plugins/claude",
            lambda: (
                ok(["claude", "plugin", "validate", "--strict", "plugins/claude"], env)
                .stdout.strip()
                .splitlines()[-1]
            ),
        ),
        (
            "claude plugin validate --strict .",
            lambda: (
                ok(["claude", "plugin", "validate", "--strict", "."], env)
                .stdout.strip()
                .splitlines()[-1]
            ),
        ),
        (
            "claude -p --plugin-dir plugins/claude: skills and MCP server",
            lambda: check_claude_session(
                project, clients, "--plugin-dir", str(ROOT / "plugins" / "claude")
            ),
        ),
        (
            "claude hooks: guard without a workflow, briefing with one",
            lambda: check_claude_hooks(project, clients),
        ),
        (
            "claude plugin marketplace add + install deepwork@deepwork",
            lambda: check_claude_marketplace_install(project, clients_b),
        ),
        *check_gemini(project, base / "home", clients),
    ]


def _finish(report: Report) -> int:
    if report.failures:
        print(f"\n{len(report.failures)} plugin check(s) failed:")
        for failure in report.failures:
            print(f"  - {failure.splitlines()[0]}")
        return 1
    skipped = f" ({len(report.skipped)} skipped, see SKIP above)" if report.skipped else ""
    print(f"\nAll plugin checks passed{skipped}.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
