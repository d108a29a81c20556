"""collflow.compat: `import collflow.compat.v1 as tf` gives TensorFlow 1.x's namespace."""
from . import v1  # noqa: F401
