"""`cf.initializers`: the initializers of collflow.nn.initializers (TensorFlow's `tf.initializers`)."""
from .nn.initializers import *  # noqa: F401,F403
from .nn.initializers import __all__  # noqa: F401
