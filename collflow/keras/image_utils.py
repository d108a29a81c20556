"""tf.keras.preprocessing.image's array helpers (TF 1.15): array_to_img / img_to_array /
load_img / save_img and the transforms (apply_affine_transform, flips, channel and brightness
shifts, the random_* helpers).

Images are PIL images when Pillow is installed, as Keras's; without it (collflow's
dependencies do not include it) they are `ArrayImage`s, decoded and encoded by collflow's own
PNG / JPEG / GIF / BMP codecs.  The affine transforms interpolate in NumPy (orders 0 and 1,
SciPy ndimage's fill modes) where Keras calls scipy.ndimage."""
from __future__ import annotations

import io

import os
import struct
from typing import Any, Optional, Sequence, Tuple

import numpy as np

from . import backend as K

__all__ = ["ArrayImage", "array_to_img", "img_to_array", "load_img", "save_img", "apply_affine_transform",
           "apply_channel_shift", "apply_brightness_shift", "flip_axis", "random_rotation", "random_shift",
           "random_shear", "random_zoom", "random_channel_shift", "random_brightness",
           "transform_matrix_offset_center"]


def _pil() -> Any:
    """PIL.Image, or None (collflow's ArrayImage is used then)."""
    try:
        from PIL import Image  # noqa: F401  (optional)
    except ImportError:
        return None
    return Image


_MODES = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}


class ArrayImage:
    """An image as PIL's essentials: `mode` ("L", "LA", "RGB", "RGBA", "I"), `size` (width,
    height), np.asarray(img), convert(mode), resize((w, h), resample), save(path, format)."""

    def __init__(self, array: np.ndarray, mode: Optional[str] = None):
        a = np.asarray(array)
        if a.ndim == 3 and a.shape[2] == 1:
            a = a[:, :, 0]
        self._a = a
        self.mode = mode or ("L" if a.ndim == 2 else _MODES[a.shape[2]])

    @property
    def size(self) -> Tuple[int, int]:
        return int(self._a.shape[1]), int(self._a.shape[0])

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self._a if dtype is None else self._a.astype(dtype)

    def convert(self, mode: str) -> "ArrayImage":
        """PIL's conversions: RGB -> L by ITU-R 601-2 luma (integer rounding as PIL), L -> RGB
        by copying, alpha added opaque or dropped."""
        a = self._a
        if mode == self.mode:
            return ArrayImage(a.copy(), mode)
        rgb = np.repeat(a[:, :, None], 3, 2) if a.ndim == 2 else \
            np.repeat(a[:, :, :1], 3, 2) if a.shape[2] == 2 else a[:, :, :3]
        alpha = a[:, :, -1] if a.ndim == 3 and a.shape[2] in (2, 4) else \
            np.full(a.shape[:2], 255, np.uint8)
        if mode == "L":
            if a.ndim == 2:
                return ArrayImage(a.astype(np.uint8), "L")
            c = rgb.astype(np.int64)
            gray = (c[..., 0] * 19595 + c[..., 1] * 38470 + c[..., 2] * 7471 + 0x8000) >> 16
            return ArrayImage(gray.astype(np.uint8), "L")
        if mode == "RGB":
            return ArrayImage(rgb.astype(np.uint8), "RGB")
        if mode == "RGBA":
            return ArrayImage(np.dstack([rgb, alpha]).astype(np.uint8), "RGBA")
        raise ValueError(f"conversion from {self.mode} to {mode} is not supported")

    def resize(self, size: Sequence[int], resample: str = "nearest") -> "ArrayImage":
        """To (width, height): "nearest" (PIL's pixel choice) or "bilinear" (half-pixel centers,
        without PIL's antialiasing when shrinking)."""
        w, h = int(size[0]), int(size[1])
        a = self._a
        sh, sw = a.shape[:2]
        if resample == "nearest":
            rows = np.minimum(((np.arange(h) + 0.5) * sh / h).astype(np.int64), sh - 1)
            cols = np.minimum(((np.arange(w) + 0.5) * sw / w).astype(np.int64), sw - 1)
            return ArrayImage(a[rows][:, cols], self.mode)
        if resample != "bilinear":
            raise ValueError(f"Invalid interpolation method {resample} specified: without Pillow collflow resizes "
                             "with 'nearest' or 'bilinear'")
        y = np.clip((np.arange(h) + 0.5) * sh / h - 0.5, 0, sh - 1)
        x = np.clip((np.arange(w) + 0.5) * sw / w - 0.5, 0, sw - 1)
        y0, x0 = np.floor(y).astype(int), np.floor(x).astype(int)
        y1, x1 = np.minimum(y0 + 1, sh - 1), np.minimum(x0 + 1, sw - 1)
        fy, fx = (y - y0)[:, None], (x - x0)[None, :]
        if a.ndim == 3:
            fy, fx = fy[..., None], fx[..., None]
        f = a.astype(np.float64)
        top = f[y0][:, x0] * (1 - fx) + f[y0][:, x1] * fx
        bottom = f[y1][:, x0] * (1 - fx) + f[y1][:, x1] * fx
        out = top * (1 - fy) + bottom * fy
        return ArrayImage(np.clip(np.round(out), 0, 255).astype(a.dtype), self.mode)

    def save(self, path: Any, format: Optional[str] = None, **kwargs: Any) -> None:  # noqa: A002
        """Writes PNG, JPEG (quality=, default 75 as PIL) or BMP, by `format` or the extension."""
        fmt = (format or os.path.splitext(str(path))[1][1:] or "png").lower()
        a = self._a if self._a.ndim == 3 else self._a[:, :, None]
        if self.mode == "I":
            raise ValueError("saving a 32-bit integer ('I') image needs Pillow")
        if fmt == "png":
            data = _png().encode(a.astype(np.uint8))
        elif fmt in ("jpg", "jpeg"):
            if a.shape[2] not in (1, 3):
                raise OSError(f"cannot write mode {self.mode} as JPEG")
            data = _jpeg_encoder().encode(a.astype(np.uint8), quality=int(kwargs.get("quality", 75)))
        elif fmt == "bmp":
            data = _encode_bmp(a.astype(np.uint8))
        else:
            raise ValueError(f"unknown file extension / format {fmt!r} (without Pillow: png, jpeg, bmp)")
        with open(path, "wb") as f:
            f.write(data)

    def close(self) -> None:
        pass


def _png() -> Any:
    from ..kernels import png_codec
    return png_codec


def _jpeg() -> Any:
    from ..kernels import jpeg_codec
    return jpeg_codec


def _jpeg_encoder() -> Any:
    from ..kernels import jpeg_encoder
    return jpeg_encoder


def _encode_bmp(a: np.ndarray) -> bytes:
    """An uncompressed 24-bit (or 32-bit with alpha) bottom-up BMP."""
    h, w, c = a.shape
    if c in (1, 3):
        px, bpp = (np.repeat(a, 3, 2) if c == 1 else a)[:, :, ::-1], 24
    else:
        rgba = np.dstack([np.repeat(a[:, :, :1], 3, 2), a[:, :, 1:]]) if c == 2 else a
        px, bpp = rgba[:, :, [2, 1, 0, 3]], 32
    row = w * bpp // 8
    pad = (-row) % 4
    rows = [np.ascontiguousarray(px[r]).tobytes() + b"\0" * pad for r in range(h - 1, -1, -1)]
    body = b"".join(rows)
    header = struct.pack("<2sIHHI", b"BM", 54 + len(body), 0, 0, 54)
    info = struct.pack("<IiiHHIIiiII", 40, w, h, 1, bpp, 0, len(body), 2835, 2835, 0, 0)
    return header + info + body


def _decode_file(path: str) -> ArrayImage:
    from ..kernels import gif_bmp_codec
    with open(path, "rb") as f:
        data = f.read()
    if _png().is_png(data):
        return ArrayImage(_png().decode(data))
    if _jpeg().is_jpeg(data):
        return ArrayImage(_jpeg().decode(data))
    if gif_bmp_codec.is_gif(data):
        return ArrayImage(gif_bmp_codec.decode_gif(data)[0])
    if gif_bmp_codec.is_bmp(data):
        return ArrayImage(gif_bmp_codec.decode_bmp(data))
    raise OSError(f"cannot identify image file {path!r} (without Pillow: PNG, JPEG, GIF or BMP)")


def _data_format(data_format: Optional[str]) -> str:
    data_format = data_format or K.image_data_format()
    if data_format not in ("channels_first", "channels_last"):
        raise ValueError(f"Unknown data_format: {data_format}")
    return data_format


def array_to_img(x: Any, data_format: Optional[str] = None, scale: bool = True, dtype: Any = None) -> Any:
    """A 3-D array as an image (L, RGB or RGBA by its 1, 3 or 4 channels; 'I' for one channel
    above 255 unscaled); scale maps its range to 0..255 first."""
    x = np.asarray(x, dtype=dtype or K.floatx())
    if x.ndim != 3:
        raise ValueError(f"Expected image array to have rank 3 (single image). Got array with shape: {x.shape}")
    if _data_format(data_format) == "channels_first":
        x = x.transpose(1, 2, 0)
    if scale:
        x = x + max(-np.min(x), 0)
        top = np.max(x)
        if top != 0:
            x = x / top
        x = x * 255
    image = _pil()
    channels = x.shape[2]
    if channels in (3, 4):
        mode, arr = ("RGB" if channels == 3 else "RGBA"), x.astype("uint8")
    elif channels == 1:
        if np.max(x) > 255:  # a 32-bit integer image
            mode, arr = "I", x[:, :, 0].astype("int32")
        else:
            mode, arr = "L", x[:, :, 0].astype("uint8")
    else:
        raise ValueError(f"Unsupported channel number: {channels}")
    if image is not None:
        return image.fromarray(arr, mode)
    return ArrayImage(arr, mode)


def img_to_array(img: Any, data_format: Optional[str] = None, dtype: Any = None) -> np.ndarray:
    """An image as a 3-D float array (channels last, or first)."""
    data_format = _data_format(data_format)
    x = np.asarray(img, dtype=dtype or K.floatx())
    if x.ndim == 3:
        return x.transpose(2, 0, 1) if data_format == "channels_first" else x
    if x.ndim == 2:
        return x.reshape((1,) + x.shape) if data_format == "channels_first" else x.reshape(x.shape + (1,))
    raise ValueError(f"Unsupported image shape: {x.shape}")


_INTERPOLATIONS = ("nearest", "bilinear", "bicubic", "hamming", "box", "lanczos")


def load_img(path: Any, grayscale: bool = False, color_mode: str = "rgb", target_size: Any = None,
             interpolation: str = "nearest") -> Any:
    """The image file at path in color_mode ("grayscale", "rgb", "rgba"), resized to
    target_size (height, width) with `interpolation`."""
    if grayscale:
        import warnings
        warnings.warn("grayscale is deprecated. Please use color_mode = \"grayscale\"")
        color_mode = "grayscale"
    image = _pil()
    if color_mode not in ("grayscale", "rgb", "rgba"):
        raise ValueError('color_mode must be "grayscale", "rgb", or "rgba"')
    if image is not None:  # the bytes first, as Keras: PIL's lazy open would hold the file
        with open(path, "rb") as f:
            img = image.open(io.BytesIO(f.read()))
    else:
        img = _decode_file(str(path))
    if color_mode == "grayscale":
        if img.mode not in ("L", "I;16", "I"):
            img = img.convert("L")
    elif color_mode == "rgba":
        if img.mode != "RGBA":
            img = img.convert("RGBA")
    elif img.mode != "RGB":
        img = img.convert("RGB")
    if target_size is not None:
        wh = (int(target_size[1]), int(target_size[0]))
        if img.size != wh:
            if interpolation not in _INTERPOLATIONS:
                raise ValueError(f"Invalid interpolation method {interpolation} specified. Supported methods are "
                                 + ", ".join(_INTERPOLATIONS))
            if image is not None:
                img = img.resize(wh, getattr(image, interpolation.upper()))
            else:
                img = img.resize(wh, interpolation)
    return img


def save_img(path: Any, x: Any, data_format: Optional[str] = None, file_format: Optional[str] = None,
             scale: bool = True, **kwargs: Any) -> None:
    """Writes the array as an image file (array_to_img's image; an RGBA one as JPEG loses its
    alpha with a warning)."""
    img = array_to_img(x, data_format=data_format, scale=scale)
    if img.mode == "RGBA" and (file_format in ("jpg", "jpeg") or
                               (file_format is None and str(path).lower().endswith((".jpg", ".jpeg")))):
        import warnings
        warnings.warn("The JPG format does not support RGBA images, converting to RGB.")
        img = img.convert("RGB")
    img.save(path, format=file_format, **kwargs)


# -- transforms ----------------------------------------------------------------------------------

def flip_axis(x: np.ndarray, axis: int) -> np.ndarray:
    return np.flip(np.asarray(x), axis)


def apply_channel_shift(x: np.ndarray, intensity: float, channel_axis: int = 0) -> np.ndarray:
    """Adds intensity to every channel, clipped to the image's own min..max."""
    x = np.asarray(x)
    lo, hi = np.min(x), np.max(x)
    return np.clip(x + intensity, lo, hi).astype(x.dtype)


def random_channel_shift(x: np.ndarray, intensity_range: float, channel_axis: int = 0) -> np.ndarray:
    return apply_channel_shift(x, np.random.uniform(-intensity_range, intensity_range), channel_axis)


def apply_brightness_shift(x: np.ndarray, brightness: float) -> np.ndarray:
    """Keras's PIL brightness enhancement: the image scaled to 0..255 (array_to_img), each
    8-bit value times `brightness` truncated to 0..255, back as float (img_to_array)."""
    img = np.asarray(array_to_img(x))
    out = np.clip(np.float32(brightness) * img.astype(np.float32), 0, 255).astype(np.uint8)
    return img_to_array(ArrayImage(out, "L" if out.ndim == 2 else None))


def random_brightness(x: np.ndarray, brightness_range: Sequence[float]) -> np.ndarray:
    if len(brightness_range) != 2:
        raise ValueError(f"`brightness_range should be tuple or list of two floats. Received: {brightness_range}")
    return apply_brightness_shift(x, np.random.uniform(brightness_range[0], brightness_range[1]))


def transform_matrix_offset_center(matrix: np.ndarray, x: int, y: int) -> np.ndarray:
    """matrix about the image's center ((x/2 + 0.5, y/2 + 0.5), Keras's) instead of the origin."""
    ox, oy = float(x) / 2 + 0.5, float(y) / 2 + 0.5
    to_center = np.array([[1, 0, ox], [0, 1, oy], [0, 0, 1]])
    back = np.array([[1, 0, -ox], [0, 1, -oy], [0, 0, 1]])
    return to_center @ matrix @ back


def _map_index(i: np.ndarray, n: int, mode: str) -> np.ndarray:
    """Integer positions outside 0..n-1 mapped in by ndimage's boundary mode."""
    if mode == "nearest" or mode == "constant":
        return np.clip(i, 0, n - 1)
    if mode == "reflect":  # d c b a | a b c d | d c b a
        p = np.mod(i, 2 * n)
        return np.where(p >= n, 2 * n - 1 - p, p)
    if mode == "mirror":  # d c b | a b c d | c b a
        if n == 1:
            return np.zeros_like(i)
        p = np.mod(i, 2 * n - 2)
        return np.where(p >= n, 2 * n - 2 - p, p)
    raise ValueError(f"Unknown fill_mode {mode!r}")


def _sample(img: np.ndarray, r: np.ndarray, c: np.ndarray, order: int, mode: str, cval: float) -> np.ndarray:
    """img (2-D) at the real coordinates (r, c): nearest (order 0) or bilinear (order 1)."""
    h, w = img.shape
    outside = None
    if mode == "constant":  # no interpolation beyond the edges: cval there
        tol = 1e-9
        outside = (r < -tol) | (r > h - 1 + tol) | (c < -tol) | (c > w - 1 + tol)
    elif mode == "wrap":  # the last and first samples overlap (period n - 1), as ndimage
        def wrap(v: np.ndarray, n: int) -> np.ndarray:
            if n == 1:
                return np.zeros_like(v)
            return np.where((v < 0) | (v > n - 1), np.mod(v, n - 1), v)
        r, c = wrap(r, h), wrap(c, w)
        mode = "nearest"
    if order == 0:
        out = img[_map_index(np.floor(r + 0.5).astype(np.int64), h, mode),
                  _map_index(np.floor(c + 0.5).astype(np.int64), w, mode)].astype(np.float64)
    elif order == 1:
        r0, c0 = np.floor(r).astype(np.int64), np.floor(c).astype(np.int64)
        fr, fc = r - r0, c - c0
        f = img.astype(np.float64)

        def at(rr: np.ndarray, cc: np.ndarray) -> np.ndarray:
            return f[_map_index(rr, h, mode), _map_index(cc, w, mode)]
        out = ((at(r0, c0) * (1 - fc) + at(r0, c0 + 1) * fc) * (1 - fr)
               + (at(r0 + 1, c0) * (1 - fc) + at(r0 + 1, c0 + 1) * fc) * fr)
    else:
        raise ValueError(f"interpolation order {order} is not supported by collflow (0 or 1)")
    if outside is not None:
        out = np.where(outside, cval, out)
    return out


def apply_affine_transform(x: np.ndarray, theta: float = 0, tx: float = 0, ty: float = 0, shear: float = 0,
                           zx: float = 1, zy: float = 1, row_axis: int = 0, col_axis: int = 1, channel_axis: int = 2,
                           fill_mode: str = "nearest", cval: float = 0.0, order: int = 1) -> np.ndarray:
    """x rotated by theta degrees, shifted by (tx, ty) pixels (rows, columns), sheared by
    `shear` degrees and zoomed by (zx, zy), about the image's center: each output pixel takes
    the input at the transformed position (Keras's matrix, ndimage.affine_transform's rule)."""
    x = np.asarray(x)
    m = np.eye(3)
    changed = False
    if theta != 0:
        t = np.deg2rad(theta)
        m = m @ np.array([[np.cos(t), -np.sin(t), 0], [np.sin(t), np.cos(t), 0], [0, 0, 1]])
        changed = True
    if tx != 0 or ty != 0:
        m = m @ np.array([[1, 0, tx], [0, 1, ty], [0, 0, 1]])
        changed = True
    if shear != 0:
        s = np.deg2rad(shear)
        m = m @ np.array([[1, -np.sin(s), 0], [0, np.cos(s), 0], [0, 0, 1]])
        changed = True
    if zx != 1 or zy != 1:
        m = m @ np.array([[zx, 0, 0], [0, zy, 0], [0, 0, 1]])
        changed = True
    if not changed:
        return x
    h, w = x.shape[row_axis], x.shape[col_axis]
    m = transform_matrix_offset_center(m, h, w)
    chans = np.moveaxis(x, channel_axis, 0)
    # ndimage's rule on each channel plane, in the plane's own axis order
    ph, pw = chans.shape[1:]
    gi, gj = np.meshgrid(np.arange(ph), np.arange(pw), indexing="ij")
    a, off = m[:2, :2], m[:2, 2]
    src_i = a[0, 0] * gi + a[0, 1] * gj + off[0]
    src_j = a[1, 0] * gi + a[1, 1] * gj + off[1]
    planes = [_sample(p, src_i, src_j, order, fill_mode, cval) for p in chans]
    out = np.stack(planes, 0).astype(x.dtype if np.issubdtype(x.dtype, np.floating) else np.float64)
    return np.moveaxis(out, 0, channel_axis)


def _axes_kwargs(row_axis: int, col_axis: int, channel_axis: int, fill_mode: str, cval: float,
                 order: int) -> dict:
    return dict(row_axis=row_axis, col_axis=col_axis, channel_axis=channel_axis, fill_mode=fill_mode, cval=cval,
                order=order)


def random_rotation(x: np.ndarray, rg: float, row_axis: int = 1, col_axis: int = 2, channel_axis: int = 0,
                    fill_mode: str = "nearest", cval: float = 0.0, interpolation_order: int = 1) -> np.ndarray:
    theta = np.random.uniform(-rg, rg)
    return apply_affine_transform(x, theta=theta, **_axes_kwargs(row_axis, col_axis, channel_axis, fill_mode, cval,
                                                                 interpolation_order))


def random_shift(x: np.ndarray, wrg: float, hrg: float, row_axis: int = 1, col_axis: int = 2, channel_axis: int = 0,
                 fill_mode: str = "nearest", cval: float = 0.0, interpolation_order: int = 1) -> np.ndarray:
    h, w = x.shape[row_axis], x.shape[col_axis]
    tx = np.random.uniform(-hrg, hrg) * h
    ty = np.random.uniform(-wrg, wrg) * w
    return apply_affine_transform(x, tx=tx, ty=ty, **_axes_kwargs(row_axis, col_axis, channel_axis, fill_mode, cval,
                                                                  interpolation_order))


def random_shear(x: np.ndarray, intensity: float, row_axis: int = 1, col_axis: int = 2, channel_axis: int = 0,
                 fill_mode: str = "nearest", cval: float = 0.0, interpolation_order: int = 1) -> np.ndarray:
    shear = np.random.uniform(-intensity, intensity)
    return apply_affine_transform(x, shear=shear, **_axes_kwargs(row_axis, col_axis, channel_axis, fill_mode, cval,
                                                                 interpolation_order))


def random_zoom(x: np.ndarray, zoom_range: Sequence[float], row_axis: int = 1, col_axis: int = 2,
                channel_axis: int = 0, fill_mode: str = "nearest", cval: float = 0.0,
                interpolation_order: int = 1) -> np.ndarray:
    if len(zoom_range) != 2:
        raise ValueError(f"`zoom_range` should be a tuple or list of two floats. Received: {zoom_range}")
    if zoom_range[0] == 1 and zoom_range[1] == 1:
        zx, zy = 1, 1
    else:
        zx, zy = np.random.uniform(zoom_range[0], zoom_range[1], 2)
    return apply_affine_transform(x, zx=zx, zy=zy, **_axes_kwargs(row_axis, col_axis, channel_axis, fill_mode, cval,
                                                                  interpolation_order))
