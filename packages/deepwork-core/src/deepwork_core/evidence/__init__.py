"""Evidence: the hashes that bind a verdict to the bytes it judged, the reviewers' verdicts, the
scope guard's view of the working tree, and the audit that re-checks them at a checkpoint.

Imports only `deepwork_core.base`. See docs/architecture.md and docs/evidence.md.
"""
