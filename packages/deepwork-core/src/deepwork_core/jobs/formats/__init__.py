"""The two `job.yml` formats, each a reader into the one job model and a writer out of it.

`v09` is the 0.9 format, `v010` (with its file shape in `v010_model`) the 0.10 format;
`convert` turns one into the other. See docs/job-format.md.
"""
