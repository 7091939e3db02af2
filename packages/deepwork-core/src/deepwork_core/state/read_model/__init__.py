"""The one read model of runs (docs/dashboard.md): `runs` (`Run`, `RunDetail`), which the
dashboard, `deepwork report` and `deepwork status` render, and `timeline`, each event of a run
told as a sentence. Read only, through the public state APIs and the store's queries.
"""
