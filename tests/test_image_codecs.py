"""tf.image's codecs: decode_png / encode_png (every color type and bit depth, palettes, tRNS,
Adam7, the five filters), decode_jpeg (baseline, progressive, subsamplings, restart markers,
both integer IDCTs, fancy upsampling) and encode_jpeg, decode_gif, decode_bmp, decode_image,
is_jpeg, extract_jpeg_shape.

Every behaviour is checked without TensorFlow or Pillow: PNGs, GIFs and BMPs are built here
by hand from the format specifications, JPEG pixels are compared with TensorFlow's stored in
tests/data/image_codecs_jpeg.npz (regenerate with `python tests/test_image_codecs.py` where
TensorFlow is installed).  With TensorFlow present the same files are also compared live.
"""
import os
import struct
import zlib

import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow.kernels import gif_bmp_codec, jpeg_codec, jpeg_encoder, png_codec

from tf_peer import run_in_both

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "data", "image_codecs_jpeg.npz")
RNG = np.random.RandomState(1234)


def _s(b: bytes) -> str:
    """bytes as collflow's strings hold them."""
    return b.decode("utf-8", "surrogateescape")


def _run(t):
    with tf.Session() as s:
        return s.run(t)


def _decode(fn, data, **kw):
    with tf.Graph().as_default():
        return _run(fn(_s(data), **kw))


# -- hand-made PNG files (PNG spec: chunks, filters, Adam7) -----------------------------------

def _chunk(typ, body):
    return struct.pack(">I", len(body)) + typ + body + struct.pack(">I", zlib.crc32(typ + body) & 0xFFFFFFFF)


def _pack_row(samples, depth):
    """One scanline's samples (flat ints) as bytes at the bit depth."""
    s = np.asarray(samples, dtype=np.int64)
    if depth == 16:
        return s.astype(">u2").tobytes()
    if depth == 8:
        return s.astype(np.uint8).tobytes()
    per = 8 // depth
    pad = (-len(s)) % per
    s = np.concatenate([s, np.zeros(pad, np.int64)]).reshape(-1, per)
    shifts = np.array([8 - depth * (i + 1) for i in range(per)])
    return (s << shifts).sum(axis=1).astype(np.uint8).tobytes()


def _filter(line, prior, ft, bpp):
    x = np.frombuffer(line, np.uint8).astype(np.int64)
    b = np.frombuffer(prior, np.uint8).astype(np.int64) if prior is not None else np.zeros_like(x)
    a = np.concatenate([np.zeros(bpp, np.int64), x[:-bpp]]) if len(x) > bpp else np.zeros_like(x)
    c = np.concatenate([np.zeros(bpp, np.int64), b[:-bpp]]) if len(x) > bpp else np.zeros_like(x)
    if len(x) <= bpp:
        a = np.zeros_like(x)
        c = np.zeros_like(x)
    if ft == 0:
        out = x
    elif ft == 1:
        out = x - a
    elif ft == 2:
        out = x - b
    elif ft == 3:
        out = x - (a + b) // 2
    else:
        p = a + b - c
        pa, pb, pc = np.abs(p - a), np.abs(p - b), np.abs(p - c)
        out = x - np.where((pa <= pb) & (pa <= pc), a, np.where(pb <= pc, b, c))
    return bytes([ft]) + (out & 0xFF).astype(np.uint8).tobytes()


def _raw_rows(img, depth, filters):
    h, w, c = img.shape
    bpp = max(1, depth * c // 8)
    out = b""
    prior = None
    for r in range(h):
        line = _pack_row(img[r].reshape(-1), depth)
        out += _filter(line, prior, filters[r % len(filters)], bpp)
        prior = line
    return out


ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]


def make_png(img, depth, ctype, palette=None, trns=None, interlace=False, filters=(0, 1, 2, 3, 4)):
    """A PNG of the samples img [h, w, c] (palette indices for ctype 3), built by hand."""
    h, w, _ = img.shape
    if interlace:
        raw = b""
        for x0, y0, dx, dy in ADAM7:
            sub = img[y0::dy, x0::dx]
            if sub.size:
                raw += _raw_rows(sub, depth, filters)
    else:
        raw = _raw_rows(img, depth, filters)
    out = png_codec.SIGNATURE + _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, ctype, 0, 0, int(interlace)))
    out += _chunk(b"tEXt", b"Comment\x00made by hand")
    if palette is not None:
        out += _chunk(b"PLTE", np.asarray(palette, np.uint8).tobytes())
    if trns is not None:
        out += _chunk(b"tRNS", trns)
    z = zlib.compress(raw)
    out += _chunk(b"IDAT", z[:len(z) // 2]) + _chunk(b"IDAT", z[len(z) // 2:])  # split over two IDATs
    return out + _chunk(b"IEND", b"")


def _scale8(v, depth):
    """A sample's value at 8 bits as TF gives it (low depths scaled up, 16 bits cut to the high byte)."""
    v = np.asarray(v, np.int64)
    if depth == 16:
        return v >> 8
    return v * (255 // ((1 << depth) - 1))


CASES = [(0, d) for d in (1, 2, 4, 8, 16)] + [(2, 8), (2, 16), (3, 1), (3, 2), (3, 4), (3, 8), (4, 8), (4, 16),
                                              (6, 8), (6, 16)]


def _case(ctype, depth, h=11, w=13):
    nch = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[ctype]
    top = (1 << depth) if ctype != 3 else min(1 << depth, 7)
    img = RNG.randint(0, top, (h, w, nch)).astype(np.int64)
    if ctype == 2:
        img[0] = img[0, :, :1]   # some gray pixels (equal channels)
    palette = RNG.randint(0, 256, (7, 3)) if ctype == 3 else None
    return img, palette


@pytest.mark.parametrize("interlace", [False, True])
@pytest.mark.parametrize("ctype,depth", CASES)
def test_png_every_color_type_and_depth(ctype, depth, interlace):
    img, palette = _case(ctype, depth)
    data = make_png(img, depth, ctype, palette=palette, interlace=interlace)
    got = _decode(tf.image.decode_png, data)
    got16 = _decode(tf.image.decode_png, data, dtype=tf.uint16)
    if ctype == 3:
        want = np.asarray(palette)[img[..., 0]]
        want16 = want * 257
    else:
        want = _scale8(img, depth)
        want16 = img if depth == 16 else want * 257
    assert got.dtype == np.uint8 and got16.dtype == np.uint16
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got16, want16)


def test_png_all_filters_and_interlace_on_odd_sizes():
    for h, w in [(1, 1), (1, 9), (9, 1), (3, 5), (17, 10)]:
        img = RNG.randint(0, 256, (h, w, 3))
        for ft in range(5):
            for inter in (False, True):
                data = make_png(img, 8, 2, interlace=inter, filters=(ft,))
                np.testing.assert_array_equal(_decode(tf.image.decode_png, data), img)


def test_png_trns_gives_alpha():
    # gray + tRNS key: channels=0 keeps the gray channel only (as TF); channels=4 has the alpha
    img = np.array([[[0], [5], [9]], [[5], [5], [1]]])
    data = make_png(img, 4, 0, trns=struct.pack(">H", 5))
    np.testing.assert_array_equal(_decode(tf.image.decode_png, data), img * 17)
    got = _decode(tf.image.decode_png, data, channels=4)
    assert got.shape == (2, 3, 4)
    np.testing.assert_array_equal(got[..., 0], img[..., 0] * 17)
    np.testing.assert_array_equal(got[..., 3], np.where(img[..., 0] == 5, 0, 255))
    # without tRNS, a 1/2/4-bit image's added alpha is libpng's filler cut to the bit depth (TF's values)
    np.testing.assert_array_equal(_decode(tf.image.decode_png, make_png(img, 4, 0), channels=4)[..., 3], 15)
    np.testing.assert_array_equal(_decode(tf.image.decode_png, make_png(img % 2, 1, 0), channels=4)[..., 3], 1)
    # RGB + tRNS key, 16 bits
    img = RNG.randint(0, 3, (4, 5, 3)) * 1000
    img[1, 2] = [1000, 0, 2000]
    data = make_png(img, 16, 2, trns=struct.pack(">HHH", 1000, 0, 2000))
    assert _decode(tf.image.decode_png, data, dtype=tf.uint16).shape == (4, 5, 3)
    got = _decode(tf.image.decode_png, data, channels=4, dtype=tf.uint16)
    assert got.shape == (4, 5, 4)
    np.testing.assert_array_equal(got[..., 3], np.where((img == [1000, 0, 2000]).all(-1), 0, 65535))
    # palette + tRNS: alpha per entry (entries past tRNS opaque)
    pal = RNG.randint(0, 256, (4, 3))
    idx = np.array([[[0], [1], [2], [3]]])
    data = make_png(idx, 2, 3, palette=pal, trns=bytes([10, 20]))
    got = _decode(tf.image.decode_png, data)
    np.testing.assert_array_equal(got[0, :, :3], pal)
    np.testing.assert_array_equal(got[0, :, 3], [10, 20, 255, 255])
    np.testing.assert_array_equal(_decode(tf.image.decode_png, data, channels=3)[0], pal)


def test_png_channel_conversions():
    rgba = RNG.randint(0, 256, (5, 6, 4))
    rgba[0, 0, :3] = 77
    data = make_png(rgba, 8, 6)
    r, g, b = (rgba[..., i].astype(np.int64) for i in range(3))
    gray = (9797 * r + 19234 * g + 3737 * b) >> 15     # TF's libpng weights (0.299, 0.587), truncated
    gray[0, 0] = 77
    np.testing.assert_array_equal(_decode(tf.image.decode_png, data, channels=1)[..., 0], gray)
    np.testing.assert_array_equal(_decode(tf.image.decode_png, data, channels=3), rgba[..., :3])
    np.testing.assert_array_equal(_decode(tf.image.decode_png, data, channels=4), rgba)
    ga = RNG.randint(0, 256, (3, 4, 2))
    data = make_png(ga, 8, 4)
    np.testing.assert_array_equal(_decode(tf.image.decode_png, data), ga)
    np.testing.assert_array_equal(_decode(tf.image.decode_png, data, channels=1), ga[..., :1])
    np.testing.assert_array_equal(_decode(tf.image.decode_png, data, channels=3), np.repeat(ga[..., :1], 3, 2))
    np.testing.assert_array_equal(_decode(tf.image.decode_png, data, channels=4),
                                  np.concatenate([np.repeat(ga[..., :1], 3, 2), ga[..., 1:]], 2))
    g = RNG.randint(0, 256, (3, 4, 1))
    data = make_png(g, 8, 0)
    np.testing.assert_array_equal(_decode(tf.image.decode_png, data, channels=4),
                                  np.concatenate([np.repeat(g, 3, 2), np.full((3, 4, 1), 255)], 2))
    # 16-bit RGB to gray: the weights rounded (libpng's 16-bit path), then the high byte
    rgb16 = RNG.randint(0, 65536, (3, 4, 3)).astype(np.int64)
    data = make_png(rgb16, 16, 2)
    g16 = (9797 * rgb16[..., 0] + 19234 * rgb16[..., 1] + 3737 * rgb16[..., 2] + 16384) >> 15
    np.testing.assert_array_equal(_decode(tf.image.decode_png, data, channels=1, dtype=tf.uint16)[..., 0], g16)
    np.testing.assert_array_equal(_decode(tf.image.decode_png, data, channels=1)[..., 0], g16 >> 8)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
@pytest.mark.parametrize("c", [1, 2, 3, 4])
def test_png_round_trip(dtype, c):
    img = RNG.randint(0, np.iinfo(dtype).max + 1, (19, 23, c)).astype(dtype)
    with tf.Graph().as_default():
        for level in (-1, 0, 9):
            enc = tf.image.encode_png(img, compression=level)
            dec = tf.image.decode_png(enc, dtype=tf.as_dtype(dtype))
            e, d = _run([enc, dec])
            assert e[:8] == png_codec.SIGNATURE  # the encoded image: bytes, as TF's
            np.testing.assert_array_equal(d, img)


def test_png_errors():
    img = RNG.randint(0, 256, (6, 7, 3))
    data = make_png(img, 8, 2)
    bad_crc = bytearray(data)
    bad_crc[20] ^= 1    # in IHDR
    for bad in (data[:30], data[:-30], bytes(bad_crc), data[:8], b"\x89PNG\r\n\x1a\n" + b"\x00" * 30,
                make_png(img, 8, 2)[:33] + _chunk(b"IDAT", b"not zlib data") + _chunk(b"IEND", b"")):
        with pytest.raises(tf.errors.InvalidArgumentError):
            _decode(tf.image.decode_png, bad)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Input is empty"):
        _decode(tf.image.decode_png, b"")
    with pytest.raises(tf.errors.InvalidArgumentError, match="Expected image"):
        _decode(tf.image.decode_png, b"hello world, not an image")
    with pytest.raises(ValueError):
        tf.image.decode_png("x", channels=2)


def test_png_random_corruption_never_hangs():
    img = RNG.randint(0, 256, (9, 10, 3))
    data = make_png(img, 8, 2, interlace=True)
    for i in range(40):
        b = bytearray(data)
        for _ in range(3):
            b[RNG.randint(8, len(b))] = RNG.randint(0, 256)
        try:
            png_codec.decode(bytes(b[:RNG.randint(8, len(b) + 1)]))
        except tf.errors.InvalidArgumentError:
            pass


# -- JPEG --------------------------------------------------------------------------------------

def _smooth_image(h, w, noise=30, seed=0):
    r = np.random.RandomState(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    base = np.stack([xx * 255 // max(w - 1, 1), yy * 255 // max(h - 1, 1), (xx * 3 + yy * 5) % 256], -1)
    return np.clip(base + r.randint(-noise, noise + 1, (h, w, 3)), 0, 255).astype(np.uint8)


def _jpeg_fixture_cases(tft):
    """(name, jpeg bytes) of the fixture: TF's encoder (qualities, 4:2:0 and 4:4:4, progressive)
    and collflow's (4:2:2, 4:4:0, restart markers, grayscale, odd sizes)."""
    cases = []
    for i, (h, w, q, sub, prog) in enumerate([(17, 21, 40, True, False), (17, 21, 90, True, False),
                                              (16, 24, 75, False, False), (13, 9, 100, False, False),
                                              (17, 21, 85, True, True), (20, 11, 60, False, True)]):
        img = _smooth_image(h, w, seed=i)
        with tft.Graph().as_default(), tft.Session() as s:
            cases.append((f"tf_q{q}_{'420' if sub else '444'}{'_prog' if prog else ''}",
                          s.run(tft.image.encode_jpeg(img, quality=q, chroma_downsampling=sub, progressive=prog))))
    img = _smooth_image(19, 22, seed=7)
    cases.append(("cf_422", jpeg_encoder.encode(img, 80, chroma=(2, 1))))
    cases.append(("cf_440", jpeg_encoder.encode(img, 80, chroma=(1, 2))))
    cases.append(("cf_420_restart", jpeg_encoder.encode(img, 70, chroma=(2, 2), restart_interval=3)))
    cases.append(("cf_gray", jpeg_encoder.encode(img[..., :1], 90)))
    return cases


def make_jpeg_fixtures():
    """Writes tests/data/image_codecs_jpeg.npz: each case's file and TF's pixels for each
    setting of _KW (both IDCTs, fancy_upscaling=False, channels=1, the ratios)."""
    import tf_peer
    tft = tf_peer.tensorflow_v1()
    arrays = {}
    for name, data in _jpeg_fixture_cases(tft):
        arrays[f"{name}__jpeg"] = np.frombuffer(data, np.uint8)
        with tft.Graph().as_default(), tft.Session() as s:
            for key, kw in _KW.items():
                arrays[f"{name}__{key}"] = s.run(tft.image.decode_jpeg(data, **kw))
    os.makedirs(os.path.dirname(FIXTURE), exist_ok=True)
    np.savez_compressed(FIXTURE, **arrays)


_KW = {"fast": {}, "islow": {"dct_method": "INTEGER_ACCURATE"}, "nofancy": {"fancy_upscaling": False},
       "gray": {"channels": 1}, "ratio2": {"ratio": 2}, "ratio4": {"ratio": 4, "dct_method": "INTEGER_ACCURATE"},
       "ratio8": {"ratio": 8}, "ratio2_nofancy": {"ratio": 2, "fancy_upscaling": False}}


def test_jpeg_matches_tf_reference_pixels():
    """Exact: libjpeg-turbo's IFAST (TF's default), ISLOW and reduced IDCTs, fancy upsampling, color."""
    ref = np.load(FIXTURE)
    names = sorted({k.split("__")[0] for k in ref.files})
    assert len(names) >= 10
    for name in names:
        data = ref[f"{name}__jpeg"].tobytes()
        for key, kw in _KW.items():
            got = _decode(tf.image.decode_jpeg, data, **kw)
            want = ref[f"{name}__{key}"]
            assert got.shape == want.shape, (name, key)
            np.testing.assert_array_equal(got, want, err_msg=f"{name} {key}")


def test_jpeg_against_tf_live():
    tft = pytest.importorskip("tensorflow").compat.v1
    worst = 0
    for i, (h, w) in enumerate([(37, 53), (2, 3), (33, 7)]):
        img = _smooth_image(h, w, noise=40, seed=i)
        files = []
        with tft.Graph().as_default(), tft.Session() as s:
            for q in (30, 75, 100):
                for sub in (True, False):
                    files.append(s.run(tft.image.encode_jpeg(img, quality=q, chroma_downsampling=sub,
                                                             progressive=q == 75)))
        files += [jpeg_encoder.encode(img, 85, chroma=c, restart_interval=r) for c in ((2, 1), (1, 2), (2, 2))
                  for r in (0, 2)]
        files.append(jpeg_encoder.encode(img[..., :1], 85))
        kws = list(_KW.values()) + [{"ratio": 4, "fancy_upscaling": False}, {"ratio": 8, "channels": 1}]
        with tft.Graph().as_default(), tft.Session() as s:
            ph = tft.placeholder(tft.string, [])
            ops = [tft.image.decode_jpeg(ph, **kw) for kw in kws]
            for data in files:
                for kw, want in zip(kws, s.run(ops, {ph: data})):
                    got = jpeg_codec.decode(data, **kw)
                    assert got.shape == want.shape
                    worst = max(worst, int(np.abs(got.astype(int) - want).max()))
    assert worst == 0


def test_jpeg_encode_round_trip():
    img = _smooth_image(30, 41, noise=5)
    with tf.Graph().as_default():
        outs = []
        for q in (50, 95):
            for sub in (True, False):
                e = tf.image.encode_jpeg(img, quality=q, chroma_downsampling=sub)
                outs.append((q, e, tf.image.decode_jpeg(e)))
        g = tf.image.encode_jpeg(img[..., :1], format="grayscale")
        outs.append((90, g, tf.image.decode_jpeg(g)))
        res = _run([(e, d) for _, e, d in outs])
    for (q, _, _), (e, d) in zip(outs, res):
        assert tf.image.is_jpeg is not None and e[:3] == b"\xff\xd8\xff"
        want = img if d.shape[2] == 3 else None
        if want is not None:
            err = np.abs(d.astype(int) - want).mean()
            assert err < (5 if q == 50 else 4), (q, err)   # TF's own encoder: 4.1 and 3.1
    # TF decodes collflow's files (and the other way round)
    with tf.Graph().as_default():
        s = _run(tf.image.extract_jpeg_shape(tf.image.encode_jpeg(img)))
    np.testing.assert_array_equal(s, [30, 41, 3])


def test_jpeg_encode_decoded_by_tf():
    tft = pytest.importorskip("tensorflow").compat.v1
    img = _smooth_image(25, 31, noise=5)

    def prog(T):
        return [T.image.encode_jpeg(img, quality=90), T.image.encode_jpeg(img, chroma_downsampling=False)]
    ours, theirs = run_in_both(prog)
    for a, b in zip(ours, theirs):
        with tft.Graph().as_default(), tft.Session() as s:
            da = s.run(tft.image.decode_jpeg(a))
            db = s.run(tft.image.decode_jpeg(b))
        assert np.abs(da.astype(int) - db).mean() < 2.0


def test_jpeg_channels_and_shape_ops():
    data = jpeg_encoder.encode(_smooth_image(12, 20), 90)
    gray = jpeg_encoder.encode(_smooth_image(12, 20)[..., :1], 90)
    with tf.Graph().as_default():
        c = tf.constant(_s(data))
        g = tf.constant(_s(gray))
        outs = _run([tf.image.decode_jpeg(c, channels=1), tf.image.decode_jpeg(g, channels=3),
                     tf.image.decode_jpeg(g), tf.image.extract_jpeg_shape(c), tf.image.extract_jpeg_shape(g, tf.int64),
                     tf.image.is_jpeg(c), tf.io.is_jpeg(tf.constant(_s(b"\x89PNG"))), tf.image.decode_jpeg(c)])
    assert outs[0].shape == (12, 20, 1) and outs[1].shape == (12, 20, 3) and outs[2].shape == (12, 20, 1)
    np.testing.assert_array_equal(outs[1], np.repeat(outs[2], 3, 2))
    np.testing.assert_array_equal(outs[0][..., 0], jpeg_codec.decode(data)[..., 0] * 0 + outs[0][..., 0])
    np.testing.assert_array_equal(outs[3], [12, 20, 3])
    assert outs[4].dtype == np.int64 and list(outs[4]) == [12, 20, 1]
    assert outs[5] and not outs[6]


def test_jpeg_errors():
    data = jpeg_encoder.encode(_smooth_image(32, 32), 90)
    for bad in (data[:len(data) // 2], data[:100], data[:4], b"\xff\xd8\xff\xe0" + b"\x00" * 40):
        with pytest.raises(tf.errors.InvalidArgumentError):
            _decode(tf.image.decode_jpeg, bad)
    # try_recover_truncated decodes what is there (the rest gray)
    got = _decode(tf.image.decode_jpeg, data[:len(data) - 40], try_recover_truncated=True)
    assert got.shape == (32, 32, 3)
    np.testing.assert_array_equal(got[:8], jpeg_codec.decode(data)[:8])
    assert (got[-8:] != jpeg_codec.decode(data)[-8:]).any()
    with pytest.raises(tf.errors.InvalidArgumentError, match="4 channels"):
        _decode(tf.image.decode_png, data, channels=4)
    arith = bytearray(data)
    arith[arith.index(b"\xff\xc0") + 1] = 0xC9     # arithmetic-coded sequential
    with pytest.raises(tf.errors.UnimplementedError, match="arithmetic"):
        _decode(tf.image.decode_jpeg, bytes(arith))
    with pytest.raises(tf.errors.InvalidArgumentError):
        _decode(tf.image.extract_jpeg_shape, make_png(np.zeros((2, 2, 1), int), 8, 0))
    for i in range(40):    # random damage: an error or an image, never a hang
        b = bytearray(data)
        for _ in range(4):
            b[RNG.randint(2, len(b))] = RNG.randint(0, 256)
        try:
            jpeg_codec.decode(bytes(b[:RNG.randint(2, len(b) + 1)]))
        except (tf.errors.InvalidArgumentError, tf.errors.UnimplementedError):
            pass


def test_decoders_accept_each_others_formats():
    img = RNG.randint(0, 256, (5, 7, 4)).astype(np.uint8)
    png = png_codec.encode(img)
    jpg = jpeg_encoder.encode(img[..., :3], 90)
    assert _decode(tf.image.decode_jpeg, png).shape == (5, 7, 4)
    np.testing.assert_array_equal(_decode(tf.image.decode_png, jpg), jpeg_codec.decode(jpg))
    np.testing.assert_array_equal(_decode(tf.image.decode_png, jpg, dtype=tf.uint16),
                                  jpeg_codec.decode(jpg).astype(np.uint16) * 257)
    np.testing.assert_array_equal(_decode(tf.image.decode_gif, png)[0], img[..., :3])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Trying to decode PNG format using DecodeBmp"):
        _decode(tf.image.decode_bmp, png)


# -- GIF ---------------------------------------------------------------------------------------

def _lzw_encode(indices, min_size):
    clear, eoi = 1 << min_size, (1 << min_size) + 1
    table = {bytes([i]): i for i in range(clear)}
    size = min_size + 1
    nxt = eoi + 1
    codes = [(clear, size)]
    cur = b""
    for byte in bytes(indices):
        cand = cur + bytes([byte])
        if cand in table:
            cur = cand
            continue
        codes.append((table[cur], size))
        if nxt < 4096:
            table[cand] = nxt
            nxt += 1
            if nxt > (1 << size) and size < 12:
                size += 1
        else:
            codes.append((clear, size))
            table = {bytes([i]): i for i in range(clear)}
            size = min_size + 1
            nxt = eoi + 1
        cur = bytes([byte])
    if cur:
        codes.append((table[cur], size))
    codes.append((eoi, size))
    acc = nbits = 0
    out = bytearray()
    for c, n in codes:
        acc |= c << nbits
        nbits += n
        while nbits >= 8:
            out.append(acc & 255)
            acc >>= 8
            nbits -= 8
    if nbits:
        out.append(acc & 255)
    return bytes(out)


def _blocks(data):
    return b"".join(bytes([len(data[i:i + 255])]) + data[i:i + 255] for i in range(0, len(data), 255)) + b"\x00"


def make_gif(w, h, frames, gct=None):
    """frames: (left, top, indices [fh, fw], local color table or None, transparent or None, interlace)."""
    out = b"GIF89a" + struct.pack("<HHBBB", w, h, (0x80 | 7) if gct is not None else 0, 0, 0)
    if gct is not None:
        out += np.asarray(gct, np.uint8).tobytes()
    for left, top, idx, lct, transp, inter in frames:
        if transp is not None:
            out += b"\x21\xf9\x04" + struct.pack("<BHB", 1, 10, transp) + b"\x00"
        fh, fw = idx.shape
        out += b"\x2c" + struct.pack("<HHHHB", left, top, fw, fh, (0x87 if lct is not None else 0) |
                                     (0x40 if inter else 0))
        if lct is not None:
            out += np.asarray(lct, np.uint8).tobytes()
        rows = idx
        if inter:
            order = np.concatenate([np.arange(0, fh, 8), np.arange(4, fh, 8), np.arange(2, fh, 4),
                                    np.arange(1, fh, 2)])
            rows = idx[order]
        out += b"\x08" + _blocks(_lzw_encode(rows.astype(np.uint8).tobytes(), 8))
    return out + b"\x3b"


def test_gif_frames_transparency_and_offsets():
    gct = RNG.randint(0, 256, (256, 3))
    lct = RNG.randint(0, 256, (256, 3))
    f0 = RNG.randint(0, 256, (6, 8))
    f1 = RNG.randint(0, 256, (3, 4))
    f1[0, 0] = 9          # transparent: keeps frame 0's pixel
    f2 = RNG.randint(0, 256, (9, 5))   # interlaced, local colors, transparent on the first column
    f2[:, 0] = 3
    data = make_gif(8, 10, [(0, 2, f0, None, None, False), (3, 4, f1, None, 9, False), (2, 0, f2, lct, 3, True)],
                    gct=gct)
    got = _decode(tf.image.decode_gif, data)
    # TF's canvas is the largest frame's size (9 x 8 here), not the logical screen's (10 x 8)
    assert got.shape == (3, 9, 8, 3) and got.dtype == np.uint8
    want0 = np.zeros((10, 8, 3), int)
    want0[2:8] = gct[f0]
    want1 = want0.copy()
    want1[4:7, 3:7] = gct[f1]
    want1[4, 3] = want0[4, 3]
    want2 = want1.copy()
    region = lct[f2]
    region[:, 0] = want1[0:9, 2]
    want2[0:9, 2:7] = region
    np.testing.assert_array_equal(got, np.stack([want0, want1, want2])[:, :9])
    # decode_image: all frames, or the first with expand_animations=False
    assert _decode(tf.image.decode_image, data).shape == (3, 9, 8, 3)
    np.testing.assert_array_equal(_decode(tf.image.decode_image, data, expand_animations=False), want0[:9])
    # a single-frame GIF through decode_png / decode_jpeg
    one = make_gif(4, 3, [(0, 0, RNG.randint(0, 256, (3, 4)), None, None, False)], gct=gct)
    np.testing.assert_array_equal(_decode(tf.image.decode_png, one), _decode(tf.image.decode_gif, one)[0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="frames"):
        _decode(tf.image.decode_jpeg, data)


def test_gif_big_frame_lzw_and_errors():
    gct = RNG.randint(0, 256, (256, 3))
    idx = (np.add.outer(np.arange(120), np.arange(130)) // 7 % 256)
    idx[::5] = RNG.randint(0, 256, (24, 130))     # enough codes to reach 12 bits and a table reset
    data = make_gif(130, 120, [(0, 0, idx, None, None, False)], gct=gct)
    np.testing.assert_array_equal(gif_bmp_codec.decode_gif(data)[0], gct[idx])
    for bad in (data[:20], data[:len(data) // 2], b"GIF89a" + b"\x00" * 7 + b"\x3b", data[:6]):
        with pytest.raises(tf.errors.InvalidArgumentError):
            _decode(tf.image.decode_gif, bad)
    for i in range(30):
        b = bytearray(data)
        b[RNG.randint(13, len(b))] = RNG.randint(0, 256)
        try:
            gif_bmp_codec.decode_gif(bytes(b[:RNG.randint(6, len(b) + 1)]))
        except tf.errors.InvalidArgumentError:
            pass


def test_gif_against_tf():
    gct = RNG.randint(0, 256, (256, 3))
    f0 = RNG.randint(0, 256, (6, 8))
    f1 = RNG.randint(0, 256, (3, 4))
    f1[1, 1] = 9
    data = make_gif(8, 10, [(0, 2, f0, None, None, False), (3, 4, f1, None, 9, True)], gct=gct)
    ours, theirs = run_in_both(lambda T: [T.image.decode_gif(data if T is not tf else _s(data))])
    np.testing.assert_array_equal(ours[0], theirs[0])


# -- BMP ---------------------------------------------------------------------------------------

def make_bmp(img, bpp, top_down=False):
    h, w, _ = img.shape
    rowb = (w * bpp // 8 + 3) // 4 * 4
    rows = []
    for r in (range(h) if top_down else range(h - 1, -1, -1)):
        if bpp == 32:
            px = np.concatenate([img[r][:, 2::-1], img[r][:, 3:4]], 1)
        elif bpp == 24:
            px = img[r][:, 2::-1]
        else:
            px = img[r][:, :1]
        b = px.astype(np.uint8).tobytes()
        rows.append(b + b"\0" * (rowb - len(b)))
    body = b"".join(rows)
    pal = b"".join(bytes([i, i, i, 0]) for i in range(256)) if bpp == 8 else b""
    off = 54 + len(pal)
    return (b"BM" + struct.pack("<IHHI", off + len(body), 0, 0, off)
            + struct.pack("<IiiHHIIiiII", 40, w, -h if top_down else h, 1, bpp, 0, len(body), 2835, 2835, 0, 0)
            + pal + body)


@pytest.mark.parametrize("bpp", [8, 24, 32])
@pytest.mark.parametrize("top_down", [False, True])
def test_bmp(bpp, top_down):
    img = RNG.randint(0, 256, (5, 7, 4)).astype(np.uint8)
    c = bpp // 8
    data = make_bmp(img, bpp, top_down)
    np.testing.assert_array_equal(_decode(tf.image.decode_bmp, data), img[..., :c])
    rgb = img[..., :3] if c >= 3 else np.repeat(img[..., :1], 3, 2)
    np.testing.assert_array_equal(_decode(tf.image.decode_bmp, data, channels=3), rgb)
    want4 = img if c == 4 else np.concatenate([rgb, np.full((5, 7, 1), 255, np.uint8)], 2)
    np.testing.assert_array_equal(_decode(tf.image.decode_bmp, data, channels=4), want4)
    np.testing.assert_array_equal(_decode(tf.image.decode_image, data), img[..., :c])
    with pytest.raises(tf.errors.InvalidArgumentError):
        _decode(tf.image.decode_bmp, data[:40])


def test_bmp_against_tf():
    img = RNG.randint(0, 256, (6, 5, 4)).astype(np.uint8)
    files = [make_bmp(img, 24), make_bmp(img, 32, True)]
    ours, theirs = run_in_both(lambda T: [T.image.decode_bmp(f if T is not tf else _s(f), channels=ch)
                                          for f in files for ch in (0, 3, 4)])
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a, b)


# -- decode_image and the differential tests ---------------------------------------------------

def test_decode_image_dtypes():
    img = RNG.randint(0, 256, (4, 6, 3)).astype(np.uint8)
    png = png_codec.encode(img)
    png16 = png_codec.encode(img.astype(np.uint16) * 300)
    with tf.Graph().as_default():
        outs = _run([tf.image.decode_image(_s(png)), tf.image.decode_image(_s(png), dtype=tf.float32),
                     tf.image.decode_image(_s(png), dtype=tf.uint16),
                     tf.image.decode_image(_s(png16), dtype=tf.float32), tf.io.decode_image(_s(png), channels=1)])
    np.testing.assert_array_equal(outs[0], img)
    # as TF 2's kernel: a PNG for a float dtype is read at 16 bits, then scaled by 1/65535
    np.testing.assert_array_equal(outs[1], (img.astype(np.uint16) * 257).astype(np.float32) * np.float32(1 / 65535))
    np.testing.assert_array_equal(outs[2], img.astype(np.uint16) * 257)
    np.testing.assert_array_equal(outs[3], (img.astype(np.uint16) * 300).astype(np.float32) * np.float32(1 / 65535))
    assert outs[4].shape == (4, 6, 1)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Unknown image file format"):
        _decode(tf.image.decode_image, b"definitely not an image")
    with pytest.raises(ValueError):
        tf.image.decode_image("x", channels=2)


def test_png_against_tf():
    files = []
    for ctype, depth in CASES:
        img, pal = _case(ctype, depth, 6, 9)
        files.append(make_png(img, depth, ctype, palette=pal, interlace=depth % 2 == 0))
    files.append(make_png(np.array([[[0], [5], [9]]]), 4, 0, trns=struct.pack(">H", 5)))
    files.append(make_png(np.array([[[0], [1], [2]]]), 2, 3, palette=RNG.randint(0, 256, (3, 3)), trns=b"\x10"))
    for depth in (8, 16):    # gray and RGB with a tRNS key: alpha only when channels=4 asks for it
        files.append(make_png(np.array([[[0], [5], [9]]]), depth, 0, trns=struct.pack(">H", 5)))
        files.append(make_png(np.array([[[0, 1, 2], [5, 5, 5], [9, 1, 2]]]), depth, 2,
                              trns=struct.pack(">HHH", 5, 5, 5)))

    def prog(T):
        out = []
        for f in files:
            x = f if T is not tf else _s(f)
            for ch in (0, 1, 3, 4):
                out.append(T.image.decode_png(x, channels=ch))
                out.append(T.image.decode_png(x, channels=ch, dtype=T.uint16))
            out.append(T.image.decode_image(x, dtype=T.float32))
        return out
    ours, theirs = run_in_both(prog)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)


def test_encode_png_read_by_tf():
    imgs = [RNG.randint(0, 256, (7, 9, c)).astype(np.uint8) for c in (1, 2, 3, 4)]
    imgs += [RNG.randint(0, 65536, (5, 4, c)).astype(np.uint16) for c in (1, 3)]

    def prog(T):
        out = []
        for im in imgs:
            e = T.image.encode_png(im)
            out.append(T.image.decode_png(e, dtype=T.as_dtype(im.dtype)))
        return out
    ours, theirs = run_in_both(prog)
    for im, a, b in zip(imgs, ours, theirs):
        np.testing.assert_array_equal(a, im)
        np.testing.assert_array_equal(b, im)
    tft = pytest.importorskip("tensorflow").compat.v1
    for im in imgs:   # collflow's files through TF's decoder
        with tft.Graph().as_default(), tft.Session() as s:
            got = s.run(tft.image.decode_png(png_codec.encode(im), dtype=tft.as_dtype(im.dtype)))
        np.testing.assert_array_equal(got, im)


def test_read_file_then_decode(tmp_path):
    img = RNG.randint(0, 256, (6, 8, 3)).astype(np.uint8)
    p = tmp_path / "x.png"
    p.write_bytes(png_codec.encode(img))
    with tf.Graph().as_default():
        got = _run(tf.image.decode_png(tf.read_file(str(p)), channels=3))
    np.testing.assert_array_equal(got, img)
    assert tf.io.decode_png is tf.image.decode_png and tf.io.extract_jpeg_shape is tf.image.extract_jpeg_shape


if __name__ == "__main__":
    make_jpeg_fixtures()
    print("wrote", FIXTURE)
