"""`deepwork dashboard` and `deepwork report --html`: the runs of a project in a browser.

Server-rendered pages built with the standard library (`html.escape`), served by Starlette and
uvicorn on 127.0.0.1 behind a per-start token (docs/dashboard.md). Nothing here is imported by
the MCP server: the dashboard lives behind its own command and adds nothing to the server's
import time (tests/unit/test_architecture.py checks it).

- `views`: what the pages show, read from the state files (runs, one run, approvals, stats);
- `graph_svg`: the workflow graph drawn as SVG, with no renderer installed;
- `pages`: the HTML of each page; `assets`: the stylesheet and the small script;
- `guard`: the token, cookie, `Host` and `Origin` checks; `app`: the routes; `serving`: the
  socket and uvicorn.
"""
