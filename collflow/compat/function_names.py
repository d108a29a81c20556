"""tf.function and tf.wrap_function (TF 1.15's top-level names; collflow/autograph/function.py)."""
from collflow.autograph.function import function, wrap_function

__all__ = ["function", "wrap_function"]
