"""Draw the trace of a real run for docs/telemetry.md (docs/telemetry-trace.svg).

    uv run python tools/trace_picture.py [--out docs/telemetry-trace.svg]

Runs the end-to-end telemetry test's run (tests/integration/test_telemetry_otlp.py): `deepwork
serve` over stdio with a host `traceparent` in every request, the fake `claude` reviewer (failing
once, then passing), a nested workflow and an approval given with `deepwork approve`, exporting
over OTLP/HTTP to the test's loopback receiver. The spans the receiver decoded are drawn as a
waterfall: one row per span in tree order, its bar from its start to its end, outlined in red
where the span ended with an error status (the failing review and the checkpoint it refused).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from html import escape
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fixtures.otlp_receiver import ReceivedSpan, otlp_receiver  # noqa: E402
from tests.fixtures.reviewer import ScriptedReviewer  # noqa: E402
from tests.fixtures.traced_project import make_traced_project  # noqa: E402
from tests.integration.test_telemetry_otlp import HOST_TRACE, run_over_stdio  # noqa: E402

ROW, LABEL, BAR, PAD = 22, 330, 560, 12
COLOURS = {
    "tools/call": "#9aa5b1",
    "invoke_workflow": "#3b6fb6",
    "deepwork.step": "#56a36c",
    "deepwork.checkpoint": "#8cc79b",
    "invoke_agent": "#d9822b",
    "deepwork.approval": "#a05195",
}


def record(folder: Path) -> list[ReceivedSpan]:
    reviewer = ScriptedReviewer(folder / "reviewer")
    reviewer.spend(0.0412)
    root = make_traced_project(folder / "project")
    with otlp_receiver() as (receiver, endpoint):
        asyncio.run(run_over_stdio(root, reviewer, endpoint))
    return [span for span in receiver.spans() if span.context.trace_id == HOST_TRACE]


def ordered(spans: list[ReceivedSpan]) -> list[tuple[int, ReceivedSpan]]:
    """(depth, span) in tree order, children by start time."""
    ids = {span.context.span_id for span in spans}
    children: dict[int | None, list[ReceivedSpan]] = {}
    for span in spans:
        parent = span.parent.span_id if span.parent is not None else None
        children.setdefault(parent if parent in ids else None, []).append(span)
    rows: list[tuple[int, ReceivedSpan]] = []

    def walk(parent: int | None, depth: int) -> None:
        for span in sorted(children.get(parent, []), key=lambda s: (s.start_time, s.name)):
            rows.append((depth, span))
            walk(span.context.span_id, depth + 1)

    walk(None, 0)
    return rows


def colour(name: str) -> str:
    return next((c for prefix, c in COLOURS.items() if name.startswith(prefix)), "#777777")


def svg(spans: list[ReceivedSpan]) -> str:
    rows = ordered(spans)
    begin = min(span.start_time for span in spans)
    end = max(span.end_time for span in spans)
    scale = BAR / max(end - begin, 1)
    width, height = LABEL + BAR + 2 * PAD + 70, PAD * 2 + ROW * (len(rows) + 1)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="Helvetica, Arial, sans-serif" '
        'font-size="12">',
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
        f'<text x="{PAD}" y="{PAD + 12}" font-weight="bold">trace {HOST_TRACE:032x} '
        f"(the host's), {(end - begin) / 1e9:.2f} s</text>",
    ]
    for index, (depth, span) in enumerate(rows, start=1):
        y = PAD + ROW * index
        x = LABEL + PAD + (span.start_time - begin) * scale
        w = max((span.end_time - span.start_time) * scale, 1.5)
        ms = (span.end_time - span.start_time) / 1e6
        label = escape(span.name)
        outline = ' stroke="#c0392b" stroke-width="2"' if span.status_error else ""
        note = f"{ms:,.0f} ms" + (" · error" if span.status_error else "")
        parts += [
            f'<text x="{PAD + 14 * depth}" y="{y + 14}">{label}</text>',
            f'<rect x="{x:.1f}" y="{y + 3}" width="{w:.1f}" height="{ROW - 8}" rx="2" '
            f'fill="{colour(span.name)}"{outline}/>',
            f'<text x="{x + w + 4:.1f}" y="{y + 14}" fill="#444444">{note}</text>',
        ]
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "telemetry-trace.svg")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        spans = record(Path(folder))
    args.out.write_text(svg(spans), encoding="utf-8")
    print(f"{len(spans)} spans -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
