"""State: what lives under `.deepwork/tmp` — sessions and agent stacks, the event log, approvals —
and what is read back from it (overview, stats).

Imports `base` and `evidence`. See docs/architecture.md and docs/runtime-layout.md.
"""
