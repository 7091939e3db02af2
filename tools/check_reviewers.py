"""Run the codex and gemini reviewer runners against the real CLIs, offline.

    python tools/check_reviewers.py [--cache DIR]

The quality gate's `codex` and `gemini` runners (`deepwork_mcp.reviewers`) build a command
line and read the events the CLI prints. This check runs the real binaries (pinned, from the npm
registry, cached like `tools/check_plugins.py` does) with exactly that command line, each
pointed at a local stand-in for its model endpoint (no account, no network): Codex through a
`model_provider` given with `-c` (added before the final `-`), the Gemini CLI through
`GOOGLE_GEMINI_BASE_URL` and an API-key login in a HOME of its own. For each it checks that the
CLI accepts every flag, that the runner reads the verdict and the usage from the real events
(and no cost), that the persona and, for Codex, the strict reply schema reach the model's
request, and that a failed model call is read as `quality_gate.execution_error`.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

from check_plugins import GEMINI_CLI
from client_checks import CheckFailed, run, run_checks, tail

VERDICT = {"passed": True, "feedback": "fine", "criteria_results": []}
PERSONA = "a reviewer who checks every claim against its source"


class _Endpoint(BaseHTTPRequestHandler):
    """The OpenAI Responses and Gemini streamGenerateContent calls, answered with a verdict
    (or, while `failing`, with an error); every request body is kept in `requests`."""

    requests: ClassVar[list[dict[str, Any]]] = []
    failing: ClassVar[bool] = False

    def log_message(self, format: str, *args: Any) -> None:
        del format, args

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        self.requests.append({"path": self.path, "body": json.loads(body or b"{}")})
        if self.path.endswith("/responses"):
            self._responses()
        else:
            self._gemini()

    def _send(self, status: int, kind: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _responses(self) -> None:
        usage = {"input_tokens": 1234, "input_tokens_details": {"cached_tokens": 200},
                 "output_tokens": 56, "output_tokens_details": {"reasoning_tokens": 10},
                 "total_tokens": 1290}  # fmt: skip
        message = {"type": "message", "role": "assistant", "id": "msg_1",
                   "content": [{"type": "output_text", "text": json.dumps(VERDICT)}]}  # fmt: skip
        end = {"type": "response.completed", "response": {"id": "r", "usage": usage}}
        if self.failing:
            error = {"code": "server_error", "message": "The model had an internal error."}
            end = {"type": "response.failed", "response": {"id": "r", "error": error}}
        events = [
            {"type": "response.created", "response": {"id": "r"}},
            {"type": "response.output_item.done", "item": message},
            end,
        ]
        data = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
        self._send(200, "text/event-stream", data.encode())

    def _gemini(self) -> None:
        if self.failing:
            error = {"error": {"code": 400, "message": "API key not valid.", "status": "X"}}
            self._send(400, "application/json", json.dumps(error).encode())
            return
        usage = {"promptTokenCount": 900, "candidatesTokenCount": 40, "totalTokenCount": 990,
                 "cachedContentTokenCount": 100}  # fmt: skip
        routed = "stream" not in self.path  # the CLI's model router asks without streaming
        text = json.dumps({"reasoning": "r", "model_choice": "pro"} if routed else VERDICT)
        chunk = {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
                 "finishReason": "STOP"}], "usageMetadata": usage,
                 "modelVersion": "gemini-2.5-pro"}  # fmt: skip
        if routed:
            self._send(200, "application/json", json.dumps(chunk).encode())
        else:
            self._send(200, "text/event-stream", f"data: {json.dumps(chunk)}\r\n\r\n".encode())


@contextmanager
def endpoint() -> Iterator[str]:
    """A local model endpoint for both CLIs; yields its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Endpoint)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _plan(scratch: Path, executable: str, model: str | None) -> Any:
    from deepwork_core.gate.quality import QualityReviewTask
    from deepwork_mcp.reviewers.stream import CallPlan

    task = QualityReviewTask(step_id="s", run_each="step", criteria={"Clear": "Is it clear?"})
    return CallPlan(executable, task, model, None, PERSONA, scratch, scratch)


def _call(runner: Any, argv: list[str], env: dict[str, str], cwd: Path, model: str | None) -> Any:
    """The runner's reading of one real call, and the call's output."""
    result = run(argv, env, cwd=cwd, input_text="Review brief: judge the work.", timeout=120)
    return runner.read("check", result, model), result


def check_codex(bins: Path, base: str, scratch: Path) -> str:
    from deepwork_mcp.reviewers.codex import CodexRunner

    runner, home = CodexRunner(), scratch / "home-codex"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "CODEX_HOME": str(home)}
    provider = ["-c", "model_provider=local", "-c", 'model_providers.local.name="local"',
                "-c", f'model_providers.local.base_url="{base}/v1"',
                "-c", 'model_providers.local.wire_api="responses"',
                "-c", "model_providers.local.request_max_retries=0",
                "-c", "model_providers.local.stream_max_retries=0"]  # fmt: skip
    argv = runner.argv(_plan(scratch, str(bins / "codex"), "gpt-5"))
    argv = [*argv[:-1], *provider, argv[-1]]
    outcome, result = _call(runner, argv, env, scratch, "gpt-5")
    if outcome.error is not None or outcome.reply != VERDICT:
        raise CheckFailed(f"codex: {outcome.error or outcome.reply}\n{tail(result)}")
    if (outcome.usage.input_tokens, outcome.usage.cache_read_tokens) != (1034, 200):
        raise CheckFailed(f"codex usage read wrong: {outcome.usage}")
    if outcome.usage.cost_usd is not None:
        raise CheckFailed("codex reports no cost, yet one was read")
    request = json.dumps(_Endpoint.requests[-1]["body"])
    schema = _Endpoint.requests[-1]["body"]["text"]["format"]
    if PERSONA not in request or not schema.get("strict"):
        raise CheckFailed("codex: the persona or the strict reply schema did not reach the model")
    _Endpoint.failing = True
    failed, _ = _call(runner, argv, env, scratch, "gpt-5")
    _Endpoint.failing = False
    if failed.error is None or failed.error.code != "quality_gate.execution_error":
        raise CheckFailed(f"codex: a failed turn was read as {failed.error}")
    return "verdict, usage (no cost), persona, strict schema, failed turn"


def check_gemini(bins: Path, base: str, scratch: Path) -> str:
    from deepwork_mcp.reviewers.gemini import GeminiRunner

    runner, home = GeminiRunner(), scratch / "home-gemini"
    (home / ".gemini").mkdir(parents=True)
    settings = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    env = {**os.environ, "HOME": str(home), "GEMINI_API_KEY": "local",
           "GOOGLE_GEMINI_BASE_URL": base}  # fmt: skip
    argv = runner.argv(_plan(scratch, str(bins / "gemini"), None))
    outcome, result = _call(runner, argv, env, scratch, None)
    if outcome.error is not None or outcome.reply != VERDICT:
        raise CheckFailed(f"gemini: {outcome.error or outcome.reply}\n{tail(result)}")
    if outcome.usage.cache_read_tokens == 0 or outcome.usage.cost_usd is not None:
        raise CheckFailed(f"gemini usage read wrong: {outcome.usage}")
    streamed = [r for r in _Endpoint.requests if "stream" in r["path"]]
    if not streamed or PERSONA not in json.dumps(streamed[-1]["body"]):
        raise CheckFailed("gemini: the persona did not reach the model")
    _Endpoint.failing = True
    failed, _ = _call(runner, argv, env, scratch, None)
    _Endpoint.failing = False
    if failed.error is None or failed.error.code != "quality_gate.execution_error":
        raise CheckFailed(f"gemini: a failed call was read as {failed.error}")
    return "verdict, usage (no cost), persona, failed call"


def main(argv: list[str]) -> int:
    from check_agents import CODEX, install_client

    return run_checks(argv, __doc__.splitlines()[0], "dw-reviewers-", endpoint, [
        ("codex", CODEX, lambda cache: install_client(cache, CODEX, "codex"), check_codex),
        ("gemini", GEMINI_CLI, lambda cache: install_client(cache, GEMINI_CLI, "gemini"),
         check_gemini),
    ])  # fmt: skip


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
