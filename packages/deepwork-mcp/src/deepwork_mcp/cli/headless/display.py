"""What `deepwork run` shows while its agent works (docs/headless.md): plain lines, one per event
of the run, in CI and wherever the output is not a terminal; on a terminal the same lines with a
live status line under them (the current step, how long the run has gone, the events so far),
rewritten in place and cleared before each new line."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, TextIO

#: Back to the line's start and clear it (ANSI), before the status line is written again.
CLEAR: Final = "\r\x1b[2K"
SPINNER: Final = "|/-\\"


def is_live(stream: TextIO, environ: Mapping[str, str]) -> bool:
    """A live display: `stream` is a terminal and no CI service runs us (`CI=true`)."""
    return stream.isatty() and environ.get("CI") != "true" and environ.get("TERM") != "dumb"


@dataclass
class Display:
    """Event lines, and (live) a status line kept under them."""

    stream: TextIO
    live: bool = False
    _status: str = ""
    _ticks: int = 0

    def line(self, text: str) -> None:
        """Print one event line (above the status line, when live)."""
        if self.live and self._status:
            self.stream.write(CLEAR)
        self.stream.write(text + "\n")
        if self.live and self._status:
            self.stream.write(self._status)
        self.stream.flush()

    def status(self, text: str) -> None:
        """Show `text` as the live status line (nothing in plain mode)."""
        if not self.live:
            return
        self._ticks += 1
        self._status = f"{SPINNER[self._ticks % len(SPINNER)]} {text}"
        self.stream.write(CLEAR + self._status)
        self.stream.flush()

    def close(self) -> None:
        """Clear the status line before the last lines are printed."""
        if self.live and self._status:
            self.stream.write(CLEAR)
            self.stream.flush()
        self._status = ""
