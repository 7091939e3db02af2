"""The one read model of runs (docs/dashboard.md): `runs` (`SessionView`, each session of a run as
the dashboard, `deepwork report` and `deepwork status` list it), `detail` (`SessionDetail`, one
session in full, as its run page shows it) and `timeline`, each event of a run told as a
sentence. Read only, through the public state APIs and the store's queries.
"""
