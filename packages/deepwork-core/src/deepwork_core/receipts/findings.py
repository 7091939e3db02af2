"""The findings of `deepwork verify` and the three ways it prints them (docs/verify.md,
"Output"): `text` for people, `json` one object per line, `github` workflow-command
annotations (`::error file=…,title=…::…`) that GitHub shows on the pull request's files."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict

from deepwork_core.base.escaping import printable
from deepwork_core.receipts.codes import ReceiptCode

OutputFormat = Literal["text", "json", "github"]


class Finding(BaseModel):
    """One thing `deepwork verify` refuses: its code, the file it concerns (a receipt or the
    output it names), the step when one is concerned, and what is wrong."""

    model_config = ConfigDict(frozen=True)

    code: ReceiptCode
    file: str | None = None
    receipt: str | None = None
    step: str | None = None
    message: str


def render_findings(findings: Iterable[Finding], checked: int, fmt: OutputFormat) -> str:
    """The report of a run of `deepwork verify` that checked `checked` receipts."""
    listed = list(findings)
    if fmt == "json":
        return "".join(json.dumps(f.model_dump(mode="json"), sort_keys=True) + "\n" for f in listed)
    if fmt == "github":
        lines = [printable(_annotation(f)) for f in listed]
        lines.append(_summary(listed, checked))
        return "\n".join(lines) + "\n"
    lines = [printable(f"{f.code}: {_where(f)}{f.message}") for f in listed]
    lines.append(_summary(listed, checked))
    return "\n".join(lines) + "\n"


def _where(finding: Finding) -> str:
    parts = [p for p in (finding.file, f"step {finding.step}" if finding.step else None) if p]
    return f"{' '.join(parts)}: " if parts else ""


def _summary(listed: list[Finding], checked: int) -> str:
    receipts = f"{checked} receipt{'s' if checked != 1 else ''}"
    if not listed:
        return f"deepwork verify: {receipts} checked, all hold"
    return f"deepwork verify: {receipts} checked, {len(listed)} failing"


def _annotation(finding: Finding) -> str:
    props = [f"title={_escape_property(str(finding.code))}"]
    if finding.file:
        props.insert(0, f"file={_escape_property(finding.file)}")
    step = f"step {finding.step}: " if finding.step else ""
    return f"::error {','.join(props)}::{_escape_data(step + finding.message)}"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")
