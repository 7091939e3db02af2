"""The quality gate's core side: the checkpoint handed to a gate, its possible answers, review tasks
and reviewers' replies, and the self-review instruction file.

Imports `base`, `jobs`, `evidence` and `state`. See docs/architecture.md and docs/quality-gate.md.
"""
