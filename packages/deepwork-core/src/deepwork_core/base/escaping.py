"""Untrusted text made safe to show: the one escaping rule of DeepWork (docs/security.md).

Text an agent wrote (goals, notes, output paths, state files it can edit) and names read from the
file system (job folders, `.deepreview` files) reach a human's terminal through the `deepwork`
commands and the model through the server's instructions and answers. Raw, such text could
retitle the terminal, hide or rewrite lines (`ESC`, `CSI`, carriage return, bidirectional
overrides) or add lines of its own to what the model reads. Every character `str.isprintable()`
refuses is therefore written as its JSON escape (`\\n`, `\\r`, `\\t`, `\\u001b`, `\\u202e`,
astral characters as a surrogate pair), which is valid both in plain text and inside JSON.

This module imports only the standard library.
"""

from __future__ import annotations

import re

_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
#: Names shown as they are; any other name is quoted (`quote_name`).
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_./@+=-]+")


def _escape(char: str) -> str:
    short = _SHORT.get(char)
    if short is not None:
        return short
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def printable(text: str, *, keep: str = "") -> str:
    """`text` with every non-printable character (but those in `keep`) as its JSON escape.

    `keep="\\n"` leaves line breaks for text whose lines are meant (a prompt, a JSON document).
    Backslashes are left alone: the result is for display, not to be parsed back.
    """
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() or char in keep else _escape(char) for char in text)


def quoted(text: str) -> str:
    """`text` as a JSON string literal with every non-printable character escaped: always one
    line, and its end is unambiguous whatever it holds."""
    body = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{printable(body)}"'


def quote_name(name: str) -> str:
    """A name from the file system as it should be shown: as is when it is plain (letters,
    digits and `_./@+=-`), else `quoted`."""
    return name if _PLAIN_NAME.fullmatch(name) else quoted(name)


def indented(text: str, prefix: str) -> str:
    """Multi-line untrusted text, escaped, with `prefix` before every line (so no line of it can
    pass for one of the command's own)."""
    return "\n".join(prefix + line for line in printable(text, keep="\n").split("\n"))
