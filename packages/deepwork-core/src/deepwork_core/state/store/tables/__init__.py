"""The SQL of each family of the store's tables, written once for SQLite and PostgreSQL: the
sessions and their lists, approval requests with their decisions and kept bytes, the review queue,
verdicts kept for reuse and reviewer spend (docs/architecture.md)."""
