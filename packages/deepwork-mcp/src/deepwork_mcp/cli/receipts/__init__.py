"""The `deepwork` commands of receipts (docs/verify.md): `verify` checks them, `receipt` writes
one again."""
