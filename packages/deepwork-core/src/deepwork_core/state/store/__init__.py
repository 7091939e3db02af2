"""The store: where run state lives (docs/runtime-layout.md).

One port, `Store` (`port`), with two adapters that share one schema (`schema`) and one set of
SQL statements: SQLite (`sqlite`, the default, the file `.deepwork/tmp/deepwork.sqlite3`) and
PostgreSQL (`postgres`, chosen by a `postgresql://` URL; psycopg is imported only then).
`open_store` (`opening`) turns a URL into an open, migrated store. `review_jobs` is the queue the
gate's background reviews claim from.
"""
