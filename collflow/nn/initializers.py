"""`cf.nn.initializers`: the variable initializers (they live in collflow/graph/initializers.py,
below the variable-scope machinery that uses them as defaults)."""
from ..graph.initializers import *  # noqa: F401,F403
from ..graph.initializers import __all__  # noqa: F401
