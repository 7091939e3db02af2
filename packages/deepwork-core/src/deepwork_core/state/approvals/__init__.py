"""Human approvals of a step: the request the server opens and the decision a human records.

Both live in the project's store (`state.store.tables.approval_rows`). The request is the
server's own record of what it asked (step, prompt, shown outputs with their SHA-256, channels),
sealed with a MAC under the project's approval key: a request whose seal does not verify is
never shown nor used (`approval.request_unverified`). The decision (approved or not, comment,
when, channel `cli` | `elicitation` | `dashboard`, who, the shown hashes then) covers the
request's seal and counts only while the files still have those hashes. Aborting the run
withdraws its open request.

Each decision is sealed with the project's key (`seal`) and, where signatures are
required (trusted approvers, or a shared store), signed by a human approver's Ed25519 key
(`signatures`); it commits in one transaction with its `approval` event. Any other
decision, such as a row written into the database by hand, is refused (`approval.unverified`).
The old files `.deepwork/tmp/approvals/<id>.json` are imported with their seals
(`deepwork_core.state.store.legacy`). What this protects: docs/security.md, docs/team.md.

By role: the request, the decision and their record (`models`); the step's policy and where a
request's decisions stand (`policy`); how a request ended (`ending`); the approvals of one
project in its store, verified on reading (`store`); recording a human's decision on the open
request (`decide`); the `approval` event that logs a decision (`event`); the project's key and
the MAC that seals requests and decisions (`seal`); approvers' Ed25519 keys and the ones a
project trusts (`signatures`).
"""
