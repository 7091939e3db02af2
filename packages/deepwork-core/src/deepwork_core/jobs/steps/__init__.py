"""What a step of a job file is made of: its parts (outputs, inputs, hooks, reviews, nested
workflows), its `approval:` with its policy, and its fan-out keys (docs/job-format.md)."""
