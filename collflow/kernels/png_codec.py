"""A PNG decoder and encoder on NumPy and zlib, written from the PNG specification (W3C PNG,
RFC 2083), for tf.image.decode_png / encode_png.

Decoding handles every color type and bit depth (1/2/4/8/16), palettes and tRNS, Adam7
interlacing and the five filters, then converts the samples as TensorFlow's libpng setup does:
low bit depths scaled to 8 bits, palette and tRNS expanded (tRNS becomes an alpha channel),
16 bits kept for uint16 and scaled to 8 for uint8, and the channel conversions of `channels`
(RGB to gray with libpng's fixed-point weights, alpha stripped or filled with the maximum).
"""
from __future__ import annotations

import struct
import zlib
from typing import List, Optional, Tuple

import numpy as np

from ..errors import InvalidArgumentError

SIGNATURE = b"\x89PNG\r\n\x1a\n"
_CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}
_DEPTHS = {0: (1, 2, 4, 8, 16), 2: (8, 16), 3: (1, 2, 4, 8), 4: (8, 16), 6: (8, 16)}
# Adam7: (x start, y start, x step, y step)
_ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]


def _bad(msg: str) -> InvalidArgumentError:
    return InvalidArgumentError(f"Invalid PNG data, size {msg}" if msg.isdigit() else f"Invalid PNG data: {msg}")


def is_png(data: bytes) -> bool:
    return data[:8] == SIGNATURE


def _chunks(data: bytes) -> List[Tuple[bytes, bytes]]:
    out = []
    pos = 8
    n = len(data)
    while pos < n:
        if pos + 8 > n:
            raise _bad("truncated chunk header")
        ln, typ = struct.unpack(">I4s", data[pos:pos + 8])
        if ln > 0x7FFFFFFF or pos + 12 + ln > n:
            raise _bad(f"truncated {typ.decode('latin-1')!s} chunk")
        body = data[pos + 8:pos + 8 + ln]
        crc = struct.unpack(">I", data[pos + 8 + ln:pos + 12 + ln])[0]
        critical = not (typ[0] & 0x20)
        if critical and zlib.crc32(typ + body) & 0xFFFFFFFF != crc:
            raise _bad(f"CRC error in the {typ.decode('latin-1')} chunk")
        out.append((typ, body))
        pos += 12 + ln
        if typ == b"IEND":
            break
    return out


def _unfilter(raw: memoryview, rows: int, rowbytes: int, bpp: int, pos: int) -> Tuple[np.ndarray, int]:
    """Undoes the filters of `rows` scanlines starting at raw[pos]: ([rows, rowbytes] uint8, end)."""
    out = np.zeros((rows, rowbytes), dtype=np.uint8)
    prior = np.zeros(rowbytes, dtype=np.uint8)
    for r in range(rows):
        if pos + 1 + rowbytes > len(raw):
            raise _bad("the image data is truncated")
        ft = raw[pos]
        line = np.frombuffer(raw[pos + 1:pos + 1 + rowbytes], dtype=np.uint8)
        pos += 1 + rowbytes
        if ft == 0:
            cur = line.copy()
        elif ft == 1:
            pad = (-rowbytes) % bpp
            x = np.concatenate([line, np.zeros(pad, np.uint8)]).reshape(-1, bpp)
            cur = (np.cumsum(x, axis=0, dtype=np.uint64) & 0xFF).astype(np.uint8).reshape(-1)[:rowbytes]
        elif ft == 2:
            cur = line + prior
        elif ft == 3 or ft == 4:
            c = line.tolist()
            b = prior.tolist()
            if ft == 3:
                for i in range(bpp):
                    c[i] = (c[i] + (b[i] >> 1)) & 0xFF
                for i in range(bpp, rowbytes):
                    c[i] = (c[i] + ((c[i - bpp] + b[i]) >> 1)) & 0xFF
            else:
                for i in range(bpp):
                    c[i] = (c[i] + b[i]) & 0xFF
                for i in range(bpp, rowbytes):
                    a = c[i - bpp]
                    bb = b[i]
                    cc = b[i - bpp]
                    p = a + bb - cc
                    pa = p - a if p >= a else a - p
                    pb = p - bb if p >= bb else bb - p
                    pc = p - cc if p >= cc else cc - p
                    c[i] = (c[i] + (a if pa <= pb and pa <= pc else (bb if pb <= pc else cc))) & 0xFF
            cur = np.array(c, dtype=np.uint8)
        else:
            raise _bad(f"bad filter type {ft}")
        out[r] = cur
        prior = cur
    return out, pos


def _samples(rows: np.ndarray, width: int, depth: int, nch: int) -> np.ndarray:
    """Filtered-out scanlines [h, rowbytes] -> samples [h, width, nch] (uint16 for depth 16)."""
    h = rows.shape[0]
    if depth == 8:
        return rows[:, :width * nch].reshape(h, width, nch)
    if depth == 16:
        hi = rows[:, 0:width * nch * 2:2].astype(np.uint16)
        lo = rows[:, 1:width * nch * 2:2].astype(np.uint16)
        return ((hi << 8) | lo).reshape(h, width, nch)
    per = 8 // depth
    shifts = np.array([8 - depth * (i + 1) for i in range(per)], dtype=np.uint8)
    vals = (rows[:, :, None] >> shifts) & ((1 << depth) - 1)
    return vals.reshape(h, -1)[:, :width].reshape(h, width, 1).astype(np.uint8)


def read(data: bytes) -> Tuple[np.ndarray, int, int, bool, int]:
    """The PNG's samples expanded as libpng's expand transforms: (array [h, w, c] of uint8 or
    uint16 (an alpha channel from tRNS included), the channels TF gives for channels=0 (a
    palette's tRNS counts, a gray or RGB image's does not), bit depth 8 or 16, has an alpha
    channel, the 8-bit alpha libpng's filler gives (for 1/2/4-bit images the filler is cut to
    the bit depth: 1, 3 or 15, as TF's libpng setup gives))."""
    if not is_png(data):
        raise InvalidArgumentError("Invalid PNG data, not a PNG file (bad signature)")
    chunks = _chunks(data)
    if not chunks or chunks[0][0] != b"IHDR" or len(chunks[0][1]) != 13:
        raise _bad("no IHDR chunk")
    width, height, depth, ctype, comp, filt, inter = struct.unpack(">IIBBBBB", chunks[0][1])
    if ctype not in _CHANNELS or depth not in _DEPTHS[ctype]:
        raise _bad(f"bad color type {ctype} with bit depth {depth}")
    if comp != 0 or filt != 0 or inter > 1 or width == 0 or height == 0:
        raise _bad("bad IHDR chunk")
    if width > (1 << 24) or height > (1 << 24) or width * height > (1 << 29):
        raise InvalidArgumentError("decode_png: the image is too large")
    plte: Optional[bytes] = None
    trns: Optional[bytes] = None
    idat = []
    seen_end = False
    for typ, body in chunks[1:]:
        if typ == b"PLTE":
            if len(body) % 3 or not body or len(body) > 768:
                raise _bad("bad PLTE chunk")
            plte = body
        elif typ == b"tRNS":
            trns = body
        elif typ == b"IDAT":
            idat.append(body)
        elif typ == b"IEND":
            seen_end = True
    if not idat:
        raise _bad("no image data (IDAT)")
    if ctype == 3 and plte is None:
        raise _bad("a palette image without a PLTE chunk")
    d = zlib.decompressobj()
    try:
        raw = d.decompress(b"".join(idat))
    except zlib.error as e:
        raise _bad(f"bad compressed data ({e})") from None
    nch = _CHANNELS[ctype]
    bits = depth * nch
    bpp = max(1, bits // 8)
    view = memoryview(raw)
    if inter == 0:
        rowbytes = (width * bits + 7) // 8
        rows, _ = _unfilter(view, height, rowbytes, bpp, 0)
        s = _samples(rows, width, depth, nch)
    else:
        s = np.zeros((height, width, nch), dtype=np.uint16 if depth == 16 else np.uint8)
        pos = 0
        for x0, y0, dx, dy in _ADAM7:
            pw = (width - x0 + dx - 1) // dx if width > x0 else 0
            ph = (height - y0 + dy - 1) // dy if height > y0 else 0
            if pw == 0 or ph == 0:
                continue
            rowbytes = (pw * bits + 7) // 8
            rows, pos = _unfilter(view, ph, rowbytes, bpp, pos)
            s[y0::dy, x0::dx] = _samples(rows, pw, depth, nch)
    del seen_end
    # expansion (libpng: palette_to_rgb, expand_gray_1_2_4_to_8, tRNS_to_alpha)
    alpha = False
    if ctype == 3:
        pal = np.frombuffer(plte, dtype=np.uint8).reshape(-1, 3)
        idx = s[:, :, 0]
        if int(idx.max()) >= len(pal):   # libpng maps out-of-range indices to black
            pal = np.concatenate([pal, np.zeros((256 - len(pal), 3), np.uint8)])
        if trns is not None:
            a = np.full(256, 255, dtype=np.uint8)
            a[:min(len(trns), 256)] = np.frombuffer(trns[:256], dtype=np.uint8)
            full = np.concatenate([pal, a[:len(pal), None]], axis=1)
            out = full[idx]
            alpha = True
        else:
            out = pal[idx]
        return out, out.shape[2], 8, alpha, 255 if depth == 8 else (1 << depth) - 1
    if depth < 8:
        scale = {1: 255, 2: 85, 4: 17}[depth]
        key = None
        if trns is not None and ctype == 0 and len(trns) >= 2:
            key = struct.unpack(">H", trns[:2])[0] & ((1 << depth) - 1)
        g = (s * scale).astype(np.uint8)
        if key is not None:
            a = np.where(s[:, :, 0] == key, 0, 255).astype(np.uint8)
            return np.concatenate([g, a[:, :, None]], axis=2), 1, 8, True, 255
        return g, 1, 8, False, (1 << depth) - 1
    if trns is not None and ctype in (0, 2):
        maxv = (1 << depth) - 1
        if ctype == 0 and len(trns) >= 2:
            key = np.array([struct.unpack(">H", trns[:2])[0]])
        elif ctype == 2 and len(trns) >= 6:
            key = np.array(struct.unpack(">HHH", trns[:6]))
        else:
            key = None
        if key is not None:
            key = key & maxv
            a = np.where(np.all(s == key.astype(s.dtype), axis=2), 0, maxv).astype(s.dtype)
            s = np.concatenate([s, a[:, :, None]], axis=2)
            alpha = True
    elif ctype in (4, 6):
        alpha = True
    return s, _CHANNELS[ctype], depth, alpha, 255


# TF's png_set_rgb_to_gray(png_ptr, 1, 0.299, 0.587): libpng's fixed-point weights out of
# 32768 (red 9797, green 19234, blue the rest), truncated for 8-bit samples and rounded for
# 16-bit ones as libpng's png_do_rgb_to_gray; a pixel with red = green = blue keeps its value
_RC, _GC = 9797, 19234
_BC = 32768 - _RC - _GC


def _rgb_to_gray(x: np.ndarray) -> np.ndarray:
    v = x.astype(np.int64)
    rnd = 16384 if x.dtype == np.uint16 else 0
    g = (_RC * v[..., 0] + _GC * v[..., 1] + _BC * v[..., 2] + rnd) >> 15
    same = (v[..., 0] == v[..., 1]) & (v[..., 0] == v[..., 2])
    return np.where(same, v[..., 0], g).astype(x.dtype)


def decode(data: bytes, channels: int = 0, sixteen: bool = False) -> np.ndarray:
    """The image [h, w, channels]: uint16 when `sixteen`, else uint8 (16-bit samples cut to
    their high byte as libpng's png_set_strip_16, 8-bit ones widened by 257)."""
    if channels not in (0, 1, 2, 3, 4):
        raise InvalidArgumentError(f"channels must be 0, 1, 2, 3, or 4, got {channels}")
    s, nch, depth, alpha, filler = read(data)
    want = channels or nch
    color = s.shape[2] >= 3
    if want in (1, 2) and color:
        g = _rgb_to_gray(s[..., :3])[..., None]
        s = np.concatenate([g, s[..., 3:]], axis=2) if alpha else g
    elif want in (3, 4) and not color:
        s = np.concatenate([np.repeat(s[..., :1], 3, axis=2), s[..., 1:]], axis=2)
    base = 1 if want in (1, 2) else 3
    if want == base and alpha:
        s = s[..., :base]
    elif want == base + 1 and not alpha:
        fill = 65535 if depth == 16 else filler
        s = np.concatenate([s, np.full(s.shape[:2] + (1,), fill, dtype=s.dtype)], axis=2)
    if sixteen:
        return s.astype(np.uint16) * 257 if depth == 8 else s.astype(np.uint16)
    if depth == 16:   # libpng's png_set_strip_16: the high byte
        return (s >> 8).astype(np.uint8)
    return np.ascontiguousarray(s, dtype=np.uint8)


def _chunk(typ: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + typ + body + struct.pack(">I", zlib.crc32(typ + body) & 0xFFFFFFFF)


def _filter_rows(x: np.ndarray, bpp: int) -> np.ndarray:
    """Each row filtered with the filter of smallest sum of absolute (signed) differences, as
    libpng's default heuristic: [h, 1 + rowbytes]."""
    h, n = x.shape
    a = np.zeros_like(x)
    a[:, bpp:] = x[:, :-bpp]
    b = np.zeros_like(x)
    b[1:] = x[:-1]
    c = np.zeros_like(x)
    c[1:, bpp:] = x[:-1, :-bpp]
    ai, bi, ci = a.astype(np.int32), b.astype(np.int32), c.astype(np.int32)
    p = ai + bi - ci
    pa, pb, pc = np.abs(p - ai), np.abs(p - bi), np.abs(p - ci)
    pred = np.where((pa <= pb) & (pa <= pc), ai, np.where(pb <= pc, bi, ci))
    cands = np.stack([x, x - a, x - b, (x.astype(np.int32) - ((ai + bi) >> 1)).astype(np.uint8),
                      (x.astype(np.int32) - pred).astype(np.uint8)])
    cost = np.abs(cands.astype(np.int8).astype(np.int32)).sum(axis=2)
    best = cost.argmin(axis=0)
    rows = cands[best, np.arange(h)]
    return np.concatenate([best.astype(np.uint8)[:, None], rows], axis=1)


def encode(image: np.ndarray, compression: int = -1) -> bytes:
    """A PNG of an [h, w, c] uint8/uint16 image (c in 1..4: gray, gray+alpha, RGB, RGBA)."""
    if image.ndim != 3 or image.shape[2] not in (1, 2, 3, 4):
        raise InvalidArgumentError(f"image must be 3-dimensional with 1 to 4 channels, got shape {image.shape}")
    if not -1 <= compression <= 9:
        raise InvalidArgumentError(f"compression should be in [-1,9], got {compression}")
    h, w, c = image.shape
    if h == 0 or w == 0 or h >= (1 << 31) or w >= (1 << 31):
        raise InvalidArgumentError(f"encode_png: bad image size {h}x{w}")
    sixteen = image.dtype == np.uint16
    ctype = {1: 0, 2: 4, 3: 2, 4: 6}[c]
    if sixteen:
        x = image.astype(">u2").view(np.uint8).reshape(h, w * c * 2)
    else:
        x = np.ascontiguousarray(image, dtype=np.uint8).reshape(h, w * c)
    bpp = c * (2 if sixteen else 1)
    raw = _filter_rows(x, bpp).tobytes()
    ihdr = struct.pack(">IIBBBBB", w, h, 16 if sixteen else 8, ctype, 0, 0, 0)
    return (SIGNATURE + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", zlib.compress(raw, compression))
            + _chunk(b"IEND", b""))
