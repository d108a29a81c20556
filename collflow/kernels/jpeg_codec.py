"""A JPEG decoder on NumPy, written from ITU T.81 (baseline and extended sequential Huffman
JPEG, progressive Huffman JPEG) for tf.image.decode_jpeg; the encoder is kernels/jpeg_encoder.py.

The decoder follows the arithmetic of libjpeg-turbo, which TensorFlow uses, so that the pixels
match TF's: the integer IDCTs (ISLOW, "INTEGER_ACCURATE"; IFAST, "INTEGER_FAST", TF's default),
the reduced 4x4/2x2/1x1 IDCTs of decode_jpeg's ratio (with libjpeg-turbo's choice of chroma
IDCT sizes), the fancy (triangular) h2v1/h2v2/h1v2 upsampling with its rounding biases, and the fixed-point
YCbCr->RGB conversion with its table rounding.  Huffman decoding is sequential Python over a
16-bit lookup table; the IDCT, upsampling and color conversion are vectorized over all blocks.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ..errors import InvalidArgumentError, UnimplementedError

# the zigzag order: ZIGZAG[k] is the natural (row-major) index of the k-th coefficient
ZIGZAG = np.array([
    0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6, 7, 14,
    21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53,
    60, 61, 54, 47, 55, 62, 63], dtype=np.int64)

_SOF_NAMES = {0xC3: "lossless", 0xC5: "differential sequential", 0xC6: "differential progressive",
              0xC7: "differential lossless", 0xC9: "arithmetic-coded sequential",
              0xCA: "arithmetic-coded progressive", 0xCB: "arithmetic-coded lossless",
              0xCD: "differential arithmetic-coded sequential", 0xCE: "differential arithmetic-coded progressive",
              0xCF: "differential arithmetic-coded lossless"}


def _bad(msg: str) -> InvalidArgumentError:
    return InvalidArgumentError(f"Invalid JPEG data or crop window: {msg}")


def is_jpeg(data: bytes) -> bool:
    """TF's IsJpeg: the data starts with the SOI marker and a marker byte."""
    return data[:3] == b"\xff\xd8\xff"


class _Frame:
    def __init__(self) -> None:
        self.progressive = False
        self.height = 0
        self.width = 0
        self.comps: List[Dict[str, Any]] = []
        self.hmax = 1
        self.vmax = 1
        self.mcux = 0
        self.mcuy = 0


def _huff_lookup(counts: List[int], symbols: List[int]) -> List[int]:
    """A 65536-entry table: for the next 16 bits, (code length << 8) | symbol (0: no code)."""
    look = np.zeros(65536, dtype=np.int32)
    code = 0
    k = 0
    for length in range(1, 17):
        for _ in range(counts[length - 1]):
            if code >= (1 << length):
                raise _bad("bad Huffman table")
            start = code << (16 - length)
            look[start:start + (1 << (16 - length))] = (length << 8) | symbols[k]
            k += 1
            code += 1
        code <<= 1
    return look.tolist()


def _segments(data: bytes, pos: int) -> Tuple[List[bytes], int]:
    """The entropy-coded data from pos, split at restart markers, byte stuffing removed; and
    the position of the marker that ends it."""
    segs = []
    start = pos
    n = len(data)
    i = pos
    while True:
        i = data.find(b"\xff", i)
        if i < 0 or i + 1 >= n:
            segs.append(data[start:].replace(b"\xff\x00", b"\xff"))
            return segs, n
        m = data[i + 1]
        if m == 0x00 or m == 0xFF:
            i += 1
            continue
        if 0xD0 <= m <= 0xD7:
            segs.append(data[start:i].replace(b"\xff\x00", b"\xff"))
            i += 2
            start = i
            continue
        segs.append(data[start:i].replace(b"\xff\x00", b"\xff"))
        return segs, i


def _windows(seg: bytes) -> List[int]:
    """w[i]: the 32 bits starting at byte i (zero bits past the end, as libjpeg pads)."""
    b = np.frombuffer(seg + b"\x00" * 8, dtype=np.uint8).astype(np.int64)
    return ((b[:-7] << 24) | (b[1:-6] << 16) | (b[2:-5] << 8) | b[3:-4]).tolist()


class _Truncated(Exception):
    pass


def _origins(fr: _Frame, c: Dict[str, Any], single: bool) -> Tuple[List[int], List[int]]:
    """Per MCU of a scan, the index of its first coefficient in the component's list; and the
    offsets of the MCU's blocks from it."""
    cbw = c["bw"]
    if single:
        bw = (c["cw"] + 7) // 8
        n = bw * ((c["ch"] + 7) // 8)
        m = np.arange(n)
        return (((m // bw) * cbw + m % bw) * 64).tolist(), [0]
    m = np.arange(fr.mcux * fr.mcuy)
    org = (((m // fr.mcux) * c["v"]) * cbw + (m % fr.mcux) * c["h"]) * 64
    return org.tolist(), [(dv * cbw + dh) * 64 for dv in range(c["v"]) for dh in range(c["h"])]


def _decode_baseline_scan(fr: _Frame, scomps: List[Dict[str, Any]], segs: List[bytes], restart: int,
                          coefs: List[List[int]]) -> bool:
    """Decodes one sequential scan into the components' zigzag-ordered coefficient lists;
    whether its data ran out."""
    single = len(scomps) == 1
    units = []
    for c in scomps:
        org, offs = _origins(fr, c, single)
        units.append((c["dc"], c["ac"], coefs[c["idx"]], org, offs))
    total = len(units[0][3])
    nu = len(units)
    per = restart if restart else total
    short = False
    for ri in range(-(-total // per)):
        # an interval whose data ran out: the MCU where it did is decoded with zero bits, the
        # rest of the interval left zero (libjpeg's insufficient_data), and each later interval
        # (after the fake restart libjpeg resyncs to) gets its first MCU from zero bits
        seg = segs[ri] if ri < len(segs) else b""
        mcu = ri * per
        w = _windows(seg)
        limit = 8 * len(seg)
        p = 0
        preds = [0] * nu
        end = min(total, mcu + per)
        while mcu < end:
            for ui in range(nu):
                dc, ac, co, org, offs = units[ui]
                o = org[mcu]
                for off in offs:
                    base = o + off
                    e = dc[(w[p >> 3] >> (16 - (p & 7))) & 0xFFFF]
                    if not e:
                        raise _bad("bad Huffman code")
                    p += e >> 8
                    s = e & 255
                    if s:
                        v = (w[p >> 3] >> (32 - (p & 7) - s)) & ((1 << s) - 1)
                        p += s
                        if v < (1 << (s - 1)):
                            v -= (1 << s) - 1
                        preds[ui] += v
                    co[base] = preds[ui]
                    k = 1
                    while k < 64:
                        e = ac[(w[p >> 3] >> (16 - (p & 7))) & 0xFFFF]
                        if not e:
                            raise _bad("bad Huffman code")
                        p += e >> 8
                        rs = e & 255
                        s = rs & 15
                        if s:
                            k += rs >> 4
                            if k > 63:
                                raise _bad("bad coefficient run")
                            v = (w[p >> 3] >> (32 - (p & 7) - s)) & ((1 << s) - 1)
                            p += s
                            if v < (1 << (s - 1)):
                                v -= (1 << s) - 1
                            co[base + k] = v
                            k += 1
                        elif rs == 0xF0:
                            k += 16
                        else:
                            break
            mcu += 1
            if p > limit:
                short = True
                break
    return short


def _decode_progressive_scan(fr: _Frame, scomps: List[Dict[str, Any]], segs: List[bytes], restart: int,
                             coefs: List[List[int]], ss: int, se: int, ah: int, al: int) -> bool:
    """One progressive scan (T.81 G.1.2): DC first/refinement (interleaved) or AC
    first/refinement of one component, with EOB runs."""
    single = len(scomps) == 1
    units = []
    for c in scomps:
        org, offs = _origins(fr, c, single)
        units.append((c, org, offs))
    total = len(units[0][1])
    if ss == 0 and (se != 0):
        raise _bad("bad progressive scan parameters")
    if ss > 0 and not single:
        raise _bad("progressive AC scans must have one component")
    per = restart if restart else total
    p1 = 1 << al
    m1 = -1 << al
    short = False
    for ri in range(-(-total // per)):
        seg = segs[ri] if ri < len(segs) else b""
        mcu = ri * per
        w = _windows(seg)
        limit = 8 * len(seg)
        p = 0
        preds = [0] * len(units)
        eobrun = 0
        end = min(total, mcu + per)
        while mcu < end:
            for ui, (c, org, offs) in enumerate(units):
                co = coefs[c["idx"]]
                for off in offs:
                    base = org[mcu] + off
                    if ss == 0:
                        if ah == 0:   # DC first
                            e = c["dc"][(w[p >> 3] >> (16 - (p & 7))) & 0xFFFF]
                            if not e:
                                raise _bad("bad Huffman code")
                            p += e >> 8
                            s = e & 255
                            if s:
                                v = (w[p >> 3] >> (32 - (p & 7) - s)) & ((1 << s) - 1)
                                p += s
                                if v < (1 << (s - 1)):
                                    v -= (1 << s) - 1
                                preds[ui] += v
                            co[base] = preds[ui] << al
                        else:         # DC refinement: one bit
                            if (w[p >> 3] >> (31 - (p & 7))) & 1:
                                co[base] |= p1
                            p += 1
                        continue
                    ac = c["ac"]
                    if ah == 0:       # AC first
                        if eobrun:
                            eobrun -= 1
                            continue
                        k = ss
                        while k <= se:
                            e = ac[(w[p >> 3] >> (16 - (p & 7))) & 0xFFFF]
                            if not e:
                                raise _bad("bad Huffman code")
                            p += e >> 8
                            rs = e & 255
                            r = rs >> 4
                            s = rs & 15
                            if s:
                                k += r
                                if k > 63:
                                    raise _bad("bad coefficient run")
                                v = (w[p >> 3] >> (32 - (p & 7) - s)) & ((1 << s) - 1)
                                p += s
                                if v < (1 << (s - 1)):
                                    v -= (1 << s) - 1
                                co[base + k] = v << al
                                k += 1
                            elif r < 15:
                                eobrun = (1 << r) - 1
                                if r:
                                    eobrun += (w[p >> 3] >> (32 - (p & 7) - r)) & ((1 << r) - 1)
                                    p += r
                                break
                            else:
                                k += 16
                        continue
                    # AC refinement (T.81 G.1.2.3)
                    k = ss
                    if not eobrun:
                        while k <= se:
                            e = ac[(w[p >> 3] >> (16 - (p & 7))) & 0xFFFF]
                            if not e:
                                raise _bad("bad Huffman code")
                            p += e >> 8
                            rs = e & 255
                            r = rs >> 4
                            s = rs & 15
                            v = 0
                            if s:
                                if s != 1:
                                    raise _bad("bad progressive refinement")
                                v = p1 if (w[p >> 3] >> (31 - (p & 7))) & 1 else m1
                                p += 1
                            elif r != 15:
                                eobrun = 1 << r
                                if r:
                                    eobrun += (w[p >> 3] >> (32 - (p & 7) - r)) & ((1 << r) - 1)
                                    p += r
                                break
                            while k <= se:
                                i = base + k
                                if co[i]:
                                    if (w[p >> 3] >> (31 - (p & 7))) & 1:
                                        if (co[i] & p1) == 0:
                                            co[i] += p1 if co[i] >= 0 else m1
                                    p += 1
                                else:
                                    if r == 0:
                                        break
                                    r -= 1
                                k += 1
                            if v and k <= se:
                                co[base + k] = v
                            k += 1
                    if eobrun:
                        while k <= se:
                            i = base + k
                            if co[i]:
                                if (w[p >> 3] >> (31 - (p & 7))) & 1:
                                    if (co[i] & p1) == 0:
                                        co[i] += p1 if co[i] >= 0 else m1
                                p += 1
                            k += 1
                        eobrun -= 1
            mcu += 1
            if p > limit:
                short = True
                break
    return short


def parse(data: bytes, shape_only: bool = False) -> Tuple[_Frame, Any, int, Dict[int, np.ndarray]]:
    """Reads the markers and decodes the scans: (frame, per-component coefficient arrays
    [bh, bw, 64] in natural order (dequantized later), Adobe transform or -1, quantization
    tables).  Truncated data raises _Truncated carrying the same four."""
    if not is_jpeg(data):
        raise InvalidArgumentError("Not a JPEG file (no SOI marker)")
    n = len(data)
    pos = 2
    qts: Dict[int, np.ndarray] = {}
    dcs: Dict[int, List[int]] = {}
    acs: Dict[int, List[int]] = {}
    fr: Optional[_Frame] = None
    coefs: Optional[List[List[int]]] = None
    restart = 0
    adobe = -1
    truncated = False
    while True:
        # the next marker (fill bytes allowed)
        while pos < n and data[pos] != 0xFF:
            pos += 1      # garbage between markers: libjpeg warns and skips
        while pos < n and data[pos] == 0xFF:
            pos += 1
        if pos >= n:
            if fr is None or shape_only:
                raise _bad("no image data (the JPEG ends before its frame)")
            truncated = True
            break
        m = data[pos]
        pos += 1
        if m == 0xD9:   # EOI
            break
        if 0xD0 <= m <= 0xD7 or m == 0x01:
            continue
        if pos + 2 > n:
            raise _bad("truncated marker segment")
        ln = (data[pos] << 8) | data[pos + 1]
        if ln < 2 or pos + ln > n:
            raise _bad("truncated marker segment")
        seg = data[pos + 2:pos + ln]
        pos += ln
        if m in (0xC0, 0xC1, 0xC2):
            if fr is not None:
                raise _bad("more than one frame")
            fr = _Frame()
            fr.progressive = m == 0xC2
            if len(seg) < 6:
                raise _bad("bad SOF marker")
            prec = seg[0]
            fr.height = (seg[1] << 8) | seg[2]
            fr.width = (seg[3] << 8) | seg[4]
            nc = seg[5]
            if prec != 8:
                raise UnimplementedError(f"decode_jpeg: {prec}-bit samples are not supported (8-bit only)")
            if len(seg) < 6 + 3 * nc or nc not in (1, 3, 4):
                raise _bad("bad SOF marker")
            if fr.width == 0 or fr.height == 0:
                raise _bad("empty image (or a DNL marker, which is not supported)")
            for i in range(nc):
                cid, hv, tq = seg[6 + 3 * i], seg[7 + 3 * i], seg[8 + 3 * i]
                h, v = hv >> 4, hv & 15
                if not (1 <= h <= 4 and 1 <= v <= 4) or tq > 3:
                    raise _bad("bad sampling factors")
                fr.comps.append({"id": cid, "h": h, "v": v, "tq": tq, "idx": i})
            fr.hmax = max(c["h"] for c in fr.comps)
            fr.vmax = max(c["v"] for c in fr.comps)
            fr.mcux = -(-fr.width // (8 * fr.hmax))
            fr.mcuy = -(-fr.height // (8 * fr.vmax))
            for c in fr.comps:
                c["cw"] = -(-fr.width * c["h"] // fr.hmax)
                c["ch"] = -(-fr.height * c["v"] // fr.vmax)
                c["bw"] = fr.mcux * c["h"]
                c["bh"] = fr.mcuy * c["v"]
            if shape_only:
                return fr, None, adobe, qts
            if fr.width * fr.height > (1 << 29):
                raise InvalidArgumentError("decode_jpeg: the image is too large")
            coefs = [[0] * (c["bw"] * c["bh"] * 64) for c in fr.comps]
        elif m in _SOF_NAMES:
            raise UnimplementedError(f"decode_jpeg: {_SOF_NAMES[m]} JPEG is not supported "
                                     "(baseline, extended sequential and progressive Huffman JPEG are)")
        elif m == 0xDB:
            i = 0
            while i < len(seg):
                pq, tq = seg[i] >> 4, seg[i] & 15
                size = 128 if pq else 64
                if tq > 3 or i + 1 + size > len(seg):
                    raise _bad("bad DQT marker")
                if pq:
                    vals = np.frombuffer(seg[i + 1:i + 129], dtype=">u2").astype(np.int64)
                else:
                    vals = np.frombuffer(seg[i + 1:i + 65], dtype=np.uint8).astype(np.int64)
                q = np.zeros(64, dtype=np.int64)
                q[ZIGZAG] = vals
                qts[tq] = q
                i += 1 + size
        elif m == 0xC4:
            i = 0
            while i < len(seg):
                if i + 17 > len(seg):
                    raise _bad("bad DHT marker")
                tc, th = seg[i] >> 4, seg[i] & 15
                counts = list(seg[i + 1:i + 17])
                total = sum(counts)
                if tc > 1 or th > 3 or i + 17 + total > len(seg) or total > 256:
                    raise _bad("bad DHT marker")
                look = _huff_lookup(counts, list(seg[i + 17:i + 17 + total]))
                (acs if tc else dcs)[th] = look
                i += 17 + total
        elif m == 0xDD:
            if len(seg) < 2:
                raise _bad("bad DRI marker")
            restart = (seg[0] << 8) | seg[1]
        elif m == 0xEE:
            if len(seg) >= 12 and seg[:5] == b"Adobe":
                adobe = seg[11]
        elif m == 0xDA:
            if fr is None or coefs is None:
                raise _bad("a scan before the frame header")
            if not seg:
                raise _bad("bad SOS marker")
            ns = seg[0]
            if len(seg) < 4 + 2 * ns or ns < 1:
                raise _bad("bad SOS marker")
            scomps = []
            for i in range(ns):
                cid, t = seg[1 + 2 * i], seg[2 + 2 * i]
                cs = [c for c in fr.comps if c["id"] == cid]
                if not cs:
                    raise _bad("a scan names a component the frame lacks")
                c = cs[0]
                c["dc"] = dcs.get(t >> 4)
                c["ac"] = acs.get(t & 15)
                scomps.append(c)
            ss, se, ahl = seg[1 + 2 * ns], seg[2 + 2 * ns], seg[3 + 2 * ns]
            segs, pos = _segments(data, pos)
            try:
                if fr.progressive:
                    for c in scomps:
                        if (ss == 0 and (ahl >> 4) == 0 and c["dc"] is None) or (ss > 0 and c["ac"] is None):
                            raise _bad("a scan uses an undefined Huffman table")
                    if se > 63 or ss > se:
                        raise _bad("bad progressive scan parameters")
                    short = _decode_progressive_scan(fr, scomps, segs, restart, coefs, ss, se, ahl >> 4, ahl & 15)
                else:
                    for c in scomps:
                        if c["dc"] is None or c["ac"] is None:
                            raise _bad("a scan uses an undefined Huffman table")
                    short = _decode_baseline_scan(fr, scomps, segs, restart, coefs)
            except IndexError:
                short = True
            if short:
                truncated = True
                break
        # APPn, COM and the rest: skipped
    if fr is None or coefs is None:
        raise _bad("no frame")
    out = []
    for c in fr.comps:
        if c["tq"] not in qts:
            raise _bad("a component uses an undefined quantization table")
        zz = np.array(coefs[c["idx"]], dtype=np.int64).reshape(-1, 64)
        nat = np.empty_like(zz)
        nat[:, ZIGZAG] = zz
        out.append(nat.reshape(c["bh"], c["bw"], 64))
    if truncated:
        raise _Truncated(fr, out, adobe, qts)
    return fr, out, adobe, qts


# -- the IDCTs (libjpeg-turbo's jidctint.c and jidctfst.c, vectorized over blocks) --------------

def _descale(x: np.ndarray, n: int) -> np.ndarray:
    return (x + (1 << (n - 1))) >> n


def _range_limit(x: np.ndarray) -> np.ndarray:
    """libjpeg's post-IDCT range limit: the low 10 bits as a signed number, +128, clamped."""
    x = x & 1023
    x = np.where(x >= 512, x - 1024, x)
    return np.clip(x + 128, 0, 255)


def _islow_1d(d: List[np.ndarray], shift_in: int) -> List[np.ndarray]:
    z2, z3 = d[2], d[6]
    z1 = (z2 + z3) * 4433
    tmp2 = z1 + z3 * -15137
    tmp3 = z1 + z2 * 6270
    tmp0 = (d[0] + d[4]) << 13
    tmp1 = (d[0] - d[4]) << 13
    if shift_in:
        tmp0 = tmp0 + (shift_in << 13)
        tmp1 = tmp1 + (shift_in << 13)
    tmp10, tmp13, tmp11, tmp12 = tmp0 + tmp3, tmp0 - tmp3, tmp1 + tmp2, tmp1 - tmp2
    t0, t1, t2, t3 = d[7], d[5], d[3], d[1]
    z1, z2, z3, z4 = t0 + t3, t1 + t2, t0 + t2, t1 + t3
    z5 = (z3 + z4) * 9633
    t0, t1, t2, t3 = t0 * 2446, t1 * 16819, t2 * 25172, t3 * 12299
    z1, z2, z3, z4 = z1 * -7373, z2 * -20995, z3 * -16069, z4 * -3196
    z3 = z3 + z5
    z4 = z4 + z5
    t0 = t0 + z1 + z3
    t1 = t1 + z2 + z4
    t2 = t2 + z2 + z3
    t3 = t3 + z1 + z4
    return [tmp10 + t3, tmp11 + t2, tmp12 + t1, tmp13 + t0, tmp13 - t0, tmp12 - t1, tmp11 - t2, tmp10 - t3]


def idct_islow(coef: np.ndarray, q: np.ndarray) -> np.ndarray:
    """jpeg_idct_islow over blocks [N, 64] (natural order) -> samples [N, 8, 8] uint8."""
    b = (coef * q).reshape(-1, 8, 8)
    cols = _islow_1d([b[:, i, :] for i in range(8)], 0)           # pass 1: columns
    ws = np.stack([_descale(x, 11) for x in cols], axis=1)         # [N, 8 rows, 8 cols]
    rows = _islow_1d([ws[:, :, i] for i in range(8)], 0)           # pass 2: rows
    out = np.stack([_descale(x, 18) for x in rows], axis=2)
    return _range_limit(out).astype(np.uint8)


_AANSCALES = np.array([
    16384, 22725, 21407, 19266, 16384, 12873, 8867, 4520, 22725, 31521, 29692, 26722, 22725, 17855, 12299, 6270,
    21407, 29692, 27969, 25172, 21407, 16819, 11585, 5906, 19266, 26722, 25172, 22654, 19266, 15137, 10426, 5315,
    16384, 22725, 21407, 19266, 16384, 12873, 8867, 4520, 12873, 17855, 16819, 15137, 12873, 10114, 6967, 3552,
    8867, 12299, 11585, 10426, 8867, 6967, 4799, 2446, 4520, 6270, 5906, 5315, 4520, 3552, 2446, 1247],
    dtype=np.int64)


def _ifast_1d(d: List[np.ndarray]) -> List[np.ndarray]:
    def mul(x: np.ndarray, c: int) -> np.ndarray:
        return (x * c) >> 8
    tmp10, tmp11 = d[0] + d[4], d[0] - d[4]
    tmp13 = d[2] + d[6]
    tmp12 = mul(d[2] - d[6], 362) - tmp13
    tmp0, tmp3, tmp1, tmp2 = tmp10 + tmp13, tmp10 - tmp13, tmp11 + tmp12, tmp11 - tmp12
    tmp4, tmp5, tmp6, tmp7 = d[1], d[3], d[5], d[7]
    z13, z10, z11, z12 = tmp6 + tmp5, tmp6 - tmp5, tmp4 + tmp7, tmp4 - tmp7
    tmp7 = z11 + z13
    tmp11 = mul(z11 - z13, 362)
    z5 = mul(z10 + z12, 473)
    tmp10 = mul(z12, 277) - z5
    tmp12 = mul(z10, -669) + z5
    tmp6 = tmp12 - tmp7
    tmp5 = tmp11 - tmp6
    tmp4 = tmp10 + tmp5
    return [tmp0 + tmp7, tmp1 + tmp6, tmp2 + tmp5, tmp3 - tmp4, tmp3 + tmp4, tmp2 - tmp5, tmp1 - tmp6, tmp0 - tmp7]


def idct_ifast(coef: np.ndarray, q: np.ndarray) -> np.ndarray:
    """jpeg_idct_ifast (libjpeg-turbo's C version) over blocks [N, 64] -> [N, 8, 8] uint8."""
    mq = (q * _AANSCALES + (1 << 11)) >> 12
    b = (coef * mq).reshape(-1, 8, 8)
    cols = _ifast_1d([b[:, i, :] for i in range(8)])
    ws = np.stack(cols, axis=1)
    rows = _ifast_1d([ws[:, :, i] for i in range(8)])
    out = np.stack(rows, axis=2) >> 5
    return _range_limit(out).astype(np.uint8)


# -- upsampling and color conversion (libjpeg-turbo's jdsample.c and jdcolor.c) ----------------

def _h2v1_fancy(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.int32)
    left = np.concatenate([x[:, :1], x[:, :-1]], axis=1)
    right = np.concatenate([x[:, 1:], x[:, -1:]], axis=1)
    out = np.empty((x.shape[0], 2 * x.shape[1]), dtype=np.int32)
    out[:, 0::2] = (3 * x + left + 1) >> 2
    out[:, 1::2] = (3 * x + right + 2) >> 2
    out[:, 0] = x[:, 0]
    out[:, -1] = x[:, -1]
    return out


def _h1v2_fancy(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.int32)
    up = np.concatenate([x[:1], x[:-1]], axis=0)
    down = np.concatenate([x[1:], x[-1:]], axis=0)
    out = np.empty((2 * x.shape[0], x.shape[1]), dtype=np.int32)
    out[0::2] = (3 * x + up + 1) >> 2
    out[1::2] = (3 * x + down + 2) >> 2
    return out


def _h2v2_fancy(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.int32)
    up = np.concatenate([x[:1], x[:-1]], axis=0)
    down = np.concatenate([x[1:], x[-1:]], axis=0)
    out = np.empty((2 * x.shape[0], 2 * x.shape[1]), dtype=np.int32)
    for r, nb in ((0, up), (1, down)):
        cs = 3 * x + nb
        last = np.concatenate([cs[:, :1], cs[:, :-1]], axis=1)
        nxt = np.concatenate([cs[:, 1:], cs[:, -1:]], axis=1)
        o = out[r::2]
        o[:, 0::2] = (3 * cs + last + 8) >> 4
        o[:, 1::2] = (3 * cs + nxt + 7) >> 4
        o[:, 0] = (cs[:, 0] * 4 + 8) >> 4
        o[:, -1] = (cs[:, -1] * 4 + 7) >> 4
    return out


def _upsample(x: np.ndarray, fh: int, fv: int, fancy: bool) -> np.ndarray:
    """A component [ch, cw] upsampled by (fh, fv) as libjpeg's upsampler picks."""
    if fh == 1 and fv == 1:
        return x
    cw = x.shape[1]
    if fancy and cw > 2 and fh == 2 and fv == 1:
        return _h2v1_fancy(x)
    if fancy and cw > 2 and fh == 2 and fv == 2:
        return _h2v2_fancy(x)
    if fancy and fh == 1 and fv == 2:
        return _h1v2_fancy(x)
    return np.repeat(np.repeat(x, fv, axis=0), fh, axis=1)


def _fix(v: float) -> int:
    return int(v * 65536 + 0.5)


_I = np.arange(256, dtype=np.int64) - 128
_CR_R = (_fix(1.40200) * _I + 32768) >> 16
_CB_B = (_fix(1.77200) * _I + 32768) >> 16
_CR_G = -_fix(0.71414) * _I
_CB_G = -_fix(0.34414) * _I + 32768


def ycc_to_rgb(y: np.ndarray, cb: np.ndarray, cr: np.ndarray) -> np.ndarray:
    y = y.astype(np.int64)
    cb = cb.astype(np.int64)
    cr = cr.astype(np.int64)
    r = y + _CR_R[cr]
    g = y + ((_CB_G[cb] + _CR_G[cr]) >> 16)
    b = y + _CB_B[cb]
    return np.clip(np.stack([r, g, b], axis=-1), 0, 255).astype(np.uint8)


def idct_4x4(coef: np.ndarray, q: np.ndarray) -> np.ndarray:
    """libjpeg's jpeg_idct_4x4 (jidctred.c): a 4x4 output from an 8x8 block (ratio 2)."""
    b = (coef * q).reshape(-1, 8, 8)

    def one(d: List[np.ndarray], shift: int, extra: Any) -> List[np.ndarray]:
        t0 = extra(d[0]) << 14
        t2 = d[2] * 15137 + d[6] * -6270
        t10, t12 = t0 + t2, t0 - t2
        z1, z2, z3, z4 = d[7], d[5], d[3], d[1]
        o0 = z1 * -1730 + z2 * 11893 + z3 * -17799 + z4 * 8697
        o2 = z1 * -4176 + z2 * -4926 + z3 * 7373 + z4 * 20995
        return [_descale(x, shift) for x in (t10 + o2, t12 + o0, t12 - o0, t10 - o2)]
    cols = one([b[:, i, :] for i in range(8)], 12, lambda x: x)              # CONST_BITS - PASS1_BITS + 1
    ws = np.stack(cols, axis=1)                                              # [N, 4 rows, 8 cols]
    rows = one([ws[:, :, i] for i in range(8)], 19, lambda x: x)             # CONST_BITS + PASS1_BITS + 3 + 1
    return _range_limit(np.stack(rows, axis=2)).astype(np.uint8)


def idct_2x2(coef: np.ndarray, q: np.ndarray) -> np.ndarray:
    """libjpeg's jpeg_idct_2x2 (jidctred.c): a 2x2 output from an 8x8 block (ratio 4)."""
    b = (coef * q).reshape(-1, 8, 8)

    def one(d: List[np.ndarray], shift: int) -> List[np.ndarray]:
        t10 = d[0] << 15
        t0 = d[7] * -5906 + d[5] * 6967 + d[3] * -10426 + d[1] * 29692
        return [_descale(t10 + t0, shift), _descale(t10 - t0, shift)]
    cols = one([b[:, i, :] for i in range(8)], 13)
    ws = np.stack(cols, axis=1)                                              # [N, 2 rows, 8 cols]
    rows = one([ws[:, :, i] for i in range(8)], 20)
    return _range_limit(np.stack(rows, axis=2)).astype(np.uint8)


def idct_1x1(coef: np.ndarray, q: np.ndarray) -> np.ndarray:
    """libjpeg's jpeg_idct_1x1: the DC alone (ratio 8)."""
    dc = coef[:, 0] * q[0]
    return _range_limit(_descale(dc, 3)).astype(np.uint8).reshape(-1, 1, 1)


def _scaled_sizes(fr: _Frame, ratio: int) -> List[int]:
    """libjpeg-turbo's per-component IDCT sizes for a ratio: the chroma scaled up by the IDCT
    rather than by upsampling where the sampling factors allow (jdmaster.c)."""
    m = 8 // ratio
    sizes = []
    for c in fr.comps:
        ss = m
        while ss < 8 and (fr.hmax * m) % (c["h"] * ss * 2) == 0 and (fr.vmax * m) % (c["v"] * ss * 2) == 0:
            ss *= 2
        sizes.append(ss)
    return sizes


def _samples(fr: _Frame, coefs: List[np.ndarray], qts: Dict[int, np.ndarray], islow: bool,
             sizes: List[int]) -> List[np.ndarray]:
    planes = []
    for c, co, ss in zip(fr.comps, coefs, sizes):
        bh, bw = co.shape[:2]
        idct = {8: idct_islow if islow else idct_ifast, 4: idct_4x4, 2: idct_2x2, 1: idct_1x1}[ss]
        blocks = idct(co.reshape(-1, 64), qts[c["tq"]])
        plane = blocks.reshape(bh, bw, ss, ss).transpose(0, 2, 1, 3).reshape(bh * ss, bw * ss)
        cw = -(-fr.width * c["h"] * ss // (fr.hmax * 8))
        ch = -(-fr.height * c["v"] * ss // (fr.vmax * 8))
        planes.append(plane[:ch, :cw])
    return planes


def decode(data: bytes, channels: int = 0, fancy_upscaling: bool = True, try_recover_truncated: bool = False,
           acceptable_fraction: float = 1.0, dct_method: str = "", ratio: int = 1) -> np.ndarray:
    """The image [h, w, channels] uint8 (channels 0: the JPEG's own, 1 or 3)."""
    if channels not in (0, 1, 3):
        raise InvalidArgumentError(f"channels must be 0, 1, or 3, got {channels}")
    islow = dct_method == "INTEGER_ACCURATE"
    if dct_method not in ("", "INTEGER_FAST", "INTEGER_ACCURATE"):
        raise InvalidArgumentError(f"dct_method must be one of '', 'INTEGER_FAST', 'INTEGER_ACCURATE', "
                                   f"got {dct_method!r}")
    try:
        fr, coefs, adobe, qts = parse(data)
    except _Truncated as t:
        fr, coefs, adobe, qts = t.args
        if not try_recover_truncated:
            raise _bad("the data is truncated or corrupt (Premature end of JPEG data)") from None
    if ratio not in (1, 2, 4, 8):
        raise InvalidArgumentError(f"ratio must be 1, 2, 4, or 8, got {ratio}")
    sizes = _scaled_sizes(fr, ratio)
    planes = _samples(fr, coefs, qts, islow, sizes)
    h, w = -(-fr.height // ratio), -(-fr.width // ratio)
    m = 8 // ratio
    nc = len(fr.comps)
    if nc == 4:
        raise UnimplementedError("decode_jpeg: CMYK/YCCK (4-component) JPEG is not supported")
    if nc == 1 or channels == 1:
        img = planes[0][:h, :w]
        if nc == 3 and adobe == 0:   # an RGB JPEG: gray from the RGB samples (libjpeg's rgb_gray)
            rgb = np.stack([p[:h, :w] for p in planes], axis=-1).astype(np.int64)
            img = ((19595 * rgb[..., 0] + 38470 * rgb[..., 1] + 7471 * rgb[..., 2] + 32768) >> 16)
        img = img.astype(np.uint8)
        if channels == 3:
            return np.repeat(img[:, :, None], 3, axis=2)
        return img[:, :, None]
    full = []
    for c, p, ss in zip(fr.comps, planes, sizes):
        full.append(_upsample(p, fr.hmax * m // (c["h"] * ss), fr.vmax * m // (c["v"] * ss),
                              fancy_upscaling and ss > 1)[:h, :w])
    if adobe == 0:
        return np.stack(full, axis=-1).astype(np.uint8)
    return ycc_to_rgb(full[0], full[1], full[2])

