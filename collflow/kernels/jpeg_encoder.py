"""The JPEG encoder of tf.image.encode_jpeg: baseline sequential Huffman JPEG (ITU T.81), the
Annex K quantization tables scaled by quality as libjpeg does, written on NumPy.  The decoder is
kernels/jpeg_codec.py."""
from __future__ import annotations

import struct
from typing import List, Tuple

import numpy as np

from ..errors import InvalidArgumentError
from .jpeg_codec import ZIGZAG

_STD_LUMA_Q = np.array([
    16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55, 14, 13, 16, 24, 40, 57, 69, 56,
    14, 17, 22, 29, 51, 87, 80, 62, 18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92,
    49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99], dtype=np.int64)
_STD_CHROMA_Q = np.array([
    17, 18, 24, 47, 99, 99, 99, 99, 18, 21, 26, 66, 99, 99, 99, 99, 24, 26, 56, 99, 99, 99, 99, 99,
    47, 66, 99, 99, 99, 99, 99, 99] + [99] * 32, dtype=np.int64)
# (counts of codes of lengths 1..16, symbols): T.81 Tables K.3-K.6
_DC_LUMA = ([0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0], list(range(12)))
_DC_CHROMA = ([0, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0], list(range(12)))
_AC_LUMA = ([0, 2, 1, 3, 3, 2, 4, 3, 5, 5, 4, 4, 0, 0, 1, 0x7D], list(bytes.fromhex(
    "01020300041105122131410613516107227114328191a1082342b1c11552d1f02433627282090a161718191a25262728292a3435"
    "363738393a434445464748494a535455565758595a636465666768696a737475767778797a838485868788898a92939495969798"
    "999aa2a3a4a5a6a7a8a9aab2b3b4b5b6b7b8b9bac2c3c4c5c6c7c8c9cad2d3d4d5d6d7d8d9dae1e2e3e4e5e6e7e8e9eaf1f2f3f4"
    "f5f6f7f8f9fa")))
_AC_CHROMA = ([0, 2, 1, 2, 4, 4, 3, 4, 7, 5, 4, 4, 0, 1, 2, 0x77], list(bytes.fromhex(
    "00010203110405213106124151076171132232810814429" "1a1b1c109233352f0156272d10a162434e125f11718191a26272829"
    "2a35363738393a434445464748494a535455565758595a636465666768696a737475767778797a82838485868788898a92939495"
    "969798999aa2a3a4a5a6a7a8a9aab2b3b4b5b6b7b8b9bac2c3c4c5c6c7c8c9cad2d3d4d5d6d7d8d9dae2e3e4e5e6e7e8e9eaf2f3"
    "f4f5f6f7f8f9fa")))


def _quality_table(base: np.ndarray, quality: int) -> np.ndarray:
    q = max(1, min(100, quality))
    scale = 5000 // q if q < 50 else 200 - 2 * q
    return np.clip((base * scale + 50) // 100, 1, 255)


def _codes(spec: Tuple[List[int], List[int]]) -> Tuple[np.ndarray, np.ndarray]:
    counts, symbols = spec
    code_of = np.zeros(256, dtype=np.int64)
    len_of = np.zeros(256, dtype=np.int64)
    code = 0
    k = 0
    for length in range(1, 17):
        for _ in range(counts[length - 1]):
            code_of[symbols[k]] = code
            len_of[symbols[k]] = length
            code += 1
            k += 1
        code <<= 1
    return code_of, len_of


_DCT = np.array([[(np.sqrt(0.125) if u == 0 else 0.5) * np.cos((2 * x + 1) * u * np.pi / 16) for x in range(8)]
                 for u in range(8)])


def _fdct_quant(plane: np.ndarray, q: np.ndarray) -> np.ndarray:
    """[H, W] samples (multiples of 8), q in natural order -> quantized coefficients [by, bx, 64]
    in zigzag order."""
    h, w = plane.shape
    blocks = plane.reshape(h // 8, 8, w // 8, 8).transpose(0, 2, 1, 3).astype(np.float64) - 128.0
    coef = np.einsum("ux,abxy,vy->abuv", _DCT, blocks, _DCT).reshape(h // 8, w // 8, 64)
    return np.round(coef / q).astype(np.int64)[:, :, ZIGZAG]


def _pad_plane(p: np.ndarray, h: int, w: int) -> np.ndarray:
    return np.pad(p, ((0, h - p.shape[0]), (0, w - p.shape[1])), mode="edge")


def _pack(codes: List[np.ndarray], lens: List[np.ndarray]) -> bytes:
    """The bit strings (code, length) concatenated, padded with 1-bits, 0xFF stuffed."""
    c = np.concatenate(codes) if codes else np.zeros(0, np.int64)
    ln = np.concatenate(lens) if lens else np.zeros(0, np.int64)
    keep = ln > 0
    c, ln = c[keep], ln[keep]
    total = int(ln.sum())
    if total == 0:
        return b""
    idx = np.repeat(np.arange(len(ln)), ln)
    start = np.repeat(np.cumsum(ln) - ln, ln)
    bitpos = np.arange(total) - start
    bits = (c[idx] >> (ln[idx] - 1 - bitpos)) & 1
    pad = (-total) % 8
    bits = np.concatenate([bits, np.ones(pad, np.int64)]).astype(np.uint8)
    return np.packbits(bits).tobytes().replace(b"\xff", b"\xff\x00")


def encode(image: np.ndarray, quality: int = 95, chroma: Tuple[int, int] = (2, 2), grayscale: bool = False,
           restart_interval: int = 0, density_unit: int = 1, x_density: int = 300, y_density: int = 300,
           xmp_metadata: bytes = b"") -> bytes:
    """A baseline JPEG of an [h, w, 1 or 3] uint8 image.  chroma: the luma's (h, v) sampling
    factors over the chroma's ((2, 2): 4:2:0, (2, 1): 4:2:2, (1, 1): 4:4:4)."""
    h, w, c = image.shape
    if h == 0 or w == 0 or h > 65535 or w > 65535:
        raise InvalidArgumentError(f"encode_jpeg: bad image size {h}x{w}")
    x = image.astype(np.int64)
    if c == 3 and not grayscale:
        r, g, b = x[..., 0], x[..., 1], x[..., 2]
        # libjpeg's fixed-point RGB->YCbCr (jccolor.c)
        y = (19595 * r + 38470 * g + 7471 * b + 32768) >> 16
        cb = (-11059 * r - 21709 * g + 32768 * b + (128 << 16) + 32767) >> 16
        cr = (32768 * r - 27439 * g - 5329 * b + (128 << 16) + 32767) >> 16
        planes = [y, cb, cr]
        hs, vs = chroma
        factors = [(hs, vs), (1, 1), (1, 1)]
    else:
        if c == 3:
            x = (19595 * x[..., 0] + 38470 * x[..., 1] + 7471 * x[..., 2] + 32768) >> 16
        else:
            x = x[..., 0]
        planes = [x]
        hs = vs = 1
        factors = [(1, 1)]
    mw, mh = 8 * hs, 8 * vs
    mcux, mcuy = -(-w // mw), -(-h // mh)
    qt = [_quality_table(_STD_LUMA_Q, quality), _quality_table(_STD_CHROMA_Q, quality)]
    comps = []
    for i, (p, (fh, fv)) in enumerate(zip(planes, factors)):
        if i:   # chroma: averaged over hs x vs cells of the edge-padded full plane
            full = _pad_plane(p, mcuy * mh, mcux * mw)
            sub = full.reshape(mcuy * mh // vs, vs, mcux * mw // hs, hs).mean(axis=(1, 3))
            plane = np.floor(sub + 0.5)
        else:
            plane = _pad_plane(p, mcuy * mh, mcux * mw)
        qz = qt[1 if i else 0]
        comps.append(_fdct_quant(plane, qz))
    dc_tabs = [_codes(_DC_LUMA), _codes(_DC_CHROMA)]
    ac_tabs = [_codes(_AC_LUMA), _codes(_AC_CHROMA)]
    # the blocks in scan order: per MCU, each component's fh x fv blocks
    order_blocks = []
    order_comp = []
    for i, (co, (fh, fv)) in enumerate(zip(comps, factors)):
        by, bx = co.shape[:2]
        blk = co.reshape(mcuy, fv, mcux, fh, 64).transpose(0, 2, 1, 3, 4).reshape(mcuy * mcux, fh * fv, 64)
        order_blocks.append(blk)
        order_comp.append(np.full(fh * fv, i))
    allb = np.concatenate(order_blocks, axis=1)           # [mcus, blocks per mcu, 64]
    comp_of = np.concatenate(order_comp)
    nmcu = allb.shape[0]
    per = restart_interval if restart_interval else nmcu
    out = bytearray()
    for r0 in range(0, nmcu, per):
        seg = allb[r0:r0 + per]
        dc = seg[:, :, 0].copy()
        diffs = np.empty_like(dc)
        for j in range(dc.shape[1]):   # DC predictions per component, within the interval
            ci = comp_of[j]
            cols = np.nonzero(comp_of == ci)[0]
            flat = dc[:, cols].reshape(-1)
            d = np.diff(np.concatenate([[0], flat]))
            diffs[:, cols] = d.reshape(-1, len(cols))
        codes: List[np.ndarray] = []
        lens: List[np.ndarray] = []
        for m in range(seg.shape[0]):
            for j in range(seg.shape[1]):
                t = 1 if comp_of[j] else 0
                dcode, dlen = dc_tabs[t]
                acode, alen = ac_tabs[t]
                v = int(diffs[m, j])
                s = abs(v).bit_length()
                bits = v if v >= 0 else v + (1 << s) - 1
                cs = [int(dcode[s]), bits]
                ls = [int(dlen[s]), s]
                ac = seg[m, j, 1:]
                nz = np.nonzero(ac)[0]
                last = -1
                for k in nz.tolist():
                    run = k - last - 1
                    while run > 15:
                        cs.append(int(acode[0xF0]))
                        ls.append(int(alen[0xF0]))
                        run -= 16
                    v = int(ac[k])
                    s = int(abs(v)).bit_length()
                    sym = (run << 4) | s
                    cs += [int(acode[sym]), v if v >= 0 else v + (1 << s) - 1]
                    ls += [int(alen[sym]), s]
                    last = k
                if last != 62:
                    cs.append(int(acode[0]))
                    ls.append(int(alen[0]))
                codes.append(np.array(cs, dtype=np.int64))
                lens.append(np.array(ls, dtype=np.int64))
        out += _pack(codes, lens)
        if restart_interval and r0 + per < nmcu:
            out += bytes([0xFF, 0xD0 + (r0 // per) % 8])

    def seg_(marker: int, body: bytes) -> bytes:
        return bytes([0xFF, marker]) + struct.pack(">H", len(body) + 2) + body

    hdr = bytearray(b"\xff\xd8")
    hdr += seg_(0xE0, b"JFIF\x00\x01\x01" + struct.pack(">BHHBB", density_unit, x_density, y_density, 0, 0))
    if xmp_metadata:
        hdr += seg_(0xE1, b"http://ns.adobe.com/xap/1.0/\x00" + xmp_metadata)
    for i in range(2 if len(planes) == 3 else 1):
        hdr += seg_(0xDB, bytes([i]) + bytes(qt[i][ZIGZAG].astype(np.uint8).tolist()))
    sof = struct.pack(">BHHB", 8, h, w, len(planes))
    for i, (fh, fv) in enumerate(factors):
        sof += bytes([i + 1, (fh << 4) | fv, 1 if i else 0])
    hdr += seg_(0xC0, sof)
    for tc, th, spec in ((0, 0, _DC_LUMA), (1, 0, _AC_LUMA), (0, 1, _DC_CHROMA), (1, 1, _AC_CHROMA)):
        if th and len(planes) == 1:
            continue
        hdr += seg_(0xC4, bytes([(tc << 4) | th] + spec[0] + spec[1]))
    if restart_interval:
        hdr += seg_(0xDD, struct.pack(">H", restart_interval))
    sos = bytes([len(planes)])
    for i in range(len(planes)):
        sos += bytes([i + 1, 0x11 if i else 0x00])
    hdr += seg_(0xDA, sos + b"\x00\x3f\x00")
    return bytes(hdr) + bytes(out) + b"\xff\xd9"
