"""The commands of runs no person attends (docs/headless.md): `deepwork wait`."""
