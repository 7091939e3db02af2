"""The path of one `finished_step` (docs/architecture.md, "The path of a checkpoint"): the
pipeline a real call runs (`finish`) and what a dry run of it plans without recording
(`dry_run`)."""
