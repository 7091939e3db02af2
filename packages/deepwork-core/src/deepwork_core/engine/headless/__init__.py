"""What a run no person attends needs (docs/headless.md): `parking` stops it where a person is
needed, `adoption` takes it over from another checkout of the project for `--resume`."""
