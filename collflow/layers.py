"""`cf.layers`: the functional layers of collflow.nn.layers and their classes
(collflow.nn.layer_classes, nn.layer_classes3d) - TensorFlow 1.x's `tf.layers`."""
from .nn.layers import *  # noqa: F401,F403
from .nn.layer_classes import *  # noqa: F401,F403  (tf.layers.Dense, Conv2D, ...)
from .nn.layer_classes3d import *  # noqa: F401,F403  (Conv3D, Conv3DTranspose, conv3d_transpose, InputSpec, ...)
from .nn import layers as _fl, layer_classes as _lc, layer_classes3d as _lc3

__all__ = list(_fl.__all__) + list(_lc.__all__) + list(_lc3.__all__)
