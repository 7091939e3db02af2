"""The Codex CLI, OpenCode, Copilot CLI and Cursor checks of `tools/check_plugins.py`.

Each client with a binary on the npm registry is installed at a pinned version into its own
prefix; one that does not install is SKIPPED with the reason printed, never failed. Every client
runs offline with a HOME of its own whose `~/.config/uv/uv.toml` points uv at the wheels of this
checkout (`offline = true`): Codex passes its MCP servers no `UV_*` variable, but it passes HOME,
so the rendered `uvx deepwork==<version>` starts this checkout's server under every client and
can never fetch another `deepwork` from the index. Cursor has no binary on the registries: its
files are validated against the schemas in `tools/schemas/` (docs/platforms.md says so).
"""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import jsonschema
from client_checks import GEMINI_SKILLS, ROOT, TOOLS, VERSION, CheckFailed, ok, run, tail

CODEX = "@openai/codex@0.169.0"
OPENCODE = "opencode-ai@1.18.33"
COPILOT = "@github/copilot@1.0.102"
SKILLS = GEMINI_SKILLS  # the newer clients name skills as Gemini does (`-` for `_`)
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

Step = tuple[str, Callable[[], str | None]]


def install_client(cache: Path, spec: str, binary: str) -> Path:
    """The `node_modules/.bin` holding `binary` from `spec`, installed once per pinned version."""
    prefix = cache / spec.replace("/", "_").replace("@", "")
    bins = prefix / "node_modules" / ".bin"
    if (bins / binary).exists():
        return bins
    npm = shutil.which("npm")
    if npm is None:
        raise CheckFailed("npm is not on PATH")
    cache.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="npm-", dir=cache))
    argv = [npm, "install", "--prefix", str(staging), "--no-audit", "--no-fund", "--no-save"]
    result = run([*argv, "--loglevel=error", spec], dict(os.environ), timeout=600)
    if result.returncode != 0 or not (staging / "node_modules" / ".bin" / binary).exists():
        shutil.rmtree(staging, ignore_errors=True)
        raise CheckFailed(f"npm install {spec} failed:\n{tail(result, 8)}")
    shutil.rmtree(prefix, ignore_errors=True)
    staging.rename(prefix)
    return bins


def client_home(base: Path, name: str, env: Mapping[str, str]) -> dict[str, str]:
    """A fresh HOME whose uv configuration reaches only this checkout's wheels and the cache."""
    home = base / f"home-{name}"
    (home / ".config" / "uv").mkdir(parents=True)
    (home / ".config" / "uv" / "uv.toml").write_text(
        f"find-links = [{json.dumps(env['UV_FIND_LINKS'])}]\n"
        f"cache-dir = {json.dumps(env['UV_CACHE_DIR'])}\n"
        "offline = true\n",
        encoding="utf-8",
    )
    return {**env, "HOME": str(home), "UV_OFFLINE": "1"}


def validate_cursor(root: Path = ROOT) -> str:
    """The Cursor files against schemas written from Cursor's documentation (no binary exists)."""
    pairs = [
        ("cursor-plugin", "plugins/cursor/.cursor-plugin/plugin.json"),
        ("cursor-mcp", "plugins/cursor/mcp.json"),
        ("cursor-marketplace", ".cursor-plugin/marketplace.json"),
    ]
    problems = []
    for schema_name, relative in pairs:
        schema = json.loads((root / "tools" / "schemas" / f"{schema_name}.schema.json").read_text())
        data = json.loads((root / relative).read_text(encoding="utf-8"))
        validator = jsonschema.Draft7Validator(schema)
        problems += [f"{relative}: {e.json_path}: {e.message}" for e in validator.iter_errors(data)]
    source = json.loads((root / ".cursor-plugin/marketplace.json").read_text())["plugins"][0]
    if not (root / source["source"] / ".cursor-plugin" / "plugin.json").is_file():
        problems.append(f"the marketplace source {source['source']} holds no plugin manifest")
    if problems:
        raise CheckFailed("\n".join(problems))
    return f"{len(pairs)} files valid; no Cursor binary exists on the registries"


def _deepwork_entries(value: Any) -> Iterator[dict[str, Any]]:
    """Every JSON object anywhere in `value` whose `name` is `deepwork`."""
    if isinstance(value, dict):
        if value.get("name") == "deepwork":
            yield value
        for item in value.values():
            yield from _deepwork_entries(item)
    elif isinstance(value, list):
        for item in value:
            yield from _deepwork_entries(item)


def _app_server(
    env: Mapping[str, str], cwd: Path, calls: list[tuple[str, Any]], config: Sequence[str] = ()
) -> list[Any]:
    """Answers of `codex [config] app-server` (JSON-RPC, one object a line) to `calls`, in
    order; `config` holds `-c key=value` overrides."""
    proc = subprocess.Popen(
        ["codex", *config, "app-server"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=dict(env),
        cwd=cwd,
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    lines: queue.Queue[str] = queue.Queue()
    stdout = proc.stdout
    threading.Thread(target=lambda: [lines.put(line) for line in stdout], daemon=True).start()

    def send(message: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()

    answers: dict[int, Any] = {}

    def wait_for(ident: int, deadline: float) -> Any:
        while ident not in answers:
            try:
                message = json.loads(lines.get(timeout=max(0.1, deadline - time.monotonic())))
            except queue.Empty:
                raise CheckFailed(f"codex app-server did not answer request {ident}") from None
            if isinstance(message, dict) and "id" in message and "method" not in message:
                answers[message["id"]] = message.get("result", message.get("error"))
        return answers[ident]

    try:
        deadline = time.monotonic() + 90
        send(
            {
                "id": 0,
                "method": "initialize",
                "params": {"clientInfo": {"name": "x", "version": "0"}},
            }
        )
        wait_for(0, deadline)
        send({"method": "initialized"})
        for ident, (method, params) in enumerate(calls, start=1):
            send({"id": ident, "method": method, "params": params})
        return [wait_for(ident, deadline) for ident in range(1, len(calls) + 1)]
    finally:
        proc.stdin.close()
        proc.terminate()
        proc.wait(timeout=30)


def codex_steps(bins: Path, base: Path, env: Mapping[str, str]) -> list[Step]:
    """Marketplace add, plugin add, the server listed with its pin; then the app server."""
    cenv = {**client_home(base, "codex", env), "PATH": f"{bins}:{env['PATH']}"}
    project = base / "project"

    def install() -> str:
        ok(["codex", "plugin", "marketplace", "add", str(ROOT)], cenv, cwd=project)
        ok(["codex", "plugin", "add", "deepwork@deepwork"], cenv, cwd=project)
        listed = json.loads(ok(["codex", "plugin", "list", "--json"], cenv, cwd=project).stdout)
        ours = [p for p in listed.get("installed", []) if p.get("pluginId") == "deepwork@deepwork"]
        path = str((ours[0].get("source") or {}).get("path", "")) if ours else ""
        if not ours or ours[0].get("version") != VERSION or not path.endswith("plugins/codex"):
            raise CheckFailed(
                f"deepwork@deepwork {VERSION} from plugins/codex not installed:\n{listed}"
            )
        servers = json.loads(ok(["codex", "mcp", "list", "--json"], cenv, cwd=project).stdout)
        args = [s.get("transport", {}).get("args") for s in servers if s.get("name") == "deepwork"]
        if args != [[f"deepwork=={VERSION}", "serve"]]:
            raise CheckFailed(f"`codex mcp list` does not show the pinned server: {servers}")
        return f"deepwork@deepwork {VERSION} installed, server uvx deepwork=={VERSION} serve"

    def app_server() -> str:
        status, skills, hooks = _app_server(
            cenv,
            project,
            [
                ("mcpServerStatus/list", {"detail": "toolsAndAuthOnly"}),
                ("skills/list", {"cwds": [str(project)]}),
                ("hooks/list", {"cwds": [str(project)]}),
            ],
        )
        problems = []
        server = next(_deepwork_entries(status), None)
        tools = set((server or {}).get("tools") or {})
        if server is None or server.get("toolsError") or not set(TOOLS) <= tools:
            problems.append(f"server not started with its tools: {json.dumps(server)[:1500]}")
        text = json.dumps(skills)
        problems += [f"skill deepwork:{s} missing" for s in SKILLS if f"deepwork:{s}" not in text]
        events = set(re.findall(r'"eventName": "([A-Za-z]+)"', json.dumps(hooks)))
        warnings = re.findall(r'"warnings": (\[[^\]]+\])', json.dumps(hooks))
        if warnings or not {"sessionStart", "stop"} <= {e[0].lower() + e[1:] for e in events}:
            problems.append(f"hooks not loaded: events {sorted(events)}, warnings {warnings}")
        if problems:
            raise CheckFailed("\n".join(problems))
        skill_count = f"{len(SKILLS)} skills"
        return f"server connected with {len(tools)} tools, {skill_count}, hooks {sorted(events)}"

    return [
        ("codex plugin marketplace add + plugin add deepwork@deepwork", install),
        ("codex app-server: server started, skills and hooks loaded", app_server),
    ]


def opencode_steps(bins: Path, base: Path, env: Mapping[str, str]) -> list[Step]:
    """`deepwork install opencode` from the wheels, then OpenCode validates and starts it."""
    oenv = {**client_home(base, "opencode", env), "PATH": f"{bins}:{env['PATH']}"}
    project = base / "project-opencode"
    project.mkdir()
    ok(["git", "init", "-q"], oenv, cwd=project)

    def install() -> str:
        argv = ["uvx", f"deepwork=={VERSION}", "install", "opencode", "--path", str(project)]
        ok(argv, oenv, cwd=project, timeout=180)
        ok(["opencode", "debug", "config"], oenv, cwd=project, timeout=120)
        return "opencode.json and .opencode/skills written; `opencode debug config` accepts them"

    def mcp() -> str:
        result = ok(["opencode", "mcp", "list"], oenv, cwd=project, timeout=180)
        text = ANSI.sub("", result.stdout + result.stderr)
        if "deepwork connected" not in text:  # it exits 0 even when a server failed
            raise CheckFailed(f"`opencode mcp list` does not show deepwork connected:\n{text}")
        return "deepwork connected"

    def skills() -> str:
        out = ok(["opencode", "debug", "skill"], oenv, cwd=project, timeout=120).stdout
        names = {s.get("name") for s in json.loads(out[out.index("[") :])}
        missing = [s for s in SKILLS if s not in names]
        if missing:
            raise CheckFailed(f"skills missing from `opencode debug skill`: {missing}: {names}")
        return ", ".join(SKILLS)

    return [
        ("deepwork install opencode + opencode debug config", install),
        ("opencode mcp list: deepwork connected", mcp),
        ("opencode debug skill: the DeepWork skills", skills),
    ]


def copilot_steps(bins: Path, base: Path, env: Mapping[str, str]) -> list[Step]:
    """Install from the marketplace (no login), list server and skills, see the server connect."""
    penv = {**client_home(base, "copilot", env), "PATH": f"{bins}:{env['PATH']}"}
    project = base / "project"

    def install() -> str:
        # Through the marketplace, as a user would: Copilot reads `.github/plugin/marketplace.json`
        # before `.claude-plugin/marketplace.json`, so it must install plugins/copilot.
        ok(["copilot", "plugin", "marketplace", "add", str(ROOT)], penv, cwd=project)
        added = ok(["copilot", "plugin", "install", "deepwork@deepwork"], penv, cwd=project)
        if f"{ROOT / 'plugins' / 'copilot'}" not in added.stdout + added.stderr:
            raise CheckFailed(f"deepwork@deepwork is not plugins/copilot:\n{tail(added)}")
        servers = json.loads(ok(["copilot", "mcp", "list", "--json"], penv, cwd=project).stdout)
        ours = servers.get("mcpServers", {}).get("deepwork", {})
        if ours.get("command") != "uvx" or ours.get("args") != [f"deepwork=={VERSION}", "serve"]:
            raise CheckFailed(f"`copilot mcp list` does not show the pinned server: {servers}")
        listed = ok(["copilot", "skill", "list"], penv, cwd=project).stdout
        missing = [s for s in SKILLS if f"  {s} - " not in listed]
        if missing:
            raise CheckFailed(f"skills missing from `copilot skill list`: {missing}\n{listed}")
        server = f"uvx deepwork=={VERSION}"
        return f"deepwork@deepwork = plugins/copilot; server {server}; {len(SKILLS)} skills"

    def session() -> str:
        # Offline mode pointed at a model address where nothing listens: the session loads the
        # plugin and starts its server, reports them, then fails on the model call (expected).
        offline = {
            **penv,
            "COPILOT_OFFLINE": "true",
            "COPILOT_PROVIDER_BASE_URL": "http://127.0.0.1:9/v1",
            "COPILOT_MODEL": "gpt-4o",
        }
        argv = ["copilot", "-p", "x", "--allow-all-tools", "--output-format", "json"]
        out = run(argv, offline, cwd=project, timeout=150).stdout
        seen = []  # the server's statuses in order: pending, then connected or failed
        for line in out.splitlines():
            if '"session.mcp_server_status_changed"' in line and '"deepwork"' in line:
                data = json.loads(line).get("data", {})
                if data.get("status") == "connected":
                    return "deepwork connected in an offline session"
                seen.append(f"{data.get('status')}: {data.get('error')}")
        raise CheckFailed(f"the deepwork server never connected: {seen}\n{out[-2000:]}")

    return [
        (
            "copilot plugin marketplace add + install deepwork@deepwork + mcp list + skill list",
            install,
        ),
        ("copilot offline session: deepwork server connected", session),
    ]


CLIENTS: tuple[tuple[str, str, Callable[[Path, Path, Mapping[str, str]], list[Step]]], ...] = (
    (CODEX, "codex", codex_steps),
    (OPENCODE, "opencode", opencode_steps),
    (COPILOT, "copilot", copilot_steps),
)
