"""Drive a real MCP server over stdio with the official `mcp` client and time what it does.

`connect()` spawns the server, answers `initialize` and hands back a `Connection` that knows the
server's pid (for its peak memory), the time the spawn started (for cold-start figures), and can
measure the exact JSON of any message the server sent (for the context-cost figure).
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self, TextIO

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.shared.message import SessionMessage

# Generous: a cold FastMCP start takes about 2 s on a loaded 2-core host.
STARTUP_TIMEOUT = 60.0
CALL_TIMEOUT = 120.0


class ServerUnavailable(Exception):
    """The server could not be started, or lacks the tool a figure needs."""


class CallFailed(Exception):
    """A tool call answered with an error, or its answer failed a sanity check."""


class _TapStream:
    """A read stream that passes every message through and keeps the ones sent while armed."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.armed = False
        self.captured: list[SessionMessage] = []
        self.last_answer_at = 0.0  # perf_counter when the latest response came off the pipe

    async def receive(self) -> SessionMessage | Exception:
        item: SessionMessage | Exception = await self._inner.receive()
        if isinstance(item, SessionMessage):
            if _is_answer(item):
                self.last_answer_at = time.perf_counter()
            if self.armed:
                self.captured.append(item)
        return item

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def wire_size(message: SessionMessage) -> int:
    """Bytes of `message` as JSON on the wire (the same serialisation the stdio transports use)."""
    return len(message.message.model_dump_json(by_alias=True, exclude_unset=True).encode())


@dataclass
class Connection:
    """One live client session with a spawned server."""

    session: ClientSession
    pid: int
    spawned_at: float
    initialized_at: float
    instructions: str | None
    tap: _TapStream
    tool_names: set[str] = field(default_factory=set)
    last_client_ms: float = 0.0

    async def list_tools(self) -> tuple[float, int, list[str]]:
        """`tools/list`: (finished-at perf_counter, wire bytes of the answer, tool names)."""
        self.tap.captured.clear()
        self.tap.armed = True
        try:
            with anyio.fail_after(CALL_TIMEOUT):
                result = await self.session.list_tools()
        finally:
            self.tap.armed = False
        done = time.perf_counter()
        names = [tool.name for tool in result.tools]
        self.tool_names = set(names)
        answers = [m for m in self.tap.captured if _has_result(m)]
        size = wire_size(answers[-1]) if answers else len(result.model_dump_json(by_alias=True))
        return done, size, names

    async def call(self, tool: str, arguments: dict[str, Any] | None = None) -> tuple[float, Any]:
        """Call `tool`; return (ms, the structured answer or the text of a plain one).

        The time runs from sending the request until its answer came off the server's stdout,
        so it holds the server's work and the pipe, not the client's own validation of the
        answer against the output schema (recorded apart in `client_ms`).
        Raises `ServerUnavailable` when the server does not offer the tool (after a list_tools),
        `CallFailed` when the call answers with an error.
        """
        if self.tool_names and tool not in self.tool_names:
            raise ServerUnavailable(f"the server offers no tool {tool!r}")
        start = time.perf_counter()
        with anyio.fail_after(CALL_TIMEOUT):
            result = await self.session.call_tool(tool, arguments or {})
        done = time.perf_counter()
        answered = self.tap.last_answer_at if self.tap.last_answer_at > start else done
        elapsed = (answered - start) * 1000
        self.last_client_ms = (done - answered) * 1000
        text = "".join(getattr(block, "text", "") for block in result.content)
        if result.is_error:
            raise CallFailed(f"{tool} answered with an error: {text[:500]}")
        payload: Any = result.structured_content
        if isinstance(payload, dict) and set(payload) == {"result"}:
            payload = payload["result"]  # FastMCP wraps non-object answers
        return elapsed, payload if payload is not None else text

    def peak_rss_kib(self) -> int:
        """VmHWM (peak resident set) of the server process, in KiB."""
        return _status_field(self.pid, "VmHWM")


def _has_result(message: SessionMessage) -> bool:
    return getattr(message.message, "result", None) is not None


def _is_answer(message: SessionMessage) -> bool:
    """A response (result or error) rather than a request or notification from the server."""
    inner = message.message
    return getattr(inner, "result", None) is not None or getattr(inner, "error", None) is not None


def _status_field(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{key}:"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/{pid}/status has no {key}")


def _children(parent: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{parent}/task").iterdir():
        children = (task / "children").read_text().split()
        found.update(int(child) for child in children)
    return found


@asynccontextmanager
async def connect(
    command: str,
    args: list[str],
    *,
    cwd: Path,
    stderr: TextIO,
    env: dict[str, str] | None = None,
) -> AsyncIterator[Connection]:
    """Spawn `command args` in `cwd`, initialise a session and yield it.

    Server stderr goes to `stderr` (a real file: stdout is the protocol channel). A server that
    dies or does not answer `initialize` raises `ServerUnavailable` with the tail of its stderr.
    """
    params = StdioServerParameters(command=command, args=args, cwd=str(cwd), env=env)
    before = _children(os.getpid())
    spawned_at = time.perf_counter()
    try:
        async with stdio_client(params, errlog=stderr) as (read, write):
            new = _children(os.getpid()) - before
            if len(new) != 1:
                raise RuntimeError(f"expected one new child process, found {sorted(new)}")
            tap = _TapStream(read)
            async with ClientSession(tap, write) as session:
                try:
                    with anyio.fail_after(STARTUP_TIMEOUT):
                        init = await session.initialize()
                except Exception as exc:
                    raise ServerUnavailable(
                        f"{Path(command).name} {' '.join(args[:1])} did not initialise: "
                        f"{type(exc).__name__}: {exc}; its stderr ends: {_tail(stderr)}"
                    ) from exc
                yield Connection(
                    session=session,
                    pid=new.pop(),
                    spawned_at=spawned_at,
                    initialized_at=time.perf_counter(),
                    instructions=init.instructions,
                    tap=tap,
                )
    except BaseExceptionGroup as group:
        leaf = _single_leaf(group)
        if leaf is None:
            raise
        raise leaf from None


def _single_leaf(group: BaseExceptionGroup[BaseException]) -> BaseException | None:
    """The one real error inside task-group wrapping, if there is exactly one."""
    leaves: list[BaseException] = []
    pending: list[BaseException] = [group]
    while pending:
        item = pending.pop()
        if isinstance(item, BaseExceptionGroup):
            pending.extend(item.exceptions)
        elif not isinstance(item, anyio.get_cancelled_exc_class()):
            leaves.append(item)
    return leaves[0] if len(leaves) == 1 else None


def _tail(stream: TextIO) -> str:
    """The last non-empty line a file-backed stream received (usually the exception)."""
    stream.flush()
    try:
        lines = Path(stream.name).read_text(errors="replace").splitlines()
    except (OSError, TypeError):
        return "(not captured)"
    last = [line.strip() for line in lines if line.strip()]
    return last[-1] if last else "(empty)"
