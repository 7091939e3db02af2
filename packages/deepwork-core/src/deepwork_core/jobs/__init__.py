"""Jobs: the one job model, the readers and writers of both `job.yml` formats, the checks, discovery
of a project's jobs, doc specs and scaffolding.

Imports only `deepwork_core.base`. See docs/architecture.md and docs/job-format.md.
"""
