"""TensorFlow 1.x's tf.image namespace: resizing (resize_images / resize, resize_bilinear,
resize_nearest_neighbor and ResizeMethod).

The ops themselves live in graph/ops/image_ops.py; this module is the public namespace, a
layer like nn (it may import anything below it).
"""
from .graph.ops.image_ops import (ResizeMethod, resize, resize_bilinear, resize_images,  # noqa: F401
                                  resize_nearest_neighbor)

__all__ = ["ResizeMethod", "resize", "resize_bilinear", "resize_images", "resize_nearest_neighbor"]
