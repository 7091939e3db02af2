"""DeepWork hooks: `deepwork hook NAME` runs one of these on one platform event.

This package is on the path of every tool call an agent makes, so it imports only the standard
library at module level. Anything heavier (the job model, pydantic, the session store) is
imported inside the one hook branch that needs it, after the cheap checks said it is needed.
"""
