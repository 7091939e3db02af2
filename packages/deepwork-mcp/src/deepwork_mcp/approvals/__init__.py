"""Human approvals on the MCP side (docs/evidence.md): asking through MCP elicitation
(`elicitation`), where each project's approval key and trusted approvers' keys live (`keys`), and
how this `deepwork` was started (`launch`), so that an approval answer names a command the user
can run. The approvals themselves, sealed and signed, are `deepwork_core.state.approvals`.
"""
