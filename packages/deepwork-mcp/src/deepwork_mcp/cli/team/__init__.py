"""The `deepwork` commands of the people who decide (docs/team.md): `approve` decides a step
waiting for a human, `approver` sets up the key that signs the decisions, `audit` exports a
run's chain of requests and decisions and checks it offline."""
