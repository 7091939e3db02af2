"""A calibration report (docs/quality-gate.md, "Calibration"): how one reviewer (runner, model,
depth) judged the cases whose right verdicts are known.

Per criterion of a case the reviewer's verdict is right, a **false pass** (the right verdict is
`fail`, the reviewer passed it), a **false fail** (the other way round), or not given (the call
failed: counted under `errors`, in neither rate). The *false-pass rate* is false passes over the
criteria whose right verdict is `fail`; the *false-fail rate* false fails over those whose right
verdict is `pass`. Both are given per kind of case and in total, with what the calls cost.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

#: Above this false-pass rate, `deepwork stats` and the dashboard warn.
FALSE_PASS_WARNING: Final = 0.10

Verdict = Literal["pass", "fail"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CriterionResult(_Model):
    criterion: str
    expected: Verdict
    #: The reviewer's verdict; None when the call gave none.
    got: Verdict | None = None


class CaseResult(_Model):
    case: str
    kind: str
    source: str
    criteria: list[CriterionResult]
    #: `<code>: <message>` of a call that gave no verdict.
    error: str | None = None
    cost_usd: float = 0.0
    tokens: int = 0
    #: Calls whose reviewer reported no cost (codex and gemini report none): not in `cost_usd`.
    unpriced_calls: int = 0


class Rates(_Model):
    """The figures of some cases (one kind, or all)."""

    cases: int = 0
    #: Criteria the reviewer judged, and how many of them it should have failed / passed.
    judged: int = 0
    should_fail: int = 0
    should_pass: int = 0
    false_passes: int = 0
    false_fails: int = 0
    #: Cases whose call gave no verdict.
    errors: int = 0
    #: What the calls that reported a cost cost; `unpriced_calls` counts those that did not.
    cost_usd: float = 0.0
    tokens: int = 0
    unpriced_calls: int = 0

    @property
    def cost_text(self) -> str:
        """`0.0800 USD`, `not reported` (no call reported a cost) or `0.0400 USD + 2 not
        reported`: a cost the reviewer did not report is never shown as 0."""
        if not self.unpriced_calls:
            return f"{self.cost_usd:.4f} USD"
        if not self.cost_usd:
            return "not reported"
        return f"{self.cost_usd:.4f} USD + {self.unpriced_calls} not reported"

    @computed_field  # type: ignore[prop-decorator]
    @property
    def false_pass_rate(self) -> float | None:
        return self.false_passes / self.should_fail if self.should_fail else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def false_fail_rate(self) -> float | None:
        return self.false_fails / self.should_pass if self.should_pass else None


class KindRates(Rates):
    kind: str


class CalibrationReport(_Model):
    """One run of `deepwork calibrate`."""

    runner: str
    model: str | None = None
    depth: str
    #: When it ran (ISO 8601, UTC).
    at: str
    total: Rates
    kinds: list[KindRates] = Field(default_factory=list)
    results: list[CaseResult] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def warns(self) -> bool:
        """More than `FALSE_PASS_WARNING` of the criteria that should fail passed."""
        rate = self.total.false_pass_rate
        return rate is not None and rate > FALSE_PASS_WARNING


def tally(results: Sequence[CaseResult]) -> dict[str, int | float]:
    """The counts of `results`, as the fields of `Rates`."""
    judged = [c for r in results for c in r.criteria if c.got is not None]
    return {
        "cases": len(results),
        "judged": len(judged),
        "should_fail": sum(1 for c in judged if c.expected == "fail"),
        "should_pass": sum(1 for c in judged if c.expected == "pass"),
        "false_passes": sum(1 for c in judged if c.expected == "fail" and c.got == "pass"),
        "false_fails": sum(1 for c in judged if c.expected == "pass" and c.got == "fail"),
        "errors": sum(1 for r in results if r.error),
        "cost_usd": round(sum(r.cost_usd for r in results), 6),
        "tokens": sum(r.tokens for r in results),
        "unpriced_calls": sum(r.unpriced_calls for r in results),
    }


def build_report(
    runner: str, model: str | None, depth: str, at: str, results: Sequence[CaseResult]
) -> CalibrationReport:
    """The report of `results`: in total and per kind (in name order)."""
    kinds = sorted({r.kind for r in results})
    return CalibrationReport(
        runner=runner,
        model=model,
        depth=depth,
        at=at,
        total=Rates.model_validate(tally(results)),
        kinds=[
            KindRates.model_validate(
                {"kind": kind, **tally([r for r in results if r.kind == kind])}
            )
            for kind in kinds
        ],
        results=list(results),
    )
