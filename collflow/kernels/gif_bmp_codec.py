"""GIF (GIF89a/87a, LZW) and BMP decoders on NumPy for tf.image.decode_gif / decode_bmp,
written from the GIF89a specification and Microsoft's BMP format description.

decode_gif keeps TensorFlow's frame semantics: the canvas is as wide and high as the largest
frame (TF's, not the logical screen's size), every frame starts as a copy of the previous
frame (the first as black), the frame's rectangle is drawn over it, a pixel of the frame's
transparent color index keeps what is under it (black on the first frame); disposal methods
are not applied (TF ignores them too).
"""
from __future__ import annotations

import struct
from typing import List, Optional

import numpy as np

from ..errors import InvalidArgumentError


def is_gif(data: bytes) -> bool:
    return data[:6] in (b"GIF87a", b"GIF89a")


def is_bmp(data: bytes) -> bool:
    return data[:2] == b"BM"


def _lzw(data: bytes, min_size: int, npix: int) -> bytes:
    """GIF's variable-length LZW: the first npix indices (fewer when the data ends early)."""
    if not 1 <= min_size <= 11:
        raise InvalidArgumentError(f"Invalid GIF data: bad LZW minimum code size {min_size}")
    clear = 1 << min_size
    eoi = clear + 1
    # the table as (prefix code, last byte, first byte, length) built lazily into byte strings
    table: List[bytes] = [bytes([i]) for i in range(clear)] + [b"", b""]
    size = min_size + 1
    out = bytearray()
    prev: Optional[bytes] = None
    acc = 0
    nbits = 0
    for byte in data:
        acc |= byte << nbits
        nbits += 8
        while nbits >= size:
            code = acc & ((1 << size) - 1)
            acc >>= size
            nbits -= size
            if code == clear:
                del table[clear + 2:]
                size = min_size + 1
                prev = None
                continue
            if code == eoi:
                return bytes(out[:npix])
            n = len(table)
            if code < n:
                entry = table[code]
                if prev is not None and n < 4096:
                    table.append(prev + entry[:1])
            elif code == n and prev is not None:
                entry = prev + prev[:1]
                if n < 4096:
                    table.append(entry)
            else:
                raise InvalidArgumentError("Invalid GIF data: bad LZW code")
            out += entry
            prev = entry
            if len(table) == (1 << size) and size < 12:
                size += 1
            if len(out) >= npix:
                return bytes(out[:npix])
    return bytes(out[:npix])


def _sub_blocks(data: bytes, pos: int) -> tuple:
    parts = []
    n = len(data)
    while True:
        if pos >= n:
            raise InvalidArgumentError("Invalid GIF data: truncated data sub-blocks")
        ln = data[pos]
        pos += 1
        if ln == 0:
            return b"".join(parts), pos
        if pos + ln > n:
            raise InvalidArgumentError("Invalid GIF data: truncated data sub-blocks")
        parts.append(data[pos:pos + ln])
        pos += ln


def _color_table(data: bytes, pos: int, flags: int) -> tuple:
    size = 3 << ((flags & 7) + 1)
    if pos + size > len(data):
        raise InvalidArgumentError("Invalid GIF data: truncated color table")
    return np.frombuffer(data[pos:pos + size], dtype=np.uint8).reshape(-1, 3), pos + size


def decode_gif(data: bytes) -> np.ndarray:
    """All frames [frames, h, w, 3] uint8."""
    if not is_gif(data):
        raise InvalidArgumentError("Invalid GIF data (bad signature)")
    if len(data) < 13:
        raise InvalidArgumentError("Invalid GIF data: truncated header")
    width, height, flags = struct.unpack("<HHB", data[6:11])
    pos = 13
    gct = None
    if flags & 0x80:
        gct, pos = _color_table(data, pos, flags)
    if width == 0 or height == 0:
        raise InvalidArgumentError("Invalid GIF data: empty logical screen")
    images = []    # (left, top, indices [fh, fw], color map, transparent index)
    transparent = -1
    n = len(data)
    while True:
        if pos >= n:
            break   # no trailer: what was read (giflib's DGifSlurp also stops at the end)
        b = data[pos]
        pos += 1
        if b == 0x3B:
            break
        if b == 0x21:
            if pos >= n:
                raise InvalidArgumentError("Invalid GIF data: truncated extension")
            label = data[pos]
            body, pos = _sub_blocks(data, pos + 1)
            if label == 0xF9 and len(body) >= 4:
                transparent = body[3] if body[0] & 1 else -1
            continue
        if b != 0x2C:
            raise InvalidArgumentError(f"Invalid GIF data: unexpected block 0x{b:02x}")
        if pos + 9 > n:
            raise InvalidArgumentError("Invalid GIF data: truncated image descriptor")
        left, top, fw, fh, iflags = struct.unpack("<HHHHB", data[pos:pos + 9])
        pos += 9
        cmap = gct
        if iflags & 0x80:
            cmap, pos = _color_table(data, pos, iflags)
        if pos >= n:
            raise InvalidArgumentError("Invalid GIF data: truncated image data")
        min_size = data[pos]
        body, pos = _sub_blocks(data, pos + 1)
        npix = fw * fh
        idx = np.frombuffer(_lzw(body, min_size, npix), dtype=np.uint8)
        if len(idx) < npix:   # giflib fails on short image data
            raise InvalidArgumentError("Invalid GIF data: the image data is truncated")
        idx = idx.reshape(fh, fw) if npix else np.zeros((fh, fw), np.uint8)
        if iflags & 0x40 and fh:   # interlaced rows: passes 0::8, 4::8, 2::4, 1::2
            order = np.concatenate([np.arange(0, fh, 8), np.arange(4, fh, 8), np.arange(2, fh, 4),
                                    np.arange(1, fh, 2)])
            deint = np.empty_like(idx)
            deint[order] = idx
            idx = deint
        images.append((left, top, idx, cmap, transparent))
        transparent = -1   # a graphic control extension applies to the next image only
    # TF's canvas: the largest frame's width and height (not the logical screen's)
    width = max((im[2].shape[1] for im in images), default=0)
    height = max((im[2].shape[0] for im in images), default=0)
    frames: List[np.ndarray] = []
    for left, top, idx, cmap, transparent in images:
        if cmap is None:
            raise InvalidArgumentError("missing color map")
        fh, fw = idx.shape
        canvas = frames[-1].copy() if frames else np.zeros((height, width, 3), dtype=np.uint8)
        x0, y0 = min(left, width), min(top, height)
        x1, y1 = min(left + fw, width), min(top + fh, height)
        sub = idx[y0 - top:y1 - top, x0 - left:x1 - left]
        if sub.size:
            opaque = sub != transparent
            if int(sub[opaque].max(initial=0)) >= len(cmap):
                raise InvalidArgumentError(f"found color index {int(sub[opaque].max())} outside of color map "
                                           f"range {len(cmap)}")
            region = canvas[y0:y1, x0:x1]
            region[opaque] = cmap[sub[opaque]]
            if not frames:
                region[~opaque] = 0
        frames.append(canvas)
    if not frames:
        raise InvalidArgumentError("Invalid GIF data: no frames in the GIF")
    return np.stack(frames)


def decode_bmp(data: bytes, channels: int = 0) -> np.ndarray:
    """An uncompressed 8-bit (gray, as TF), 24-bit or 32-bit BMP as [h, w, channels] uint8
    (channels 0: 1, 3 or 4 by the bit depth; 3 drops the alpha; 4 adds an opaque one)."""
    if channels not in (0, 3, 4):
        raise InvalidArgumentError(f"`channels` must be 0, 3 or 4 for BMP, but got {channels}")
    if len(data) < 34:
        raise InvalidArgumentError("Incomplete bmp content, requires at least 32 bytes to find the header size, "
                                   f"width, height, and bpp, got {len(data)} bytes")
    offset = struct.unpack("<I", data[10:14])[0]
    hsize = struct.unpack("<I", data[14:18])[0]
    if hsize == 12:
        width, height = struct.unpack("<hh", data[18:22])
        bpp = struct.unpack("<H", data[24:26])[0]
        compression = 0
    else:
        width, height = struct.unpack("<ii", data[18:26])
        bpp = struct.unpack("<H", data[28:30])[0]
        compression = struct.unpack("<I", data[30:34])[0] if len(data) >= 34 else 0
    if bpp not in (8, 24, 32):
        raise InvalidArgumentError(f"Number of channels inherent in the image must be 1, 3 or 4, was {bpp // 8}")
    if compression not in (0, 3):   # BI_RGB (BI_BITFIELDS: TF reads the standard BGRA order)
        raise InvalidArgumentError(f"decode_bmp: compressed BMP (compression {compression}) is not supported")
    if width <= 0 or height == 0:
        raise InvalidArgumentError(f"decode_bmp: bad image size {width}x{height}")
    top_down = height < 0
    h = abs(height)
    nch = bpp // 8
    rowbytes = (width * nch + 3) // 4 * 4
    if offset + rowbytes * (h - 1) + width * nch > len(data) or offset < 14:
        raise InvalidArgumentError("Invalid BMP data: the pixel data is truncated")
    need = rowbytes * h
    buf = data[offset:offset + need]
    if len(buf) < need:
        buf = buf + b"\x00" * (need - len(buf))
    px = np.frombuffer(buf, dtype=np.uint8).reshape(h, rowbytes)[:, :width * nch].reshape(h, width, nch)
    if not top_down:
        px = px[::-1]
    if nch == 1:
        img = px
    else:
        img = np.concatenate([px[:, :, 2::-1], px[:, :, 3:]], axis=2)
    want = channels or nch
    if img.shape[2] == 1 and want >= 3:
        img = np.repeat(img, 3, axis=2)
    if want == 3:
        img = img[:, :, :3]
    elif want == 4 and img.shape[2] == 3:
        img = np.concatenate([img, np.full(img.shape[:2] + (1,), 255, np.uint8)], axis=2)
    return np.ascontiguousarray(img)
