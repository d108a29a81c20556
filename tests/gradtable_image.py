"""Gradient-check cases for graph/ops/image_ops2.py's differentiable ops: crop_and_resize (image
and boxes) and resize_bicubic.  Both ops compute in float32 (as TF's), so the checks cast
around them and use wide finite-difference steps (the image gradients are linear; the boxes'
positions avoid the kinks at whole pixels)."""
import numpy as np

import collflow as cf
from gradcheck import Case


def _crop(img, bx):
    crop = cf.image.crop_and_resize(img, cf.cast(bx, cf.float32), [0, 1, 0], [3, 4])
    return cf.cast(crop, cf.float64)


def _bicubic(size, **kw):
    return lambda x: cf.cast(cf.image.resize_bicubic(x, size, **kw), cf.float64)


CASES = [
    Case("CropAndResize", _crop, [(2, 5, 6, 2), (3, 4)],
         make_inputs=lambda r: [r.uniform(-1, 1, (2, 5, 6, 2)),
                                np.array([[0.13, 0.11, 0.77, 0.92], [0.81, 0.27, 0.21, 0.67], [0.3, 0.41, 0.52, 0.5]])],
         eps=1e-3, rtol=2e-3, atol=2e-3),
    Case("ResizeBicubic", _bicubic([7, 5]), [(1, 4, 3, 2)], eps=1e-2, rtol=1e-3, atol=1e-3),
    Case("ResizeBicubic", _bicubic([3, 8], half_pixel_centers=True), [(2, 5, 4, 1)], eps=1e-2, rtol=1e-3, atol=1e-3,
         id="ResizeBicubic-half"),
    Case("ResizeBicubic", _bicubic([6, 2], align_corners=True), [(1, 3, 4, 1)], eps=1e-2, rtol=1e-3, atol=1e-3,
         id="ResizeBicubic-align"),
]


# ImageProjectiveTransformV2: TF's gradient transforms the incoming gradient by the inverse
# transform, which is the derivative where the transform moves whole pixels (shifts by whole
# pixels, flips); those are the cases checked here (float64 images: the op computes in them)
def _projective(t, interpolation):
    import collflow.compat.v1 as tf1
    return lambda x: tf1.contrib.image.transform(x, np.asarray(t, np.float32), interpolation)


CASES += [
    Case("ImageProjectiveTransformV2", _projective([1, 0, -2, 0, 1, 1, 0, 0], "NEAREST"), [(2, 5, 6, 2)],
         id="ImageProjectiveTransformV2-shift"),
    Case("ImageProjectiveTransformV2", _projective([1, 0, 1, 0, 1, -1, 0, 0], "BILINEAR"), [(1, 4, 5, 1)],
         id="ImageProjectiveTransformV2-shift-bilinear"),
    Case("ImageProjectiveTransformV2", _projective([-1, 0, 5, 0, 1, 0, 0, 0], "NEAREST"), [(1, 3, 6, 2)],
         id="ImageProjectiveTransformV2-flip"),
]
