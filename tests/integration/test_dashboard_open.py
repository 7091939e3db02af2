"""Issue 34, item 8: `deepwork dashboard` opens the browser on a 0600 redirect file, so the
token never appears on the browser's command line (docs/dashboard.md)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.evidence_project import make_evidence_project

#: A "browser" that prints, on the stdout it shares with the dashboard, what it was started with
#: (`-S`: it needs only the standard library, so no site-packages and no coverage start).
BROWSER = """#!{python} -S
import json, os, stat, sys
from urllib.parse import urlparse
arg = sys.argv[1]
path = urlparse(arg).path
print(json.dumps({{"argv": sys.argv[1:], "mode": stat.S_IMODE(os.stat(path).st_mode),
                  "page": open(path, encoding="utf-8").read()}}), flush=True)
"""


@pytest.mark.slow
def test_the_browser_gets_a_private_redirect_file_not_the_token(tmp_path: Path) -> None:
    root = make_evidence_project(tmp_path / "project", with_git=False)
    browser = tmp_path / "browser"
    browser.write_text(BROWSER.format(python=sys.executable))
    browser.chmod(0o755)
    process = subprocess.Popen(
        [sys.executable, "-m", "deepwork_mcp", "dashboard", "--path", str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "BROWSER": str(browser)},
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        opened = json.loads(process.stdout.readline())
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=30)
    token = url.split("token=", 1)[1]
    assert token
    [argument] = opened["argv"]
    assert argument.startswith("file://")
    assert token not in argument
    assert opened["mode"] == 0o600
    assert url.replace("&", "&amp;") in opened["page"]
