"""What reviewer calls use: the one usage pair (`pair`: a request's, a run's) and its totals
over the event log (`totals`). docs/quality-gate.md, "What reviews cost".
"""
