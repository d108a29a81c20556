"""TensorFlow 1.x's tf.image namespace: resizing (resize_images / resize, resize_bilinear,
resize_nearest_neighbor and ResizeMethod), flips, crops and pads, per-image standardization,
brightness, contrast and dtype conversion, grayscale, bounding-box crops and pads, central_crop,
rot90, resize_image_with_pad, and the random augmentations; and the codecs (decode_jpeg, decode_png,
decode_gif, decode_bmp, decode_image, encode_jpeg, encode_png, is_jpeg, extract_jpeg_shape).

The ops themselves live in graph/ops/image_ops.py; this module is the public namespace, a
layer like nn (it may import anything below it).
"""
from .graph.ops.image_ops import (ResizeMethod, resize, resize_bilinear, resize_images,  # noqa: F401
                                  resize_nearest_neighbor)
from .graph.ops.image_adjust_ops import *  # noqa: F401,F403  (flips, crops, standardization, ...)
from .graph.ops.image_more_ops import *  # noqa: F401,F403  (contrast, grayscale, bounding boxes, rot90, ...)
from .graph.ops.image_codec_ops import *  # noqa: F401,F403  (decode_jpeg/png/gif/bmp/image, encode_jpeg/png, ...)
from .graph.ops import image_adjust_ops as _adjust
from .graph.ops import image_codec_ops as _codec
from .graph.ops import image_more_ops as _more
from .graph.ops.image_ops2 import *  # noqa: F401,F403,E402  (crop_and_resize, NMS, boxes, bicubic/area)
from .graph.ops.image_ops3 import *  # noqa: F401,F403,E402  (ssim, psnr, sobel_edges, yuv/yiq, gamma, ...)
from .graph.ops import image_ops2 as _ops2, image_ops3 as _ops3  # noqa: E402

__all__ = (["ResizeMethod", "resize", "resize_bilinear", "resize_images", "resize_nearest_neighbor"] + _adjust.__all__
           + _more.__all__ + _codec.__all__ + _ops2.__all__ + _ops3.__all__)
