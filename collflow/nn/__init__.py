"""Neural-network ops (cf.nn.relu, ...), layers and initializers."""
from ..graph.ops.nn_ops import *  # noqa: F401,F403
