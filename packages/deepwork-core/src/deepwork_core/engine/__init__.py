"""The workflow engine: start, finish, navigation, nesting, the briefing the agent gets at each
step,
output checks and the evidence safeguards at each transition.

The top layer of `deepwork_core`: it may import every other subpackage. See docs/architecture.md.
"""
