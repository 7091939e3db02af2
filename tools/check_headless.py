"""Start the agents' real CLIs exactly as `deepwork run` does, offline.

    python tools/check_headless.py [--cache DIR]

`deepwork run --agent claude|codex|gemini` builds its command line in
`deepwork_mcp.cli.headless.agents.agent_argv` (docs/headless.md, "The agents"). This check runs
that command line, for a scratch project, with the real binaries (pinned, from the npm registry,
cached as `tools/check_plugins.py` does), each pointed at a local stand-in for its model endpoint
(no account, no network): Claude Code through `ANTHROPIC_BASE_URL`, Codex through a
`model_provider` given with `-c` (added before the prompt), the Gemini CLI through
`GOOGLE_GEMINI_BASE_URL` with the DeepWork extension linked in a HOME of its own. The stand-in
answers every model call with a short text, which ends the turn. PASS when the CLI accepted every
flag (exit 0) and its model request offered the DeepWork server's tools: the server the command
line hands it started and its tools reached the model.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

from check_agents import _app_server
from check_plugins import CLAUDE_CODE, GEMINI_CLI, install_clients
from check_reviewers import _Endpoint
from client_checks import CheckFailed, run, run_checks, tail

#: A tool of the DeepWork server every CLI must offer its model.
TOOL = "start_workflow"


class _Models(_Endpoint):
    """The reviewers' stand-in (Responses, Gemini) plus Anthropic's Messages API."""

    requests: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        if "/v1/messages" not in self.path or "count_tokens" in self.path:
            super().do_POST()
            return
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        self.requests.append({"path": self.path, "body": json.loads(body or b"{}")})
        usage = {"input_tokens": 10, "output_tokens": 2}
        message: dict[str, Any] = {"id": "msg_1", "type": "message", "role": "assistant",
                                   "model": "claude", "content": [], "stop_reason": None,
                                   "usage": usage}  # fmt: skip
        events = [
            ("message_start", {"type": "message_start", "message": message}),
            ("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": {"type": "text", "text": ""}}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                     "delta": {"type": "text_delta", "text": "done"}}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "usage": {"output_tokens": 2},
                               "delta": {"stop_reason": "end_turn"}}),
            ("message_stop", {"type": "message_stop"}),
        ]  # fmt: skip
        data = "".join(f"event: {name}\ndata: {json.dumps(e)}\n\n" for name, e in events)
        self._send(200, "text/event-stream", data.encode())


@contextmanager
def endpoint() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Models)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _project(scratch: Path) -> Path:
    project = scratch / "project"
    (project / ".deepwork" / "jobs").mkdir(parents=True)
    run(["git", "init", "-q", str(project)], dict(os.environ))
    return project


def _offered(before: int) -> list[str]:
    """The model requests since `before` that named the DeepWork tool, by path."""
    return [r["path"] for r in _Models.requests[before:] if TOOL in json.dumps(r["body"])]


def _run_ok(name: str, argv: list[str], env: dict[str, str], project: Path) -> str:
    """Run `argv`; it must exit 0 after asking the model."""
    before = len(_Models.requests)
    result = run(argv, env, cwd=project, timeout=240)
    if result.returncode != 0:
        raise CheckFailed(f"{name} exited {result.returncode}:\n{tail(result)}")
    if not _Models.requests[before:]:
        raise CheckFailed(f"{name} asked the model nothing:\n{tail(result)}")
    return f"every flag accepted ({argv[1]} …)"


def _check(name: str, argv: list[str], env: dict[str, str], project: Path) -> str:
    """`_run_ok`, and the model was offered the DeepWork server's tools."""
    before = len(_Models.requests)
    accepted = _run_ok(name, argv, env, project)
    if not _offered(before):
        raise CheckFailed(f"{name}'s model requests offered no DeepWork tool")
    return f"{accepted}; the DeepWork server's tools offered to the model"


def check_claude(bins: Path, base: str, scratch: Path) -> str:
    from deepwork_mcp.cli.headless.agents import agent_argv

    home = scratch / "home-claude"
    home.mkdir()
    project = _project(scratch / "claude")
    env = {**os.environ, "HOME": str(home), "ANTHROPIC_BASE_URL": base,
           "ANTHROPIC_API_KEY": "local", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
           "DISABLE_AUTOUPDATER": "1", "MCP_CONNECTION_NONBLOCKING": "false",
           "MCP_CONNECT_TIMEOUT_MS": "60000", "DEEPWORK_RUN": "check"}  # fmt: skip
    argv = agent_argv("claude", project, "Say done.", home)
    return _check("claude", argv, env, project)


def check_codex(bins: Path, base: str, scratch: Path) -> str:
    from deepwork_mcp.cli.headless.agents import SERVER, agent_argv

    home = scratch / "home-codex"
    home.mkdir()
    project = _project(scratch / "codex")
    env = {**os.environ, "HOME": str(home), "CODEX_HOME": str(home), "DEEPWORK_RUN": "check"}
    provider = ["-c", "model_provider=local", "-c", 'model_providers.local.name="local"',
                "-c", f'model_providers.local.base_url="{base}/v1"',
                "-c", 'model_providers.local.wire_api="responses"',
                "-c", "model_providers.local.request_max_retries=0",
                "-c", "model_providers.local.stream_max_retries=0", "-m", "gpt-5"]  # fmt: skip
    argv = agent_argv("codex", project, "Say done.", home)
    accepted = _run_ok("codex", [*argv[:-1], *provider, argv[-1]], env, project)
    # `codex exec` offers the model no MCP tool in its first request, so that the server's
    # tools are offered is read from the app server, given the same `-c mcp_servers.*` values.
    pairs = itertools.pairwise(argv)
    config = [part for flag, value in pairs if flag == "-c" and value.startswith("mcp_servers.")
              for part in (flag, value)]  # fmt: skip
    env["PATH"] = f"{bins}{os.pathsep}{env['PATH']}"
    [status] = _app_server(env, project, [("mcpServerStatus/list", {"detail": "toolsAndAuthOnly"})],
                           config)  # fmt: skip
    server = next((s for s in status.get("data", []) if s.get("name") == SERVER), None)
    if server is None or TOOL not in (server.get("tools") or {}):
        raise CheckFailed(f"codex app-server does not list the server's tools: {status}")
    return f"{accepted}; the app server lists the DeepWork server's {len(server['tools'])} tools"


def check_gemini(bins: Path, base: str, scratch: Path) -> str:
    from deepwork_mcp.cli.headless.agents import SERVER, agent_argv, server_argv

    home = scratch / "home-gemini"
    (home / ".gemini").mkdir(parents=True)
    settings = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    project = _project(scratch / "gemini")
    env = {**os.environ, "HOME": str(home), "GEMINI_API_KEY": "local",
           "GOOGLE_GEMINI_BASE_URL": base, "DEEPWORK_RUN": "check"}  # fmt: skip
    # An extension of this checkout's server, linked as a user links one (docs/platforms.md).
    extension = scratch / "extension"
    extension.mkdir()
    server = server_argv(project)
    manifest = {"name": SERVER, "version": "0.0.0", "contextFileName": "GEMINI.md",
                "mcpServers": {SERVER: {"command": server[0], "args": server[1:]}}}  # fmt: skip
    (extension / "gemini-extension.json").write_text(json.dumps(manifest), encoding="utf-8")
    (extension / "GEMINI.md").write_text("DeepWork.\n", encoding="utf-8")
    gemini = str(bins / "gemini")
    linked = run([gemini, "extensions", "link", str(extension), "--consent"], env, cwd=project,
                 input_text="y\n", timeout=120)  # fmt: skip
    if linked.returncode != 0:
        raise CheckFailed(f"gemini extensions link failed:\n{tail(linked)}")
    argv = agent_argv("gemini", project, "Say done.", home)
    return _check("gemini", argv, env, project)


def _on_path(bins: Path) -> Path:
    """`bins` first on PATH, where `agent_argv` looks the agent up."""
    os.environ["PATH"] = f"{bins}{os.pathsep}{os.environ['PATH']}"
    return bins


def main(argv: list[str]) -> int:
    from check_agents import CODEX, install_client

    def npm_bins(cache: Path) -> Path:
        return _on_path(install_clients(cache) / "node_modules" / ".bin")

    def codex_bins(cache: Path) -> Path:
        return _on_path(install_client(cache, CODEX, "codex"))

    return run_checks(argv, __doc__.splitlines()[0], "dw-headless-", endpoint, [
        ("claude", CLAUDE_CODE, npm_bins, check_claude),
        ("codex", CODEX, codex_bins, check_codex),
        ("gemini", GEMINI_CLI, npm_bins, check_gemini),
    ])  # fmt: skip


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
