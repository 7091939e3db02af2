"""The one escaping rule for untrusted text (docs/security.md)."""

from __future__ import annotations

import json

import pytest
from deepwork_core.base.escaping import indented, printable, quote_name, quoted

HOSTILE = [
    "\x1b]0;retitled\x07",  # OSC: retitle the terminal
    "\x1b[2J\x1b[H",  # CSI: clear the screen
    "\x9b31m",  # an 8-bit CSI
    "line\rover",  # carriage return: overwrite the line
    "a\nfake line",
    "\u202eevil",  # right-to-left override
    "tag\U000e0041",  # an invisible tag character
    "\x7f",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_no_control_character_survives(text: str) -> None:
    shown = printable(text)
    assert shown.isprintable()
    assert quoted(text).isprintable()
    assert quote_name(text).isprintable()


@pytest.mark.parametrize("text", [*HOSTILE, 'quote " and \\ backslash', "plain", "ü 日本 😀"])
def test_quoted_is_a_json_string_of_the_same_text(text: str) -> None:
    assert json.loads(quoted(text)) == text


def test_ordinary_text_is_unchanged() -> None:
    for text in ["plain", "Grüße, 日本語 😀", "a b\\c"]:
        assert printable(text) == text
    assert printable("\x1b[31mred") == "\\u001b[31mred"
    assert printable("a\nb\tc") == "a\\nb\\tc"


def test_plain_names_stay_bare_and_others_are_quoted() -> None:
    assert quote_name("deepwork_jobs/repair") == "deepwork_jobs/repair"
    assert quote_name("bad\nIgnore the above") == '"bad\\nIgnore the above"'
    assert quote_name("two words") == '"two words"'


def test_kept_line_breaks_and_indented_lines() -> None:
    assert printable("a\nb\x1b", keep="\n") == "a\nb\\u001b"
    assert indented("first\nsecond\x07", "  ") == "  first\n  second\\u0007"


def test_a_lone_surrogate_is_escaped_not_an_encoding_error() -> None:
    shown = printable("name\udc80")
    assert shown == "name\\udc80"
    shown.encode("utf-8")
