"""The run page (`/run/<session>`) and `deepwork report --html`: one run, summary first
(docs/dashboard.md).

It renders core's read model (`deepwork_core.state.read_model.runs.RunDetail`): the summary
(outcome, steps done, every verdict labelled as what it is, approvals, review cost, branch), the
approval card while a step waits for a human, the workflow graph with its legend (and the
instances of its fanned-out steps, docs/fan-out.md), the outputs and their evidence, the
reviews and what they cost, and the timeline as sentences, each expandable to all of its fields.
Text is escaped as on every page (`pages.text`).
"""

from __future__ import annotations

from typing import Final

from deepwork_core.evidence.verdicts import VerdictKind
from deepwork_core.state.event_kinds import ReviewVerdictEvent
from deepwork_core.state.read_model.runs import OutputLine, Run, RunDetail, RunSummary
from deepwork_core.state.read_model.timeline import TimelineEntry
from deepwork_core.state.usage.pair import cost_text

from deepwork_mcp.dashboard.pages import (
    approval_card,
    layout,
    scroll,
    short_hash,
    status_badge,
    text,
    when,
)
from deepwork_mcp.dashboard.views import InstanceRow, RunPage


def _timeline(detail: RunDetail) -> str:
    if detail.timeline_problem:
        return f'<p class="fail">{text(detail.timeline_problem)}</p>'
    if not detail.timeline:
        return '<p class="muted">No events recorded.</p>'
    note = ""
    if detail.events_omitted:
        note = (
            f'<p class="muted omitted">Showing the newest {len(detail.timeline)} of '
            f"{detail.events_total} events; <code>deepwork log {text(detail.run.session_id)}"
            "</code> prints every one.</p>"
        )
    body = "".join(_timeline_row(entry) for entry in detail.timeline)
    table = (
        '<table class="timeline"><thead><tr><th>Time</th><th>What happened</th></tr></thead>'
        f"<tbody>{body}</tbody></table>"
    )
    return note + scroll(table)


def _timeline_row(entry: TimelineEntry) -> str:
    return (
        f'<tr data-kind="{text(entry.kind)}"><td>{when(entry.at)}</td><td>'
        f'<span class="sentence">{text(entry.sentence)}</span>'
        f"<details><summary>{text(entry.kind)}: all fields</summary>"
        f"<pre>{text(entry.detail)}</pre></details></td></tr>"
    )


def _outputs(rows: list[OutputLine]) -> str:
    if not rows:
        return '<p class="muted">No accepted outputs yet.</p>'
    body = "".join(
        f"<tr><td>{text(r.step_id)}</td><td>{text(r.output)}</td><td><code>{text(r.path)}"
        f"</code></td><td>{short_hash(r.sha256)}</td><td>{text(r.verdict)}</td><td>"
        + ('<span class="fail">stale: changed since</span>' if r.stale else "current")
        + "</td></tr>"
        for r in rows
    )
    return scroll(
        '<table class="outputs"><thead><tr><th>Step</th><th>Output</th><th>File</th>'
        f"<th>SHA-256</th><th>Verdict</th><th>Evidence</th></tr></thead><tbody>{body}</tbody>"
        "</table>"
    )


def _instances(rows: list[InstanceRow]) -> str:
    """The instances of the run's fanned-out steps (docs/fan-out.md); empty when none."""
    if not rows:
        return ""
    body = "".join(
        f"<tr><td>{text(r.step_id)}</td><td>{r.index + 1}</td><td>{text(r.item)}</td>"
        f'<td><a href="/run/{text(r.session_id)}"><code>{text(r.session_id)}</code></a></td>'
        f"<td>{text(r.state)}</td><td>{text(r.abort_reason or '')}</td></tr>"
        for r in rows
    )
    return "<h2>Instances</h2>" + scroll(
        '<table class="instances"><thead><tr><th>Step</th><th>#</th>'
        "<th>Item</th><th>Session</th><th>State</th><th>Abort reason</th></tr></thead>"
        f"<tbody>{body}</tbody></table>"
    )


def _verdict(passed: bool) -> str:
    return '<span class="pass">passed</span>' if passed else '<span class="fail">failed</span>'


def _reviews(reviews: list[ReviewVerdictEvent]) -> str:
    if not reviews:
        return '<p class="muted">No reviewer verdicts recorded.</p>'
    cards = []
    for review in reviews:
        criteria = "".join(
            f"<tr><td>{text(c.criterion)}</td><td>{_verdict(c.passed)}</td>"
            f"<td>{text(c.feedback or '')}</td></tr>"
            for c in review.criteria
        )
        table = (
            scroll(
                f"<table><thead><tr><th>Criterion</th><th>Verdict</th><th>Feedback</th></tr>"
                f"</thead><tbody>{criteria}</tbody></table>"
            )
            if criteria
            else ""
        )
        target = f" on <code>{text(review.target_file)}</code>" if review.target_file else ""
        cards.append(
            f'<div class="card review"><strong>{text(review.step_id)}</strong>: '
            f"{text(review.review or 'review')}{target}, attempt {text(review.attempt or '-')}, "
            f'{_verdict(review.passed)} <span class="muted">{when(review.ts)}</span>'
            f"<p>{text(review.feedback or '')}</p>{table}</div>"
        )
    return "".join(cards)


def _review_cost(detail: RunDetail) -> str:
    """The reviewers' tokens and cost, as the gate recorded them (docs/quality-gate.md)."""
    usage = detail.summary.review_usage
    if not detail.review_calls:
        return '<p class="muted">No review call is recorded in the log of this session.</p>'
    total = (
        f"<p>{usage.calls} reviewer call(s), {usage.self_reviews} self-review(s): "
        f"{usage.input_tokens + usage.cache_read_tokens + usage.cache_creation_tokens} input and "
        f"{usage.output_tokens} output tokens, {text(cost_text(usage))}.</p>"
    )
    rows = "".join(
        f"<tr><td>{text(c.step_id)}</td><td>{text(c.review)}</td><td>{text(c.mode)}</td>"
        f"<td>{text(c.depth)}</td><td>{text(c.model or '-')}</td><td>{text(c.outcome)}</td>"
        f"<td>{c.input_tokens + c.cache_read_tokens + c.cache_creation_tokens}</td>"
        f"<td>{c.output_tokens}</td>"
        f"<td>{'not reported' if c.cost_usd is None else f'{c.cost_usd:.4f}'}</td></tr>"
        for c in detail.review_calls
    )
    head = (
        "<tr><th>Step</th><th>Review</th><th>Mode</th><th>Depth</th><th>Model</th>"
        "<th>Outcome</th><th>Input tokens</th><th>Output tokens</th><th>USD</th></tr>"
    )
    return total + scroll(f"<table><thead>{head}</thead><tbody>{rows}</tbody></table>")


_VERDICT_CLASS: Final = {
    VerdictKind.REVIEWER: "pass",
    VerdictKind.SELF_REVIEW: "self",
    VerdictKind.OVERRIDE: "override",
    VerdictKind.UNREVIEWED: "unreviewed",
    VerdictKind.ERROR: "fail",
}


def _summary(detail: RunDetail) -> str:
    """What a reader wants first: outcome, steps, verdicts, approvals, cost, branch."""
    run, summary = detail.run, detail.summary
    facts = [
        ("Outcome", f"{status_badge(run.status.value)} {text(summary.outcome)}"),
        ("Goal", text(run.goal)),
        ("Steps done", str(summary.steps_done)),
        ("Review cost", _usage_sentence(summary)),
        ("Branch", _branch(run)),
        ("Started", when(run.started_at)),
        ("Finished", when(run.finished_at)),
    ]
    cells = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in facts)
    return (
        '<section class="summary" aria-label="Summary"><h2>Summary</h2>'
        + scroll(f'<table class="facts">{cells}</table>')
        + f"<h3>Verdicts</h3>{_verdict_table(summary)}"
        + f"<h3>Approvals</h3>{_approval_table(summary)}</section>"
    )


def _usage_sentence(summary: RunSummary) -> str:
    usage = summary.review_usage
    if usage.calls == 0 and usage.self_reviews == 0:
        return '<span class="muted">no review ran</span>'
    selfs = f"; {usage.self_reviews} self-review(s), not metered" if usage.self_reviews else ""
    calls = f"{usage.calls} reviewer call(s)"
    return f"{text(cost_text(usage))}, {usage.tokens:,} tokens in {calls}{selfs}"


def _branch(run: Run) -> str:
    if not run.branch:
        return '<span class="muted">no branch of its own</span>'
    started = f" (started from <code>{text(run.started_from_branch)}</code>)"
    return f"<code>{text(run.branch)}</code>{started if run.started_from_branch else ''}"


def _verdict_table(summary: RunSummary) -> str:
    if not summary.verdicts:
        return '<p class="muted">No step accepted yet.</p>'
    rows = "".join(
        f"<tr><td>{text(', '.join(v.step_ids))}</td>"
        f'<td><span class="verdict {_VERDICT_CLASS[v.kind]}">{text(v.label)}</span></td>'
        f"<td>{text(v.reason or '')}</td><td>{when(v.at)}</td></tr>"
        for v in summary.verdicts
    )
    head = "<tr><th>Step</th><th>Verdict</th><th>Reason</th><th>When</th></tr>"
    return scroll(f'<table class="verdicts"><thead>{head}</thead><tbody>{rows}</tbody></table>')


def _decision(approved: bool) -> str:
    if approved:
        return '<span class="pass">approved</span>'
    return '<span class="fail">changes requested</span>'


def _approval_table(summary: RunSummary) -> str:
    if not summary.approvals:
        return '<p class="muted">No human decision recorded.</p>'
    rows = "".join(
        f"<tr><td>{text(', '.join(a.step_ids))}</td><td>{_decision(a.approved)}</td>"
        f"<td>{text(a.actor)}</td><td>{text(a.channel)}</td><td>{when(a.at)}</td>"
        f"<td>{text(a.comment or '')}</td></tr>"
        for a in summary.approvals
    )
    head = (
        "<tr><th>Step</th><th>Decision</th><th>Who</th><th>Channel</th><th>When</th>"
        "<th>Reason</th></tr>"
    )
    return scroll(f'<table class="approvals"><thead>{head}</thead><tbody>{rows}</tbody></table>')


def _facts(detail: RunDetail) -> str:
    run = detail.run
    rows = [
        ("Job/workflow", f"{text(run.job)}/{text(run.workflow)}"),
        ("Session", f"<code>{text(run.session_id)}</code>"),
        ("Agent", text(run.agent_id or "main")),
        ("Current step", text(", ".join(run.steps))),
        ("Last event", when(run.last_event_at)),
    ]
    if run.parent_session_id:
        parent = text(run.parent_session_id)
        rows.append(("Started by", f'<a href="/run/{parent}"><code>{parent}</code></a>'))
    rows += [(f"Input {text(k)}", text(v)) for k, v in detail.inputs.items()]
    cells = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows)
    return scroll(f'<table class="facts">{cells}</table>')


#: What the graph's colours and marks mean.
LEGEND: Final = (
    '<ul class="legend" aria-label="Legend">'
    '<li><span class="swatch current"></span>current step</li>'
    '<li><span class="swatch done"></span>done</li>'
    '<li><span class="swatch started"></span>started, not done</li>'
    '<li><span class="swatch reviewed"></span>thick border: the step has reviews</li>'
    "<li>✓ passed an external review in this run</li>"
    '<li><span class="swatch fanned"></span>stacked: a step run once per item, with its '
    "instances' counts (done · run · fix · ab: aborted)</li>"
    '<li><span class="dashed"></span>an input file from an earlier step</li></ul>'
)


def run_body(page: RunPage, *, token: str | None, background: str = "") -> str:
    """The run page's content, summary first; `token` None: a report (no buttons).
    `background`: the live table of the run's background reviews (the dashboard's page only)."""
    detail = page.detail
    run = detail.run
    graph = (
        f'<div class="graph">{page.graph_svg}</div>{LEGEND}'
        if page.graph_svg
        else f'<p class="muted">No graph: {text(page.graph_problem or "unknown")}</p>'
    )
    approval = ""
    if page.approval is not None:
        approval = "<h2>Waiting for approval</h2>" + approval_card(page.approval, token)
    return (
        f"<h1>{text(run.job)}/{text(run.workflow)} {status_badge(run.status.value)}</h1>"
        f"{_summary(detail)}{approval}<h2>Run</h2>{_facts(detail)}<h2>Workflow</h2>{graph}"
        f"{_instances(page.instances)}"
        f"<h2>Outputs and evidence</h2>{_outputs(detail.outputs)}"
        f"<h2>Reviews</h2>{_reviews(detail.reviews)}"
        + (f"<h2>Reviews in the background</h2>{background}" if background else "")
        + f"<h2>Review cost</h2>{_review_cost(detail)}"
        f"<h2>Timeline</h2>{_timeline(detail)}"
    )


def run_page(page: RunPage, *, token: str | None, background: str = "") -> str:
    run = page.detail.run
    title = f"{run.job}/{run.workflow} {run.session_id}"
    body = run_body(page, token=token, background=background)
    return layout(title, body, standalone=token is None)
