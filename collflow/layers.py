"""`cf.layers`: the functional layers of collflow.nn.layers (TensorFlow 1.x `tf.layers`)."""
from .nn.layers import *  # noqa: F401,F403
from .nn.layers import __all__  # noqa: F401
