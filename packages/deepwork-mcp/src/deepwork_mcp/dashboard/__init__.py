"""`deepwork dashboard` and `deepwork report --html`: the runs of a project in a browser.

Server-rendered pages laid out by jinja2 templates (`templates/`, autoescaped), served by
Starlette and uvicorn on 127.0.0.1 behind a per-start token (docs/dashboard.md). Nothing here is
imported by the MCP server: the dashboard lives behind its own command and adds nothing to the
server's import time, and jinja2 stays out of `deepwork serve` (tests/unit/test_architecture.py
checks both).

- `views`: what the pages show, read from the state files (runs, one run, approvals, stats);
- `graph_svg`: the workflow graph placed for SVG, with no renderer installed;
- `rendering`: the one template environment; `pages`, `run_page`, `reviews`: what each page
  hands its template; `assets`: the stylesheet and the small script;
- `guard`: the token, cookie, `Host` and `Origin` checks; `app`: the routes; `serving`: the
  socket and uvicorn.
"""
