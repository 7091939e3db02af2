"""`deepwork jobs`: list, validate, scaffold, draw and convert a project's jobs; one module per
sub-command, the group and its `list` and `validate` in `group`."""

from __future__ import annotations

from deepwork_mcp.cli.jobs.group import jobs

__all__ = ["jobs"]
