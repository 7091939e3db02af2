"""`deepwork calibrate`: reviewers measured against cases whose right verdicts are known
(docs/quality-gate.md, "Calibration")."""
