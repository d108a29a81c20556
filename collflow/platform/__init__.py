"""Process-level utilities with TensorFlow 1.x's names: `tf.logging`, `tf.flags`, `tf.app`.

They sit below every other layer (only the standard library and collflow.errors), so any
part of collflow may log through `tf_logging`.
"""
from . import tf_logging, flags, app  # noqa: F401
