"""More of TF1's tf.image, composed from existing ops (so their gradients come with them):
total_variation, psnr, ssim, ssim_multiscale, sobel_edges, image_gradients, the YUV / YIQ
conversions, adjust_gamma, resize_with_crop_or_pad and extract_image_patches / extract_patches,
with TensorFlow's formulas and constants (float32 where TF converts to float32)."""
from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from . import array_ops as _a
from . import math_ops as _m
from .block_ops import extract_image_patches as _extract
from .constant_op import constant
from .depthwise_ops import depthwise_conv2d
from .image_adjust_ops import convert_image_dtype, resize_image_with_crop_or_pad

__all__ = ["total_variation", "psnr", "ssim", "ssim_multiscale", "sobel_edges", "image_gradients", "rgb_to_yuv",
           "yuv_to_rgb", "rgb_to_yiq", "yiq_to_rgb", "adjust_gamma", "resize_with_crop_or_pad",
           "extract_image_patches", "extract_patches"]

resize_with_crop_or_pad = resize_image_with_crop_or_pad   # TF >= 1.14's name


def extract_image_patches(images: Any, ksizes: Any = None, strides: Any = None, rates: Any = None,
                          padding: Any = None, name: Optional[str] = None, sizes: Any = None) -> _g.Tensor:
    """tf.image.extract_image_patches (tf.extract_image_patches; `sizes` is ksizes' newer name)."""
    return _extract(images, ksizes if ksizes is not None else sizes, strides, rates, padding, name=name)


def extract_patches(images: Any, sizes: Any, strides: Any, rates: Any, padding: Any,
                    name: Optional[str] = None) -> _g.Tensor:
    """tf.image.extract_patches: extract_image_patches with `sizes`."""
    return _extract(images, sizes, strides, rates, padding, name=name)


def total_variation(images: Any, name: Optional[str] = None) -> _g.Tensor:
    """Sum of absolute differences of neighbouring pixels (down and right): a scalar for an image
    [h, w, c], one per image [batch] for a batch."""
    x = _g.convert_to_tensor(images)
    with x.graph.as_default(), x.graph.name_scope(name or "total_variation"):
        if x.shape.rank == 3:
            d1, d2, axes = x[1:, :, :] - x[:-1, :, :], x[:, 1:, :] - x[:, :-1, :], None
        elif x.shape.rank == 4:
            d1, d2, axes = x[:, 1:, :, :] - x[:, :-1, :, :], x[:, :, 1:, :] - x[:, :, :-1, :], [1, 2, 3]
        else:
            raise ValueError("'images' must be either 3 or 4-dimensional.")
        return _m.reduce_sum(_m.abs(d1), axes) + _m.reduce_sum(_m.abs(d2), axes)


def _float_pair(a: Any, b: Any, max_val: Any) -> Tuple[_g.Tensor, _g.Tensor, _g.Tensor]:
    """a, b and max_val as float32 images (integers scaled to [0, 1], as TF's psnr/ssim)."""
    a, b = _g.convert_to_tensor(a), _g.convert_to_tensor(b)
    mv = convert_image_dtype(_m.cast(max_val, a.dtype), _dt.float32)
    return convert_image_dtype(a, _dt.float32), convert_image_dtype(b, _dt.float32), mv


def psnr(a: Any, b: Any, max_val: Any, name: Optional[str] = None) -> _g.Tensor:
    """Peak signal-to-noise ratio (dB) of each image pair over its last three axes:
    20 log10(max_val) - 10 log10(mse)."""
    a = _g.convert_to_tensor(a)
    with a.graph.as_default(), a.graph.name_scope(name or "PSNR"):
        fa, fb, mv = _float_pair(a, b, max_val)
        mse = _m.reduce_mean(_m.squared_difference(fa, fb), [-3, -2, -1])
        return _m.subtract(20 * _m.log(mv) / np.log(10.0).astype(np.float32),
                           np.float32(10 / np.log(10)) * _m.log(mse), name="psnr")


def _gauss(size: int, sigma: float) -> np.ndarray:
    """TF's _fspecial_gauss in float32: a softmax over -0.5 (dy^2 + dx^2) / sigma^2."""
    coords = np.arange(size, dtype=np.float32) - np.float32(size - 1) / np.float32(2.0)
    g = np.square(coords) * (np.float32(-0.5) / np.square(np.float32(sigma)))
    g = (g[None, :] + g[:, None]).reshape(-1)
    e = np.exp(g - g.max())
    return (e / e.sum(dtype=np.float32)).astype(np.float32).reshape(size, size, 1, 1)


def _ssim_per_channel(x: _g.Tensor, y: _g.Tensor, max_val: _g.Tensor, size: int, sigma: float, k1: float,
                      k2: float) -> Tuple[_g.Tensor, _g.Tensor]:
    """(ssim, contrast-structure) per channel: Gaussian-weighted local statistics (VALID window)."""
    dims = x.shape.dims
    if x.shape.rank is None or x.shape.rank < 3 or None in dims[-3:]:
        raise InvalidArgumentError(f"ssim needs images [..., h, w, c] of known h, w, c, got shape {x.shape}")
    h, w, c = (int(d) for d in dims[-3:])
    if h < size or w < size:
        raise InvalidArgumentError(f"ssim: the images ({h} x {w}) must be at least filter_size ({size}) high and wide")
    kernel = constant(np.tile(_gauss(size, sigma), [1, 1, c, 1]))
    lead = dims[:-3]

    def reducer(t: _g.Tensor) -> _g.Tensor:
        flat = _a.reshape(t, [-1, h, w, c])
        out = depthwise_conv2d(flat, kernel, [1, 1, 1, 1], "VALID")
        if len(lead) == 1 and lead[0] is None or None not in lead:
            return _a.reshape(out, [-1 if d is None else int(d) for d in lead] + [h - size + 1, w - size + 1, c])
        return _a.reshape(out, _a.concat([_a.shape(t)[:-3], _a.shape(out)[1:]], 0))
    c1 = (k1 * max_val) ** 2
    c2 = (k2 * max_val) ** 2
    mean0, mean1 = reducer(x), reducer(y)
    num0 = mean0 * mean1 * 2.0
    den0 = _m.square(mean0) + _m.square(mean1)
    luminance = (num0 + c1) / (den0 + c1)
    num1 = reducer(x * y) * 2.0
    den1 = reducer(_m.square(x) + _m.square(y))
    cs = (num1 - num0 + c2) / (den1 - den0 + c2)
    return _m.reduce_mean(luminance * cs, [-3, -2]), _m.reduce_mean(cs, [-3, -2])


def ssim(img1: Any, img2: Any, max_val: Any, filter_size: int = 11, filter_sigma: float = 1.5, k1: float = 0.01,
         k2: float = 0.03) -> _g.Tensor:
    """Structural similarity of each image pair [..., h, w, c] (Wang et al. 2004, TF's Gaussian
    11x11 window of sigma 1.5, VALID), averaged over channels."""
    a = _g.convert_to_tensor(img1)
    with a.graph.as_default(), a.graph.name_scope("SSIM"):
        fa, fb, mv = _float_pair(a, img2, max_val)
        per_channel, _ = _ssim_per_channel(fa, fb, mv, int(filter_size), float(filter_sigma), k1, k2)
        return _m.reduce_mean(per_channel, [-1])


_MSSSIM_WEIGHTS = (0.0448, 0.2856, 0.3001, 0.2363, 0.1333)


def ssim_multiscale(img1: Any, img2: Any, max_val: Any, power_factors: Sequence[float] = _MSSSIM_WEIGHTS,
                    filter_size: int = 11, filter_sigma: float = 1.5, k1: float = 0.01,
                    k2: float = 0.03) -> _g.Tensor:
    """Multi-scale SSIM of batches [n, h, w, c]: the contrast-structure term at each scale but the
    last and the full SSIM at the last (each clipped at 0), combined as prod(v_i ** power_i) and
    averaged over channels; between scales 2x2 average pooling (odd sizes first padded
    symmetrically by one, as TF)."""
    from .nn_ops import avg_pool
    a = _g.convert_to_tensor(img1)
    with a.graph.as_default(), a.graph.name_scope("MS-SSIM"):
        fa, fb, mv = _float_pair(a, img2, max_val)
        dims = fa.shape.dims
        if fa.shape.rank != 4 or None in dims[1:]:
            raise InvalidArgumentError(f"ssim_multiscale needs a batch [n, h, w, c] of known h, w, c, got {fa.shape}")
        imgs = [fa, fb]
        values = []
        for k in range(len(power_factors)):
            if k > 0:
                # TF pads odd sizes by one (symmetric: the edge row / column repeated) then average-pools 2x2 VALID
                h, w = (int(d) for d in imgs[0].shape.dims[1:3])
                pads = [[0, 0], [0, h % 2], [0, w % 2], [0, 0]]
                imgs = [avg_pool(_a.pad(t, pads, mode="SYMMETRIC"), [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
                        for t in imgs]
            s, cs = _ssim_per_channel(imgs[0], imgs[1], mv, int(filter_size), float(filter_sigma), k1, k2)
            values.append(cs if k < len(power_factors) - 1 else s)
        values = _m.maximum(_a.stack(values, axis=-1), 0.0)   # TF clips negative values (relu)
        pf = constant(np.asarray(power_factors, np.float32))
        return _m.reduce_mean(_m.reduce_prod(_m.pow(values, pf), [-1]), [-1])


def sobel_edges(image: Any) -> _g.Tensor:
    """[b, h, w, d] -> [b, h, w, d, 2]: the Sobel responses dy, dx (3x3, reflect-padded), as TF."""
    x = _g.convert_to_tensor(image)
    if x.shape.rank != 4 or x.shape.dims[3] is None:
        raise InvalidArgumentError(f"sobel_edges needs [batch, h, w, depth] with a known depth, got {x.shape}")
    d = int(x.shape.dims[3])
    k = np.asarray([[[-1, -2, -1], [0, 0, 0], [1, 2, 1]], [[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]]])
    k = np.tile(np.transpose(k, (1, 2, 0))[:, :, None, :], [1, 1, d, 1])   # [3, 3, d, 2]
    with x.graph.as_default(), x.graph.name_scope("sobel_edges"):
        padded = _a.pad(x, [[0, 0], [1, 1], [1, 1], [0, 0]], mode="REFLECT")
        out = depthwise_conv2d(padded, constant(k.astype(x.dtype.np)), [1, 1, 1, 1], "VALID")
        shape = [-1 if v is None else int(v) for v in x.shape.dims[:3]] + [d, 2]
        if x.shape.dims[1] is None or x.shape.dims[2] is None:
            shape = _a.concat([_a.shape(x), constant(np.asarray([2], np.int32))], 0)
        return _a.reshape(out, shape)


def image_gradients(image: Any) -> Tuple[_g.Tensor, _g.Tensor]:
    """(dy, dx) of a batch [b, h, w, d]: forward differences, zero in the last row / column."""
    x = _g.convert_to_tensor(image)
    if x.shape.rank != 4:
        raise ValueError(f"image_gradients expects a 4D tensor [batch_size, h, w, d], not {x.shape}.")
    with x.graph.as_default(), x.graph.name_scope("image_gradients"):
        dy = x[:, 1:, :, :] - x[:, :-1, :, :]
        dx = x[:, :, 1:, :] - x[:, :, :-1, :]
        dy = _a.pad(dy, [[0, 0], [0, 1], [0, 0], [0, 0]])
        dx = _a.pad(dx, [[0, 0], [0, 0], [0, 1], [0, 0]])
        return dy, dx


_RGB_TO_YUV = [[0.299, -0.14714119, 0.61497538], [0.587, -0.28886916, -0.51496512], [0.114, 0.43601035, -0.10001026]]
_YUV_TO_RGB = [[1, 1, 1], [0, -0.394642334, 2.03206185], [1.13988303, -0.58062185, 0]]
_RGB_TO_YIQ = [[0.299, 0.59590059, 0.2115], [0.587, -0.27455667, -0.52273617], [0.114, -0.32134392, 0.31119955]]
_YIQ_TO_RGB = [[1, 1, 1], [0.95598634, -0.27201283, -1.10674021], [0.6208248, -0.64720424, 1.70423049]]


def _color_matrix(images: Any, kernel: list, name: str) -> _g.Tensor:
    x = _g.convert_to_tensor(images)
    if x.shape.rank is not None and x.shape.dims[-1] not in (None, 3):
        raise InvalidArgumentError(f"{name} needs 3 channels last, got shape {x.shape}")
    with x.graph.as_default(), x.graph.name_scope(name):
        k = constant(np.asarray(kernel, dtype=x.dtype.np))
        flat = _m.matmul(_a.reshape(x, [-1, 3]), k)
        if x.shape.rank is not None and None not in x.shape.dims:
            return _a.reshape(flat, [int(d) for d in x.shape.dims])
        return _a.reshape(flat, _a.shape(x))


def rgb_to_yuv(images: Any) -> _g.Tensor:
    """[..., 3] RGB in [0, 1] -> YUV (Y in [0, 1], U and V about [-0.5, 0.5])."""
    return _color_matrix(images, _RGB_TO_YUV, "rgb_to_yuv")


def yuv_to_rgb(images: Any) -> _g.Tensor:
    """[..., 3] YUV -> RGB."""
    return _color_matrix(images, _YUV_TO_RGB, "yuv_to_rgb")


def rgb_to_yiq(images: Any) -> _g.Tensor:
    """[..., 3] RGB in [0, 1] -> YIQ."""
    return _color_matrix(images, _RGB_TO_YIQ, "rgb_to_yiq")


def yiq_to_rgb(images: Any) -> _g.Tensor:
    """[..., 3] YIQ -> RGB."""
    return _color_matrix(images, _YIQ_TO_RGB, "yiq_to_rgb")


def adjust_gamma(image: Any, gamma: Any = 1, gain: Any = 1) -> _g.Tensor:
    """gain * image ** gamma on the image as float (an integer image converted and back with
    saturation).  A negative Python gamma is a ValueError (a tensor gamma is not checked)."""
    x = _g.convert_to_tensor(image)
    if not isinstance(gamma, _g.Tensor) and np.any(np.asarray(gamma) < 0):
        raise ValueError("Gamma should be a non-negative real number.")
    with x.graph.as_default(), x.graph.name_scope("adjust_gamma"):
        f = x if x.dtype in (_dt.float16, _dt.float32) else convert_image_dtype(x, _dt.float32)
        out = _m.cast(gain, f.dtype) * _m.pow(f, _m.cast(gamma, f.dtype))
        return convert_image_dtype(out, x.dtype, saturate=True)
