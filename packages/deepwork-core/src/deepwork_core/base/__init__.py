"""The foundation every other layer stands on: errors and their codes, files, processes, git, YAML,
identifiers, the runtime layout and the configuration.

It imports nothing from the rest of `deepwork_core`. This `__init__` imports nothing at all, so the
hooks' light path can read `deepwork_core.base.layout` without loading pydantic or PyYAML.
See docs/architecture.md.
"""
