"""Generate docs/errors.md, the table of every error code, from the families of codes: `ErrorCode`
(`deepwork_core.base.error_codes`) and the families kept beside the code that reports them
(`FAMILIES`: the jobs', the store's, the fan-out's, the receipts').

Each member gives a row: its value (the code) and the string under it (the meaning).

    python tools/gen_errors_doc.py write   # rewrite docs/errors.md
    python tools/gen_errors_doc.py check   # exit 1 if docs/errors.md is out of date

The test suite runs the same comparison, so a member added to `ErrorCode` without regenerating
the page fails `nox -s tests`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from deepwork_core.base.error_areas import AREAS
from deepwork_core.base.error_codes import Code, ErrorCode, area_of
from deepwork_core.engine.fanout.codes import FanOutCode
from deepwork_core.jobs.errors import JobCode
from deepwork_core.receipts.codes import ReceiptCode
from deepwork_core.state.store.errors import StoreCode

#: Every family of codes; the page lists all their members, area by area.
FAMILIES: tuple[type[Code], ...] = (ErrorCode, JobCode, StoreCode, FanOutCode, ReceiptCode)

ROOT = Path(__file__).resolve().parent.parent
ERRORS_DOC = ROOT / "docs" / "errors.md"
COMMAND = "uv run python tools/gen_errors_doc.py write"

_INTRO = """\
# Error codes

<!-- Generated from deepwork_core/base/error_codes.py and the families of codes beside the code
that reports them (jobs/errors.py, state/store/errors.py, engine/fanout/codes.py,
receipts/codes.py) by `{command}`; do not edit. -->

Every error DeepWork reports on purpose carries a stable code, `area.snake_case`. Codes never
change meaning; messages may be reworded. Where a code shows up:

- **Tool errors.** An MCP tool that fails answers with an error result whose text starts with
  `<code>: `, followed by what to do next. An agent can act on the code without parsing the text.
- **Findings about files.** `deepwork jobs validate`, `get_workflows` (`errors`) and the review
  tools report problems in files the user wrote as `file:line: <code>: <message>`.
- **The command line.** `deepwork` prints `Error: <code>: <message>` on stderr and exits non-zero;
  `deepwork hook` prints `deepwork hook: <code>: <message>` and exits 1.

Codes of the form `<area>.error` (and `deepwork.error`) are the generic codes of a family; the
code raised is normally a more specific one.

In Python each code is a member of `deepwork_core.base.error_codes.ErrorCode`, or of a family
kept beside the code that reports it (`job.*`: `deepwork_core.jobs.errors.JobCode`; `store.*`:
`deepwork_core.state.store.errors.StoreCode`; `fan_out.*`:
`deepwork_core.engine.fanout.codes.FanOutCode`; receipts and `deepwork verify`:
`deepwork_core.receipts.codes.ReceiptCode`), named after its
text (`ErrorCode.SESSION_NONE_ACTIVE` is `session.none_active`). A member is a `str` equal to
its text, so `exc.code == "session.none_active"` holds and printing it gives the plain code.
"""


def every_code() -> list[Code]:
    """Every member of every family."""
    return [code for family in FAMILIES for code in family]


def render() -> str:
    """The whole page, from `ErrorCode` and `AREAS`."""
    lines = [_INTRO.format(command=COMMAND)]
    for area in sorted(AREAS):
        codes = sorted(code for code in every_code() if area_of(code) == area)
        lines.append(f"## `{area}`\n\n{AREAS[area]}\n\n| code | meaning |\n|---|---|")
        lines.extend(f"| `{code}` | {code.meaning} |" for code in codes)
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if argv == ["write"]:
        ERRORS_DOC.write_text(render(), encoding="utf-8")
        print(f"wrote {ERRORS_DOC.relative_to(ROOT)}")
        return 0
    if argv == ["check"]:
        current = ERRORS_DOC.read_text(encoding="utf-8") if ERRORS_DOC.is_file() else ""
        if current != render():
            print(f"{ERRORS_DOC.relative_to(ROOT)} is out of date; run: {COMMAND}", file=sys.stderr)
            return 1
        print(f"{ERRORS_DOC.relative_to(ROOT)} is up to date")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
