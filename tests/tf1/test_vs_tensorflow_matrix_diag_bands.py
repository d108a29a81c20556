"""Differential tests against TensorFlow (graph mode) for tf.linalg.diag / diag_part / set_diag
with a band of diagonals k (scalar or pair, negative, beyond the square), num_rows/num_cols,
padding_value and every align: the same graph in `tensorflow.compat.v1` and
`collflow.compat.v1`, values and gradients compared (tfdiff.check_case), and the same bad
calls rejected by both.  Skipped cleanly without TensorFlow."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

import collflow.compat.v1 as cft  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()

ALIGNS = ["LEFT_RIGHT", "RIGHT_LEFT", "LEFT_LEFT", "RIGHT_RIGHT"]


def _k_value(r, lo, hi):
    """k as TF accepts it: an int for a single diagonal (sometimes), else a pair or a list."""
    if lo == hi and r.random() < 0.6:
        return int(lo)
    return (int(lo), int(hi)) if r.random() < 0.5 else [int(lo), int(hi)]


def _batch(r):
    return tuple(int(b) for b in r.integers(1, 4, size=r.integers(0, 3)))


values_only = []


def _diag_cases(n=90):
    r = np.random.default_rng(11)
    cases = []
    for c in range(n):
        lo = int(r.integers(-5, 5))
        hi = lo if r.random() < 0.4 else int(r.integers(lo, lo + 4))
        max_len = int(r.integers(1, 5))
        shape = _batch(r) + ((max_len,) if lo == hi else (hi - lo + 1, max_len))
        min_r, min_c = max_len - min(hi, 0), max_len + max(lo, 0)
        mode = c % 4
        rows, cols = [(-1, -1), (min_r + int(r.integers(0, 3)), -1), (-1, min_c + int(r.integers(0, 3))),
                      (min_r, min_c + int(r.integers(0, 3)))][mode]
        if mode == 3 and r.random() < 0.5:
            rows, cols = min_r + int(r.integers(0, 3)), min_c
        pad = float(np.round(r.uniform(-3, 3), 2)) if r.random() < 0.6 else 0.0
        align = ALIGNS[c % 4]
        k = _k_value(r, lo, hi)
        name = "matrix_diag" if c % 3 == 0 else "linalg.diag"

        def fn(tf, d, k=k, rows=rows, cols=cols, pad=pad, align=align, name=name):
            op = tf.matrix_diag if name == "matrix_diag" else tf.linalg.diag
            return op(d, k=k, num_rows=rows, num_cols=cols, padding_value=pad, align=align)
        out_r = rows if rows != -1 else (min_r if cols != -1 else max(min_r, min_c))
        out_c = cols if cols != -1 else (min_c if rows != -1 else max(min_r, min_c))
        # a diagonal wholly outside the output: TF's gradient (diag_part with the same k) raises
        # 'out of bound'; collflow's gives it zeros (tests/test_matrix_diag_bands.py)
        outside = any(kk != 0 and not -out_r < kk < out_c for kk in (lo, hi))
        (values_only if outside else cases).append((f"diag{c}-{shape}-k{k}-{rows}x{cols}-{align}", fn, [shape]))
    return cases


def _matrix_and_band(r):
    rows, cols = int(r.integers(1, 6)), int(r.integers(1, 6))
    lo = int(r.integers(-rows + 1, cols))
    hi = lo if r.random() < 0.35 else int(r.integers(lo, cols))
    return _batch(r) + (rows, cols), lo, hi


def _part_len(rows, cols, lo, hi):
    return min(rows + min(hi, 0), cols - max(lo, 0))


def _diag_part_cases(n=70):
    r = np.random.default_rng(12)
    cases = []
    for c in range(n):
        shape, lo, hi = _matrix_and_band(r)
        pad = float(np.round(r.uniform(-3, 3), 2)) if r.random() < 0.6 else 0.0
        align = ALIGNS[c % 4]
        k = _k_value(r, lo, hi)
        name = "matrix_diag_part" if c % 3 == 0 else "linalg.diag_part"

        def fn(tf, x, k=k, pad=pad, align=align, name=name):
            op = tf.matrix_diag_part if name == "matrix_diag_part" else tf.linalg.diag_part
            return op(x, k=k, padding_value=pad, align=align)
        cases.append((f"part{c}-{shape}-k{k}-{align}", fn, [shape]))
    return cases


def _set_diag_cases(n=60):
    r = np.random.default_rng(13)
    cases = []
    for c in range(n):
        shape, lo, hi = _matrix_and_band(r)
        length = _part_len(shape[-2], shape[-1], lo, hi)
        dshape = shape[:-2] + ((length,) if lo == hi else (hi - lo + 1, length))
        align = ALIGNS[c % 4]
        k = _k_value(r, lo, hi)
        name = "matrix_set_diag" if c % 3 == 0 else "linalg.set_diag"

        def fn(tf, x, d, k=k, align=align, name=name):
            op = tf.matrix_set_diag if name == "matrix_set_diag" else tf.linalg.set_diag
            return op(x, d, k=k, align=align)
        cases.append((f"set{c}-{shape}-k{k}-{align}", fn, [shape, dshape]))
    return cases


def _composed(tf, x):
    """diag_part -> diag -> set_diag chained (second derivatives of the chain's pieces)."""
    band = tf.linalg.diag_part(x, k=(-1, 2), align="LEFT_RIGHT", padding_value=1.0)
    back = tf.linalg.diag(band * band, k=(-1, 2), num_rows=4, num_cols=5, align="LEFT_RIGHT")
    return tf.linalg.set_diag(back, tf.linalg.diag_part(x * x, k=-3), k=-3)


def _run_time_pad(tf, x, p):
    return tf.linalg.diag_part(x, k=(-1, 1), padding_value=tf.reduce_sum(p))


CASES = _diag_cases() + _diag_part_cases() + _set_diag_cases() + [
    ("composed", _composed, [(2, 4, 5)]),
    ("run-time-pad", _run_time_pad, [(3, 2, 4), (2,)]),
    ("k-const-tensor", lambda tf, x: tf.linalg.diag_part(x, k=tf.constant([-2, 0])), [(4, 3)]),
    ("k-const-scalar", lambda tf, x: tf.linalg.diag(x, k=tf.constant(-2)), [(2, 3)]),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_matches_tensorflow(case):
    tfdiff.check_case(case, tft, cft)


@pytest.mark.parametrize("case", values_only, ids=[c[0] for c in values_only])
def test_values_match_tensorflow_k_beyond_the_output(case):
    name, fn, specs = case
    x = tfdiff.make_input(np.random.default_rng(sum(map(ord, name))), specs[0])
    outs = []
    for tf in (tft, cft):
        g = tf.Graph()
        with g.as_default():
            p = tf.placeholder(tf.float32, x.shape)
            with tf.Session(graph=g) as s:
                outs.append(s.run(fn(tf, p), {p: x}))
    np.testing.assert_array_equal(outs[1], outs[0])
    assert len(values_only) >= 10   # the generator keeps producing such cases


def _raises(tf, build, feed_values=None):
    """The error class name (or None) when `build` is built and, if it builds, run."""
    g = tf.Graph()
    with g.as_default():
        try:
            fetch, feed = build(tf)
            with tf.Session(graph=g) as s:
                s.run(fetch, feed)
        except Exception as e:   # noqa: BLE001 - the class is what is compared
            return e
    return None


def _ph(tf, value):
    p = tf.placeholder(tf.float32, None)
    return p, {p: value}


BAD = [
    ("k-low-above-high", lambda tf: (tf.linalg.diag(np.ones((2, 3), np.float32), k=(1, 0)), None)),
    ("k-three", lambda tf: (tf.linalg.diag_part(np.ones((3, 3), np.float32), k=(0, 1, 2)), None)),
    ("align", lambda tf: (tf.linalg.diag(np.ones(3, np.float32), k=1, align="UP"), None)),
    ("num-diags", lambda tf: (tf.linalg.diag(np.ones((3, 3), np.float32), k=(0, 1)), None)),
    ("rows-too-small", lambda tf: (tf.linalg.diag(np.ones(3, np.float32), num_rows=2), None)),
    ("cols-too-small", lambda tf: (tf.linalg.diag(np.ones(3, np.float32), k=1, num_cols=2), None)),
    ("inconsistent", lambda tf: (tf.linalg.diag(np.ones(3, np.float32), k=(-1, 0), num_rows=6, num_cols=6), None)),
    ("part-k-out", lambda tf: (tf.linalg.diag_part(np.ones((3, 4), np.float32), k=(0, 4)), None)),
    ("part-k-out-neg", lambda tf: (tf.linalg.diag_part(np.ones((3, 4), np.float32), k=-3), None)),
    ("set-k-out", lambda tf: (tf.linalg.set_diag(np.ones((3, 4), np.float32), np.ones(1, np.float32), k=4), None)),
    ("set-wrong-len", lambda tf: (tf.linalg.set_diag(np.ones((3, 4), np.float32), np.ones((2, 2), np.float32),
                                                     k=(-1, 0)), None)),
    ("run-part-k-out", lambda tf: (lambda p, f: (tf.linalg.diag_part(p, k=(0, 3)), f))(*_ph(tf, np.ones((3, 3))))),
    ("run-set-wrong", lambda tf: (lambda p, f: (tf.linalg.set_diag(p, np.ones((2, 2), np.float32), k=(0, 1)), f))(
        *_ph(tf, np.ones((3, 3))))),
    ("run-diag-num-diags", lambda tf: (lambda p, f: (tf.linalg.diag(p, k=(-1, 1)), f))(*_ph(tf, np.ones((2, 3))))),
]


@pytest.mark.parametrize("build", [b for _, b in BAD], ids=[n for n, _ in BAD])
def test_rejected_like_tensorflow(build):
    want = _raises(tft, build)
    got = _raises(cft, build)
    assert want is not None, "TensorFlow accepted it"
    assert got is not None, f"collflow accepted what TensorFlow rejects ({type(want).__name__}: {want})"
    # TF raises ValueError when the graph is built and InvalidArgumentError when it runs;
    # collflow's InvalidArgumentError is a ValueError, so ValueError covers both
    assert isinstance(got, ValueError), (type(got), got)
    assert isinstance(want, (ValueError, tft.errors.InvalidArgumentError)), (type(want), want)
