"""Fan-out: a step run once per item, each instance gated on its own (docs/fan-out.md)."""
