"""`cf.initializers`: the initializers of collflow.nn.initializers (TensorFlow's `tf.initializers`)."""
from .graph.initializers import *  # noqa: F401,F403
from .graph.initializers import __all__  # noqa: F401
