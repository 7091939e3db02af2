"""`deepwork serve`: options, config defaults, and the http/sse transports."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from deepwork_core.base.config import DeepWorkConfig, load_config
from deepwork_core.base.errors import ConfigError
from deepwork_mcp.cli import cli
from deepwork_mcp.cli.serve import apply_flags
from fastmcp import Client

from tests.fixtures.workflow_project import make_project

OPTIONS = (
    "--path",
    "--no-quality-gate",
    "--transport",
    "--host",
    "--port",
    "--external-runner",
    "--platform",
    "--max-quality-attempts",
    "--quality-gate-timeout",
    "--no-branch",
)


def test_help_lists_every_option() -> None:
    result = CliRunner().invoke(cli, ["serve", "--help"])
    assert result.exit_code == 0, result.output
    for option in OPTIONS:
        assert option in result.output
    for choice in ("stdio", "sse", "http", "127.0.0.1", "8000"):
        assert choice in result.output


def test_version_does_not_import_fastmcp() -> None:
    code = (
        "import sys; from deepwork_mcp.cli import main\n"
        "try:\n    main(['--version'])\nexcept SystemExit:\n    pass\n"
        "assert 'fastmcp' not in sys.modules, 'fastmcp imported'\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("deepwork, version ")


#: The review-cost settings (issue 23), at their defaults in every test below.
COST_DEFAULTS = {
    "review_depth": "standard",
    "models": {"light": None, "standard": None, "thorough": None},
    "stall_timeout": 60.0,
    "stall_retries": 1,
    "budget": {"max_cost_usd": None, "max_tokens": None},
    "max_parallel": 4,
    "wait_seconds": 20.0,  # background reviews (issue 30)
    "reuse": "passes",  # what reviews cost (issue 42)
    "prices": {},
    "max_budget_usd_per_day": None,
}


def summary(config: DeepWorkConfig) -> dict[str, object]:
    """The settings `create_server` acts on."""
    return {
        **config.quality_gate.model_dump(),
        "platform": config.platform,
        "create_branch": config.git.create_branch,
    }


def test_defaults_without_config(tmp_path: Path) -> None:
    assert apply_flags(load_config(tmp_path)) == DeepWorkConfig()
    assert summary(apply_flags(load_config(tmp_path))) == {
        "enabled": True,
        "timeout_seconds": 240,
        "max_attempts": 3,
        "external_runner": None,
        "deepreview_rules": True,
        **COST_DEFAULTS,
        "platform": "claude",
        "create_branch": True,
    }


CONFIG = """\
version: "1.0"
platforms: [gemini, claude]
quality_gate:
  enabled: false
  external_runner: claude
  max_attempts: 5
  timeout_seconds: 60
  deepreview_rules: false
git:
  create_branch: false
"""


def test_config_gives_the_defaults(tmp_path: Path) -> None:
    (tmp_path / ".deepwork").mkdir()
    (tmp_path / ".deepwork/config.yml").write_text(CONFIG)
    assert summary(apply_flags(load_config(tmp_path))) == {
        "enabled": False,
        "timeout_seconds": 60,
        "max_attempts": 5,
        "external_runner": "claude",
        "deepreview_rules": False,
        **COST_DEFAULTS,
        "platform": "gemini",
        "create_branch": False,
    }


def test_flags_win_over_the_config() -> None:
    config = DeepWorkConfig.model_validate(
        {"quality_gate": {"external_runner": "claude", "max_attempts": 5, "timeout_seconds": 60}}
    )
    options = apply_flags(
        config,
        no_quality_gate=True,
        external_runner="none",
        platform="gemini",
        max_quality_attempts=2,
        quality_gate_timeout=10,
        no_branch=True,
    )
    assert summary(options) == {
        "enabled": False,
        "timeout_seconds": 10,
        "max_attempts": 2,
        "external_runner": None,
        "deepreview_rules": True,
        **COST_DEFAULTS,
        "platform": "gemini",
        "create_branch": False,
    }


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("quality_gate:\n  enabeld: true\n", "quality_gate.enabeld: unknown key"),
        ("git:\n  create_branch: maybe\n", "git.create_branch"),
        ("quality_gate:\n  external_runner: gpt\n", "quality_gate.external_runner"),
        ("- a list\n", "must be a mapping"),
        ("key: [unclosed\n", "invalid YAML"),
    ],
)
def test_invalid_config_is_an_error_with_the_key_path(
    tmp_path: Path, text: str, fragment: str
) -> None:
    (tmp_path / ".deepwork").mkdir()
    path = tmp_path / ".deepwork/config.yml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)
    assert caught.value.code == "config.invalid"
    assert fragment in caught.value.message
    assert str(path) in caught.value.message


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--max-quality-attempts", "101"),
        ("--quality-gate-timeout", str(24 * 3600 + 1)),
        ("--platform", "vscode"),
    ],
)
def test_flags_are_held_to_the_limits_of_the_config_file(
    tmp_path: Path, flag: str, value: str
) -> None:
    result = CliRunner().invoke(cli, ["serve", "--path", str(tmp_path), flag, value])
    assert result.exit_code == 2, result.output
    assert flag in result.output


def test_an_unknown_platform_in_the_config_file_is_refused_at_load(tmp_path: Path) -> None:
    (tmp_path / ".deepwork").mkdir()
    (tmp_path / ".deepwork/config.yml").write_text("platforms: [vscode]\n")
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)
    assert caught.value.code == "config.invalid"
    assert "platforms" in caught.value.message


def test_core_and_the_review_formatters_agree_on_the_platforms() -> None:
    from deepwork_core.base.config import PLATFORMS as CORE_PLATFORMS
    from deepwork_review import PLATFORMS as FORMATTED

    assert set(CORE_PLATFORMS) == set(FORMATTED)


def test_serve_reports_an_invalid_config_and_exits(tmp_path: Path) -> None:
    (tmp_path / ".deepwork").mkdir()
    (tmp_path / ".deepwork/config.yml").write_text("bogus: 1\n")
    result = CliRunner().invoke(cli, ["serve", "--path", str(tmp_path)])
    assert result.exit_code != 0
    assert "config.invalid" in result.output


# --- http and sse transports -------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _listening_addresses(port: int) -> set[str]:
    """Local addresses with a listening TCP socket on `port` (from /proc/net/tcp*)."""
    found: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except FileNotFoundError:
            continue
        for line in lines:
            fields = line.split()
            address, port_hex = fields[1].rsplit(":", 1)
            if int(port_hex, 16) == port and fields[3] == "0A":  # 0A = LISTEN
                found.add(address)
    return found


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "project")


@pytest.fixture
def launch(project: Path) -> Iterator[list[subprocess.Popen[bytes]]]:
    processes: list[subprocess.Popen[bytes]] = []
    yield processes
    for process in processes:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.mark.slow
@pytest.mark.parametrize(("transport", "path"), [("http", "/mcp"), ("sse", "/sse")])
async def test_network_transports_bind_loopback_and_list_tools(
    project: Path, launch: list[subprocess.Popen[bytes]], transport: str, path: str
) -> None:
    port = _free_port()
    with (project.parent / f"{transport}.log").open("wb") as log:
        argv = [sys.executable, "-m", "deepwork_mcp", "serve", "--path", str(project)]
        argv += ["--transport", transport, "--port", str(port), "--no-branch"]
        process = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    launch.append(process)
    deadline = time.monotonic() + 60
    while not _listening_addresses(port):
        assert process.poll() is None, (project.parent / f"{transport}.log").read_text()
        assert time.monotonic() < deadline, "the server did not start listening"
        time.sleep(0.05)
    # 0100007F is 127.0.0.1 in /proc's little-endian hex; nothing listens on 0.0.0.0.
    assert _listening_addresses(port) == {"0100007F"}
    async with Client(f"http://127.0.0.1:{port}{path}") as client:
        names = {tool.name for tool in await client.list_tools()}
    assert {"get_workflows", "start_workflow", "finished_step", "abort_workflow"} <= names


def _serve(
    project: Path,
    launch: list[subprocess.Popen[bytes]],
    transport: str,
    *extra: str,
    env: dict[str, str] | None = None,
) -> int:
    port = _free_port()
    log_path = project.parent / f"{transport}-{port}.log"
    with log_path.open("wb") as log:
        argv = [sys.executable, "-m", "deepwork_mcp", "serve", "--path", str(project)]
        argv += ["--transport", transport, "--port", str(port), "--no-branch", *extra]
        process = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
        )
    launch.append(process)
    deadline = time.monotonic() + 60
    while not _listening_addresses(port):
        assert process.poll() is None, log_path.read_text()
        assert time.monotonic() < deadline, "the server did not start listening"
        time.sleep(0.05)
    return port


def _request(port: int, method: str, path: str, headers: dict[str, str]) -> int:
    """The status of one raw HTTP request (no client library normalising the headers)."""
    body = (
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":'
        b'"2025-06-18","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}'
    )
    lines = [f"{method} {path} HTTP/1.1"]
    lines += [f"{key}: {value}" for key, value in headers.items()]
    lines += ["Accept: application/json, text/event-stream", "Content-Type: application/json"]
    lines += [f"Content-Length: {len(body) if method == 'POST' else 0}", "Connection: close"]
    raw = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body if method == "POST" else b"")
    with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
        connection.sendall(raw)
        status_line = connection.recv(4096).split(b"\r\n", 1)[0]
    return int(status_line.split()[1])


@pytest.mark.slow
@pytest.mark.parametrize(
    ("transport", "method", "path"), [("http", "POST", "/mcp"), ("sse", "GET", "/sse")]
)
def test_a_foreign_host_or_origin_is_refused(
    project: Path, launch: list[subprocess.Popen[bytes]], transport: str, method: str, path: str
) -> None:
    port = _serve(project, launch, transport)
    evil = f"evil.example.com:{port}"
    assert _request(port, method, path, {"Host": evil, "Origin": f"http://{evil}"}) == 421
    local = f"127.0.0.1:{port}"
    assert _request(port, method, path, {"Host": local, "Origin": f"http://{evil}"}) == 403
    assert _request(port, method, path, {"Host": local, "Origin": "null"}) == 403
    if transport == "http":  # a same-machine client is served
        assert _request(port, method, path, {"Host": local}) == 200
        assert _request(port, method, path, {"Host": local, "Origin": f"http://{local}"}) == 200


def test_a_remote_bind_address_needs_allow_remote_and_a_token(project: Path) -> None:
    runner = CliRunner()
    base = ["serve", "--path", str(project), "--transport", "http", "--host", "0.0.0.0"]
    refused = runner.invoke(cli, base, env={"DEEPWORK_HTTP_TOKEN": ""})
    assert refused.exit_code == 2
    assert "--allow-remote" in refused.output
    assert "reachable from other machines" in refused.output
    # Issue 43, item 21: nothing warns of a server that is refused and never listens.
    assert "warning:" not in refused.output
    no_token = runner.invoke(cli, [*base, "--allow-remote"], env={"DEEPWORK_HTTP_TOKEN": ""})
    assert no_token.exit_code == 2
    assert "DEEPWORK_HTTP_TOKEN" in no_token.output
    assert "warning:" not in no_token.output


@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0"])
def test_a_port_in_use_is_a_coded_error_before_any_warning(project: Path, host: str) -> None:
    """Issue 43, item 21: uvicorn's raw `[Errno 98]` and exit status 3 became `serve.bind_failed`
    (the dashboard's `dashboard.bind_failed` is the model), and a remote bind address is warned
    about only once the server really listens there."""
    with socket.socket() as taken:
        taken.bind((host, 0))
        taken.listen()
        port = taken.getsockname()[1]
        argv = ["serve", "--path", str(project), "--transport", "http", "--host", host]
        argv += ["--port", str(port), "--allow-remote"]
        done = CliRunner().invoke(cli, argv, env={"DEEPWORK_HTTP_TOKEN": "t" * 20})
    assert done.exit_code == 1, done.output
    assert f"serve.bind_failed: cannot listen on {host}:{port}" in done.stderr
    assert "--port 0" in done.stderr
    assert "warning:" not in done.output
    assert "Errno" not in done.output


@pytest.mark.slow
def test_a_token_is_checked_on_every_request(
    project: Path, launch: list[subprocess.Popen[bytes]]
) -> None:
    token = "s3cret-token-0123456789"
    port = _serve(project, launch, "http", env={"DEEPWORK_HTTP_TOKEN": token})
    local = {"Host": f"127.0.0.1:{port}"}
    assert _request(port, "POST", "/mcp", local) == 401
    assert _request(port, "POST", "/mcp", {**local, "Authorization": "Bearer wrong"}) == 401
    assert _request(port, "POST", "/mcp", {**local, "Authorization": f"Bearer {token}"}) == 200
