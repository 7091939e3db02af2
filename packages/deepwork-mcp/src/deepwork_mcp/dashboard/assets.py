"""The dashboard's stylesheet and its one small script (docs/dashboard.md).

The dashboard serves them as files (`/static/…`) so that its Content-Security-Policy can forbid
every inline script; `deepwork report --html` inlines the stylesheet and has no script at all.
The script does three things: it takes the token out of the address bar once the cookie is set,
refreshes every element marked `data-refresh` (the list of runs, the background reviews) from
its fragment every second without a reload, and sorts a table on a header click.
It only ever inserts HTML the server rendered (and escaped).
"""

from __future__ import annotations

from typing import Final

STYLESHEET: Final = """
:root { color-scheme: light; --ink: #1d2330; --muted: #5d6675; --line: #d9dee7;
  --ok: #1d7a46; --bad: #b3261e; --wait: #9a6200; --accent: #2456c7; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif;
  color: var(--ink); background: #f6f7f9; }
header { background: #1d2330; color: #fff; padding: 10px 20px; display: flex; gap: 24px;
  align-items: baseline; }
header a { color: #cfe0ff; text-decoration: none; }
header strong { font-size: 16px; }
main { padding: 16px 20px; max-width: 1200px; }
h1 { font-size: 20px; margin: 4px 0 12px; overflow-wrap: anywhere; }
h1 .instance { font-weight: 400; color: var(--muted); }
p.goal { margin: -6px 0 12px; overflow-wrap: anywhere; }
h2 { font-size: 16px; margin: 22px 0 8px; }
table { border-collapse: collapse; width: 100%; background: #fff; border: 1px solid var(--line); }
th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--line);
  vertical-align: top; }
th { background: #eef1f5; font-weight: 600; }
table.sortable th { cursor: pointer; user-select: none; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.nested td:first-child { padding-left: 28px; }
code, pre, .hash { font-family: ui-monospace, "SFMono-Regular", Menlo, monospace; font-size: 12px; }
pre { background: #fff; border: 1px solid var(--line); padding: 8px; overflow: auto;
  max-height: 320px; white-space: pre-wrap; word-break: break-word; }
.status { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px;
  background: #e6ebf3; }
.status.active { background: #dfe9ff; color: var(--accent); }
.status.reviewing { background: #e8e2ff; color: var(--accent); }
.status.awaiting-approval { background: #fff0d1; color: var(--wait); font-weight: 600; }
.status.completed { background: #dcf3e5; color: var(--ok); }
.status.aborted { background: #f8dddb; color: var(--bad); }
.status.running { background: #fff0d1; color: var(--wait); }
.status.passed { background: #dcf3e5; color: var(--ok); }
.status.failed, .status.error, .status.stale { background: #f8dddb; color: var(--bad); }
.pass { color: var(--ok); font-weight: 600; }
.fail { color: var(--bad); font-weight: 600; }
.muted { color: var(--muted); }
.notice { padding: 10px 12px; border-radius: 6px; margin: 8px 0 14px; border: 1px solid; }
.notice.ok { background: #e7f6ec; border-color: #9fd5b1; }
.notice.refused { background: #fdecea; border-color: #f0aaa4; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 12px 14px;
  margin: 10px 0; }
.actions { display: flex; gap: 12px; align-items: center; flex-wrap: wrap; margin-top: 10px; }
.actions form { display: flex; gap: 8px; align-items: center; margin: 0; }
button { font: inherit; padding: 5px 14px; border-radius: 6px; border: 1px solid var(--line);
  cursor: pointer; }
button.approve { background: var(--ok); border-color: var(--ok); color: #fff; }
button.reject { background: #fff; border-color: var(--bad); color: var(--bad); }
button:disabled, input:disabled { opacity: .45; cursor: not-allowed; }
.file.changed pre.current { border-left: 3px solid var(--bad); }
input[type=text] { font: inherit; padding: 4px 8px; min-width: 280px; }
.graph { background: #fff; border: 1px solid var(--line); padding: 8px; overflow: auto; }
svg.workflow-graph .step rect { fill: #fff; stroke: #8a94a6; stroke-width: 1.5; }
svg.workflow-graph .step.reviewed rect { stroke-width: 3; }
svg.workflow-graph .step.done rect { fill: #dcf3e5; stroke: var(--ok); }
svg.workflow-graph .step.started rect { fill: #eef1f5; }
svg.workflow-graph .step.current rect { fill: #fff0d1; stroke: var(--wait); stroke-width: 3; }
svg.workflow-graph .step.fanned rect.stack { fill: #eef3ff; stroke-dasharray: 4 3; }
svg.workflow-graph text { text-anchor: middle; font: 13px system-ui, sans-serif; fill: var(--ink); }
svg.workflow-graph text.id { font: 11px ui-monospace, monospace; fill: var(--muted); }
svg.workflow-graph .edge { stroke: #8a94a6; stroke-width: 1.5; }
svg.workflow-graph .input-edge path { fill: none; stroke: #8a94a6; stroke-dasharray: 5 4; }
svg.workflow-graph .input-edge text { text-anchor: start; font-size: 11px; fill: var(--muted); }
svg.workflow-graph marker path { fill: #8a94a6; }
.scroll { overflow-x: auto; max-width: 100%; }
.scroll > table { min-width: 100%; }
h3 { font-size: 14px; margin: 14px 0 6px; }
section.summary { background: #fff; border: 1px solid var(--line); border-radius: 8px;
  padding: 4px 14px 12px; }
.verdict { font-weight: 600; }
.verdict.pass { color: var(--ok); }
.verdict.self, .verdict.unreviewed { color: var(--muted); }
.verdict.override { color: var(--wait); }
td.cost { white-space: nowrap; }
.timeline details summary { cursor: pointer; color: var(--muted); font-size: 12px; }
.legend { list-style: none; padding: 0; margin: 8px 0; display: flex; flex-wrap: wrap;
  gap: 6px 18px; font-size: 12px; color: var(--muted); }
.legend .swatch { display: inline-block; width: 14px; height: 10px; margin-right: 6px;
  border: 1.5px solid #8a94a6; border-radius: 3px; vertical-align: middle; background: #fff; }
.legend .swatch.current { background: #fff0d1; border-color: var(--wait); border-width: 3px; }
.legend .swatch.done { background: #dcf3e5; border-color: var(--ok); }
.legend .swatch.started { background: #eef1f5; }
.legend .swatch.reviewed { border-width: 3px; }
.legend .swatch.fanned { background: #eef3ff; border-style: dashed; }
.legend .dashed { display: inline-block; width: 22px; margin-right: 6px; vertical-align: middle;
  border-top: 1.5px dashed #8a94a6; }
@media (max-width: 600px) {
  main { padding: 12px 10px; }
  header { gap: 14px; padding: 10px 12px; flex-wrap: wrap; }
  input[type=text] { min-width: 0; width: 100%; }
}
"""

SCRIPT: Final = """
"use strict";
(function () {
  var url = new URL(window.location.href);
  if (url.searchParams.has("token")) {
    url.searchParams.delete("token");
    window.history.replaceState(null, "", url.pathname + url.search + url.hash);
  }
  document.querySelectorAll("[data-refresh]").forEach(function (box) {
    var source = box.getAttribute("data-refresh"), last = null, busy = false;
    window.setInterval(function () {
      if (busy) { return; }
      busy = true;
      fetch(source, { credentials: "same-origin", cache: "no-store" })
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (text) {
          if (text !== null && text !== last) { box.innerHTML = text; last = text; }
        })
        .catch(function () {})
        .then(function () { busy = false; });
    }, 1000);
  });
  function key(cell) {
    var raw = cell.getAttribute("data-sort");
    var text = raw === null ? cell.textContent : raw;
    var number = parseFloat(text);
    return isNaN(number) ? text.toLowerCase() : number;
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    table.querySelectorAll("th").forEach(function (th, column) {
      th.addEventListener("click", function () {
        var down = th.getAttribute("data-dir") !== "desc";
        th.setAttribute("data-dir", down ? "desc" : "asc");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = key(a.cells[column]), y = key(b.cells[column]);
          var order = x < y ? -1 : x > y ? 1 : 0;
          return down ? -order : order;
        });
        rows.forEach(function (row) { body.appendChild(row); });
      });
    });
  });
})();
"""
