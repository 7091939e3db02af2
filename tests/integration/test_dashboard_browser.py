"""`deepwork dashboard` end to end: the real CLI serving the page, the real MCP server running the
workflow, and the page driven in headless Chromium by Playwright (docs/dashboard.md).

Playwright drives the system's Chromium (Debian: `apt-get install chromium`, found at
/usr/bin/chromium or on PATH); it never downloads a browser. Without one the tests skip and say
so. A screenshot of each page is saved under the test's temporary folder.
"""

from __future__ import annotations

import asyncio
import http.client
import os
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.fixtures.dashboard_process import dashboard_process
from tests.fixtures.evidence_project import make_evidence_project
from tests.fixtures.reviewer import ScriptedReviewer
from tests.fixtures.stdio_server import Server, serve
from tests.fixtures.workflow_project import make_project, write_files


def _chromium() -> str | None:
    for candidate in (os.environ.get("DEEPWORK_CHROMIUM"), "/usr/bin/chromium"):
        if candidate and Path(candidate).is_file():
            return candidate
    return shutil.which("chromium") or shutil.which("chromium-browser")


CHROMIUM = _chromium()
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        CHROMIUM is None,
        reason="browser tests need Chromium (Debian: apt-get install chromium; or set "
        "DEEPWORK_CHROMIUM to its path)",
    ),
]
playwright_api = pytest.importorskip("playwright.async_api")

SCRIPT_GOAL = "<script>window.pwned = 1</script> ship it"
WAIT_MS = 15_000


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_evidence_project(tmp_path / "project")


@asynccontextmanager
async def dashboard(root: Path) -> AsyncIterator[str]:
    """The dashboard as a process; yields the one line it printed, checked to be its address."""
    async with dashboard_process(root) as line:
        assert line.startswith("http://127.0.0.1:"), line
        assert "/?token=" in line
        yield line


@asynccontextmanager
async def browser_page(url: str) -> AsyncIterator[Any]:
    async with playwright_api.async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM)
        try:
            page = await browser.new_page(viewport={"width": 1200, "height": 800})
            response = await page.goto(url)
            assert response is not None
            assert response.status == 200
            yield page
        finally:
            await browser.close()


async def shot(page: Any, tmp_path: Path, name: str) -> None:
    await page.screenshot(path=str(tmp_path / "screenshots" / f"{name}.png"), full_page=True)


async def test_a_run_started_through_the_mcp_server_shows_up_without_a_reload(
    root: Path, tmp_path: Path
) -> None:
    async with dashboard(root) as url, browser_page(url) as page:
        assert "token=" not in page.url  # taken out of the address bar once the cookie is set
        await page.get_by_text("No workflow has run in this project yet.").wait_for()
        async with serve(root) as agent:
            started = await agent.ok(
                "start_workflow", goal=SCRIPT_GOAL, job_name="approved", workflow_name="main"
            )
            session_id = started["begin_step"]["session_id"]
            row = page.locator(f'#runs tr[data-session="{session_id}"]')
            await row.wait_for(timeout=WAIT_MS)
            # The goal holding <script> shows as text and never ran.
            assert await row.locator("td.goal").inner_text() == SCRIPT_GOAL
            assert await page.evaluate("typeof window.pwned") == "undefined"
            await shot(page, tmp_path, "runs")
            await row.locator("a").click()
            await page.locator("svg.workflow-graph .step.current").wait_for()
            goal = page.locator("p.goal")  # under the heading: the goal, then the session id
            assert (await goal.inner_text()).startswith(f"{SCRIPT_GOAL} · run ")
            assert await page.evaluate("typeof window.pwned") == "undefined"
            await shot(page, tmp_path, "run")
            await page.goto(url.split("?")[0] + "stats")
            await shot(page, tmp_path, "stats")


async def test_an_approval_clicked_in_the_page_lets_the_next_finished_step_advance(
    root: Path, tmp_path: Path
) -> None:
    async with dashboard(root) as url, serve(root) as agent:
        await agent.ok("start_workflow", goal="g", job_name="approved", workflow_name="main")
        (root / "plan.md").write_text("the plan\n")
        waiting = await agent.ok("finished_step", outputs={"plan": "plan.md"})
        assert waiting["status"] == "awaiting_approval"
        async with browser_page(url) as page:
            await page.goto(url.split("?")[0] + "approvals")
            await page.get_by_text("the plan").first.wait_for()
            await shot(page, tmp_path, "approvals")
            await page.get_by_role("button", name="Approve").click()
            notice = page.locator(".notice.ok")
            await notice.wait_for(timeout=WAIT_MS)
            assert "Approved for step plan" in await notice.inner_text()
            await shot(page, tmp_path, "approved")
        moved = await agent.ok("finished_step", outputs={"plan": "plan.md"})
        assert moved["status"] == "next_step"
        (root / "result.md").write_text("the result\n")
        complete = await agent.ok("finished_step", outputs={"result": "result.md"})
        [approval] = complete["evidence"]["approvals"]
        assert (approval["approved"], approval["channel"]) == (True, "dashboard")


async def test_an_edit_after_the_page_loaded_makes_the_click_refuse(
    root: Path, tmp_path: Path
) -> None:
    async with dashboard(root) as url, serve(root) as agent:
        await agent.ok("start_workflow", goal="g", job_name="approved", workflow_name="main")
        (root / "plan.md").write_text("the plan\n")
        await agent.ok("finished_step", outputs={"plan": "plan.md"})
        async with browser_page(url) as page:
            await page.goto(url.split("?")[0] + "approvals")
            await page.get_by_role("button", name="Approve").wait_for()
            (root / "plan.md").write_text("the plan, edited after the page showed it\n")
            await page.get_by_role("button", name="Approve").click()
            notice = page.locator('.notice.refused[role="status"]')
            await notice.wait_for(timeout=WAIT_MS)
            assert "approval.outputs_changed" in await notice.inner_text()
            assert await page.get_by_role("button", name="Approve").is_disabled()
            assert await page.get_by_role("button", name="Reject").is_disabled()
            current = await page.locator(".file.changed pre.current").inner_text()
            assert current == "the plan, edited after the page showed it\n"
            assert "finished_step again" in await page.locator(".notice.stale").inner_text()
            await shot(page, tmp_path, "refused")
        still = await agent.ok("finished_step", outputs={"plan": "plan.md"})
        assert still["status"] != "next_step"


async def test_no_token_is_401_and_a_foreign_host_is_403(root: Path) -> None:
    async with dashboard(root) as url:
        address = urlsplit(url)
        async with playwright_api.async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=CHROMIUM)
            try:
                page = await browser.new_page()
                response = await page.goto(f"http://{address.netloc}/")
                assert response is not None
                assert response.status == 401
            finally:
                await browser.close()

        def get(host: str) -> int:
            connection = http.client.HTTPConnection(address.hostname or "", address.port)
            try:
                connection.request("GET", f"/?{address.query}", headers={"Host": host})
                return connection.getresponse().status
            finally:
                connection.close()

        assert await asyncio.to_thread(get, "attacker.example") == 403
        assert await asyncio.to_thread(get, f"attacker.example:{address.port}") == 403
        assert await asyncio.to_thread(get, address.netloc) == 200


async def test_a_finished_run_reads_as_a_story_even_on_a_narrow_screen(
    root: Path, tmp_path: Path
) -> None:
    async with dashboard(root) as url, serve(root) as agent:
        started = await agent.ok(
            "start_workflow", goal="ship it", job_name="approved", workflow_name="main"
        )
        session_id = started["begin_step"]["session_id"]
        (root / "plan.md").write_text("the plan\n")
        await agent.ok("finished_step", outputs={"plan": "plan.md"})
        async with browser_page(url) as page:
            await page.goto(url.split("?")[0] + "approvals")
            await page.get_by_role("button", name="Approve").click()
            await page.locator(".notice.ok").wait_for(timeout=WAIT_MS)
        await agent.ok("finished_step", outputs={"plan": "plan.md"})
        (root / "result.md").write_text("the result\n")
        await agent.ok("finished_step", outputs={"result": "result.md"})
        async with browser_page(url) as page:
            await page.set_viewport_size({"width": 420, "height": 900})
            await page.goto(url.split("?")[0] + f"run/{session_id}")
            headings = await page.locator("main h2").all_inner_texts()
            assert headings[0] == "Summary"
            summary = await page.locator("section.summary").inner_text()
            assert "completed" in summary
            assert "unreviewed (no review applied)" in summary
            assert "approved" in summary
            assert "dashboard" in summary
            assert "every step of the workflow done" in summary
            assert "completed completed" not in summary
            sentence = page.locator(".timeline .sentence", has_text="plan submitted plan.md")
            assert await sentence.count() >= 1
            assert await sentence.first.locator("code").all_inner_texts() == ["plan", "plan.md"]
            details = page.locator(".timeline details").first
            await details.locator("summary").click()
            assert '"goal": "ship it"' in await details.locator("pre").inner_text()
            legend = await page.locator("ul.legend").inner_text()
            assert "current step" in legend
            assert "passed an external review" in legend
            width = await page.evaluate("document.documentElement.scrollWidth")
            assert width <= 420  # the tables scroll inside their boxes, not the page
            await shot(page, tmp_path, "story-420")
            await page.goto(url.split("?")[0])
            assert "Review cost" in await page.locator("table.runs thead").inner_text()
            await page.goto(url.split("?")[0] + "stats")
            assert await page.get_by_role("heading", name="Review costs").count() == 1
            assert await page.evaluate("document.documentElement.scrollWidth") <= 420


async def _finish_until_decided(agent: Server, outputs: dict[str, Any]) -> dict[str, Any]:
    """`finished_step` again while it answers `reviewing` (each call waits wait_seconds)."""
    for _ in range(30):
        answer: dict[str, Any] = await agent.ok("finished_step", outputs=outputs)
        if answer["status"] != "reviewing":
            return answer
    raise AssertionError("the reviews never finished")


async def test_background_reviews_show_running_queued_and_finished_without_a_reload(
    tmp_path: Path, scripted_reviewer: ScriptedReviewer
) -> None:
    """Ten reviews with two reviewer processes at a time: the Reviews page and the run page
    follow them from running and queued to passed while the agent waits."""
    root = make_project(tmp_path / "reviewed")
    (root / ".deepwork" / "config.yml").write_text(
        "quality_gate:\n  external_runner: claude\n  wait_seconds: 1\n  max_parallel: 2\n"
        "  deepreview_rules: false\n"
    )
    appendices = [f"a{n}.md" for n in range(1, 10)]
    polish = {"final": "final.md", "appendix": appendices}
    async with dashboard(root) as url, browser_page(url) as page:
        base = url.split("?")[0]
        await page.goto(base + "reviews")
        await page.get_by_text("No review has run in the background yet.").wait_for()
        async with serve(root, env=scripted_reviewer.env) as agent:
            started = await agent.ok(
                "start_workflow", goal="g", job_name="reviewed", workflow_name="main"
            )
            session_id = started["begin_step"]["session_id"]
            write_files(root, "report.md", "final.md", *appendices)
            done = await _finish_until_decided(agent, {"report": "report.md"})
            assert done["status"] == "next_step", done
            scripted_reviewer.answer("gated")
            answer = await agent.ok("finished_step", outputs=polish)
            assert answer["status"] == "reviewing"
            table = page.locator("table.reviews")
            await page.locator("tr[data-state=running]").nth(1).wait_for(timeout=WAIT_MS)
            assert await page.locator("tr[data-state=queued]").count() == 8
            assert await page.locator("tr[data-state=running]").count() == 2
            assert "2 running, 8 queued, 1 finished" in await page.inner_text(".review-counts")
            await shot(page, tmp_path, "reviews-running")
            await page.goto(f"{base}run/{session_id}")
            live = page.locator(".live-reviews tr[data-state=running]")
            await live.nth(1).wait_for(timeout=WAIT_MS)
            scripted_reviewer.release()
            finished = await _finish_until_decided(agent, polish)
            assert finished["status"] == "workflow_complete", finished
            passed = page.locator(".live-reviews tr[data-state=passed]")
            await passed.nth(10).wait_for(timeout=WAIT_MS)  # the run page, without a reload
            await shot(page, tmp_path, "run-reviews-passed")
            await page.goto(base + "reviews")
            assert "0 running, 0 queued, 11 finished" in await page.inner_text(".review-counts")
            assert await table.locator("tr[data-state=passed]").count() == 11
            assert "reviewed/main" in await table.locator("tbody tr").first.inner_text()
            await page.set_viewport_size({"width": 420, "height": 900})
            for path in ("reviews", f"run/{session_id}"):
                await page.goto(base + path)
                await page.locator("table.reviews").wait_for(timeout=WAIT_MS)
                width = await page.evaluate("document.documentElement.scrollWidth")
                assert width <= 420, path  # the reviews table scrolls inside its box
            await shot(page, tmp_path, "run-reviews-420")


async def test_a_second_checkouts_dashboard_opens_the_others_run_shows_its_bytes_and_approves(
    tmp_path: Path, pg_url: str
) -> None:
    """Two checkouts on one real PostgreSQL: A serves a run waiting for approval; in B's
    dashboard (Chromium) All projects links to A's run, its page shows the bytes the store kept
    (never B's own file of that name), and Approve there lets A's run go on."""
    from tests.integration.test_team_mode import PLAN, checkouts, environment

    a, b, alice_state = checkouts(tmp_path, pg_url)
    async with serve(a, env=environment(tmp_path / "state-a", pg_url), branch=True) as agent:
        started = await agent.ok(
            "start_workflow", goal="g", job_name="approved", workflow_name="main"
        )
        session_id = started["begin_step"]["session_id"]
        (a / "plan.md").write_text("the plan as A asked\n")
        waiting = await agent.ok("finished_step", outputs=PLAN)
        assert waiting["status"] == "awaiting_approval"
        (b / "plan.md").write_text("B's own plan, never shown\n")
        async with (
            dashboard_process(b, environment(alice_state, None)) as url,
            browser_page(url) as page,
        ):
            await page.goto(url.split("?")[0] + "all")
            await page.locator(f'tr[data-session="{session_id}"] a').click()
            card = page.locator(".card.approval")
            await card.get_by_text("the plan as A asked").wait_for(timeout=WAIT_MS)
            assert "B's own plan" not in await page.content()
            await shot(page, tmp_path, "other-run")
            await card.get_by_role("button", name="Approve").click()
            notice = page.locator(".notice.ok")
            await notice.wait_for(timeout=WAIT_MS)
            assert "Approved for step plan" in await notice.inner_text()
        moved = await agent.ok("finished_step", outputs=PLAN)
        assert moved["status"] == "next_step", moved
