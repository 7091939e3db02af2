"""The evidence rules the engine applies at each transition (see `docs/evidence.md`): what the
audit of a checkpoint found (`findings`), the baselines, audits and bindings of evidence
(`evidence`, whose `Safeguards` the engine holds) and the human approvals it builds on
(`approvals`)."""
