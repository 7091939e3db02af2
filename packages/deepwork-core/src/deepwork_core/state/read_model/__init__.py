"""The one read model of runs (docs/dashboard.md): `runs` (`SessionView`, `SessionDetail`, each
session of a run as the dashboard, `deepwork report` and `deepwork status` render it), and
`timeline`, each event of a run told as a sentence. Read only, through the public state APIs
and the store's queries.
"""
