"""What `deepwork calibrate` found, as the store keeps it and the stats show it
(docs/quality-gate.md, "Calibration")."""
