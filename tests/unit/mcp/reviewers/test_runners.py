"""The codex and gemini runners read their CLI's real output (docs/quality-gate.md).

The event lines below were printed by codex-cli 0.169.0 and Gemini CLI 0.61.0, run against a
local stand-in for their model endpoints (so they ran offline); only ids and timestamps are cut.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.process import Completed
from deepwork_core.gate.quality import QualityReviewTask
from deepwork_mcp.reviewers import runner_for
from deepwork_mcp.reviewers.claude import ClaudeRunner
from deepwork_mcp.reviewers.codex import CodexRunner
from deepwork_mcp.reviewers.gemini import GeminiRunner
from deepwork_mcp.reviewers.stream import CallPlan

VERDICT = {"passed": True, "feedback": "ok", "criteria_results": []}

CODEX_OK = [
    {"type": "thread.started", "thread_id": "t"},
    {"type": "item.completed", "item": {"id": "item_0", "type": "error", "message": "Model "
     "metadata for `gpt-5` not found. Defaulting to fallback metadata"}},
    {"type": "turn.started"},
    {"type": "item.completed", "item": {"id": "item_1", "type": "agent_message",
     "text": json.dumps(VERDICT)}},
    {"type": "turn.completed", "usage": {"input_tokens": 1234, "cached_input_tokens": 200,
     "cache_write_input_tokens": 0, "output_tokens": 56, "reasoning_output_tokens": 10}},
]  # fmt: skip
CODEX_FAILED = [
    *CODEX_OK[:4],
    {"type": "error", "message": "stream disconnected before completion: internal error."},
    {"type": "turn.failed", "error": {"message": "stream disconnected before completion: "
     "The model had an internal error."}},
]  # fmt: skip
GEMINI_OK = [
    {"type": "init", "session_id": "s", "model": "auto"},
    {"type": "message", "role": "user", "content": "review this\n"},
    {"type": "message", "role": "assistant", "content": "```json\n" + json.dumps(VERDICT)[:20],
     "delta": True},
    {"type": "message", "role": "assistant", "content": json.dumps(VERDICT)[20:] + "\n```",
     "delta": True},
    {"type": "result", "status": "success", "stats": {"total_tokens": 990, "input_tokens": 900,
     "output_tokens": 40, "cached": 100, "input": 800, "duration_ms": 519, "tool_calls": 0,
     "models": {"gemini-2.5-pro": {"total_tokens": 990, "input_tokens": 900,
     "output_tokens": 40, "cached": 100, "input": 800}}}},
]  # fmt: skip
GEMINI_API_ERROR = [
    GEMINI_OK[0],
    GEMINI_OK[1],
    {"type": "result", "status": "error", "error": {"type": "unknown", "message": "[API Error: "
     "API key not valid. Please pass a valid API key.]"}, "stats": {"total_tokens": 0,
     "input_tokens": 0, "output_tokens": 0, "cached": 0, "input": 0, "duration_ms": 0,
     "tool_calls": 0, "models": {}}},
]  # fmt: skip


def done(events: list[dict[str, object]], returncode: int = 0, program: str = "x") -> Completed:
    text = "".join(json.dumps(event) + "\n" for event in events)
    return Completed((program,), returncode, text, "")


def plan(tmp_path: Path, persona: str | None = None, model: str | None = None) -> CallPlan:
    task = QualityReviewTask(step_id="s", run_each="step", criteria={"Clear": "Is it clear?"})
    return CallPlan("/bin/reviewer", task, model, None, persona, tmp_path, tmp_path)


def test_codex_reads_the_last_agent_message_and_the_turn_usage() -> None:
    outcome = CodexRunner().read("t", done(CODEX_OK), "gpt-5")
    assert outcome.error is None
    assert outcome.reply == VERDICT
    usage = outcome.usage
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (1034, 200, 56)
    assert usage.cost_usd is None  # codex reports no cost: not 0
    assert usage.model == "gpt-5"


@pytest.mark.parametrize(
    ("events", "returncode", "code"),
    [
        (CODEX_FAILED, 1, ErrorCode.QUALITY_GATE_EXECUTION_ERROR),
        (CODEX_OK[:4], 0, ErrorCode.QUALITY_GATE_TRUNCATED),
        (CODEX_OK[:4], 1, ErrorCode.QUALITY_GATE_EXIT_CODE),
        ([*CODEX_OK[:3], CODEX_OK[4]], 0, ErrorCode.QUALITY_GATE_BAD_OUTPUT),
    ],
)
def test_codex_failures_have_their_codes(
    events: list[dict[str, object]], returncode: int, code: ErrorCode
) -> None:
    outcome = CodexRunner().read("t", done(events, returncode), None)
    assert outcome.error is not None
    assert outcome.error.code == code


def test_codex_asks_for_a_strict_schema_in_a_read_only_ephemeral_run(tmp_path: Path) -> None:
    argv = CodexRunner().argv(plan(tmp_path, persona="a strict auditor", model="o3"))
    assert argv[:3] == ["/bin/reviewer", "exec", "--json"]
    for flag in ("--ephemeral", "--ignore-user-config", "--skip-git-repo-check"):
        assert flag in argv
    assert argv[argv.index("--sandbox") + 1] == "read-only"
    assert argv[argv.index("--model") + 1] == "o3"
    assert argv[-1] == "-"
    schema = json.loads(Path(argv[argv.index("--output-schema") + 1]).read_text())
    item = schema["properties"]["criteria_results"]["items"]
    assert set(item["required"]) == set(item["properties"])  # strict: every key required
    setting = argv[argv.index("-c") + 1]
    instructions = tomllib.loads(setting)["developer_instructions"]
    assert instructions.endswith("Review in this persona: a strict auditor")


def test_codex_quotes_a_persona_that_would_read_as_toml(tmp_path: Path) -> None:
    argv = CodexRunner().argv(plan(tmp_path, persona='true"\nmodel = "x'))
    setting = tomllib.loads(argv[argv.index("-c") + 1])
    assert list(setting) == ["developer_instructions"]


def test_gemini_joins_the_chunks_reads_the_fenced_json_and_the_stats() -> None:
    outcome = GeminiRunner().read("t", done(GEMINI_OK), None)
    assert outcome.error is None
    assert outcome.reply == VERDICT
    usage = outcome.usage
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (800, 100, 40)
    assert usage.cost_usd is None
    assert usage.model == "gemini-2.5-pro"  # the model that answered, not `auto`


@pytest.mark.parametrize(
    ("events", "returncode", "code"),
    [
        (GEMINI_API_ERROR, 144, ErrorCode.QUALITY_GATE_EXECUTION_ERROR),
        (GEMINI_OK[:4], 0, ErrorCode.QUALITY_GATE_TRUNCATED),
        (GEMINI_OK[:2], 41, ErrorCode.QUALITY_GATE_EXIT_CODE),
        ([*GEMINI_OK[:2], GEMINI_OK[4]], 0, ErrorCode.QUALITY_GATE_BAD_OUTPUT),
    ],
)
def test_gemini_failures_have_their_codes(
    events: list[dict[str, object]], returncode: int, code: ErrorCode
) -> None:
    outcome = GeminiRunner().read("t", done(events, returncode), None)
    assert outcome.error is not None
    assert outcome.error.code == code


@pytest.mark.parametrize(
    ("kind", "code"),
    [
        ("FatalTurnLimitedError", ErrorCode.QUALITY_GATE_MAX_TURNS),
        ("FatalAuthenticationError", ErrorCode.QUALITY_GATE_IS_ERROR),
        ("FatalToolExecutionError", ErrorCode.QUALITY_GATE_EXECUTION_ERROR),
    ],
)
def test_gemini_error_types_have_their_codes(kind: str, code: ErrorCode) -> None:
    result = {"type": "result", "status": "error", "error": {"type": kind, "message": "m"}}
    outcome = GeminiRunner().read("t", done([GEMINI_OK[0], result], 1), None)
    assert outcome.error is not None
    assert outcome.error.code == code


def test_gemini_prompt_carries_the_role_the_persona_and_the_schema(tmp_path: Path) -> None:
    argv = GeminiRunner().argv(plan(tmp_path, persona="a terse copy editor"))
    assert argv[argv.index("--output-format") + 1] == "stream-json"
    assert argv[argv.index("--approval-mode") + 1] == "default"
    prompt = argv[argv.index("--prompt") + 1]
    assert "Review in this persona: a terse copy editor" in prompt
    assert '"criteria_results"' in prompt


def test_claude_gets_a_defined_agent_as_agent_and_any_other_persona_in_its_prompt(
    tmp_path: Path,
) -> None:
    # The real CLI exits 1 on an `--agent` it does not know, so only a defined one is passed.
    loose = ClaudeRunner().argv(plan(tmp_path, persona="a careful editor"))
    assert "--agent" not in loose
    prompt = loose[loose.index("--system-prompt") + 1]
    assert prompt.endswith("Review in this persona: a careful editor")
    agents = tmp_path / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "release-reviewer.md").write_text("---\nname: release-reviewer\n---\nBe strict.\n")
    defined = ClaudeRunner().argv(plan(tmp_path, persona="release-reviewer"))
    assert defined[defined.index("--agent") + 1] == "release-reviewer"
    assert "persona" not in defined[defined.index("--system-prompt") + 1]
    built_in = ClaudeRunner().argv(plan(tmp_path, persona="general-purpose"))
    assert "--agent" in built_in


def test_an_unknown_runner_is_refused() -> None:
    assert runner_for("codex").name == "codex"
    with pytest.raises(ValueError, match="unknown reviewer runner"):
        runner_for("gpt")


DEEP_LINE = '{"type": "noise", "x": ' + "[" * 5000 + "]" * 5000 + "}\n"


@pytest.mark.parametrize(
    ("runner", "events", "tokens"),
    [(CodexRunner(), CODEX_OK, 1290), (GeminiRunner(), GEMINI_OK, 940)],
)
def test_a_line_too_deep_is_bad_output_but_the_call_still_counts_its_usage(
    runner: CodexRunner | GeminiRunner, events: list[dict[str, object]], tokens: int
) -> None:
    output = done(events)
    deep = Completed(output.argv, 0, DEEP_LINE + output.stdout, "")
    outcome = runner.read("t", deep, None)
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.QUALITY_GATE_BAD_OUTPUT
    assert outcome.usage.tokens == tokens


@pytest.mark.parametrize(
    ("runner", "events"),
    [
        (
            CodexRunner(),
            [*CODEX_OK[:4], {"type": "turn.completed", "usage": {"output_tokens": 1.5}}],
        ),
        (GeminiRunner(), [*GEMINI_OK[:4], {"type": "result", "status": "success",
                                            "stats": {"input": -3}}]),
        (ClaudeRunner(), [{"type": "result", "subtype": "success", "structured_output": VERDICT,
                           "usage": {"input_tokens": "many"}}]),
    ],
)  # fmt: skip
def test_a_count_that_is_not_a_whole_number_fails_the_call_and_counts_nothing(
    runner: CodexRunner | GeminiRunner | ClaudeRunner, events: list[dict[str, object]]
) -> None:
    outcome = runner.read("t", done(events), None)
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.QUALITY_GATE_BAD_OUTPUT
    assert "whole number" in outcome.error.message
    assert outcome.usage.tokens == 0


@pytest.mark.parametrize("cost", [float("inf"), float("nan"), -0.5, "0.1", True])
def test_claude_refuses_a_cost_that_is_not_a_finite_number(cost: object) -> None:
    result = {"type": "result", "subtype": "success", "structured_output": VERDICT,
              "usage": {"input_tokens": 10}, "total_cost_usd": cost}  # fmt: skip
    outcome = ClaudeRunner().read("t", done([result]), None)
    assert outcome.error is not None
    assert outcome.error.code == ErrorCode.QUALITY_GATE_BAD_OUTPUT
    assert "total_cost_usd" in outcome.error.message
    assert outcome.usage.cost_usd is None
