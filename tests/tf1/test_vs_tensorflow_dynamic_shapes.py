"""Size arguments computed at run time, against TensorFlow (compat.v1 graph mode).

tile multiples, pad paddings (CONSTANT/REFLECT/SYMMETRIC), one_hot depth, broadcast_to shape,
reverse axes and the random constructors' shapes given as int placeholders or as lists holding
tf.shape(x)[i]: random shapes and values fed at run time; the values, the gradients w.r.t. the
float input and the static shapes (`.shape.as_list()`) must equal TF's, and bad run-time values
must raise InvalidArgumentError with TF's message.
"""
import os

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow.compat.v1")
import collflow.compat.v1 as cf  # noqa: E402

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
tf.disable_eager_execution()
pytestmark = pytest.mark.timeout(600)


def _build(lib, prog, xshape, ints):
    """prog(lib, x, *int_placeholders) -> outputs; returns (graph, x, int placeholders, outs, grad)."""
    g = lib.Graph()
    with g.as_default():
        x = lib.placeholder(lib.float32, xshape)
        ps = [lib.placeholder(lib.int32, [None] * np.ndim(v)) for v in ints]
        outs = prog(lib, x, *ps)
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
        # a nonlinear loss so the gradient's every entry depends on where it came from
        floats = [o for o in outs if o.dtype == lib.float32]
        loss = lib.add_n([lib.reduce_sum(o * o * 0.5 + o * lib.cos(o)) for o in floats]) if floats else None
        grad = lib.gradients(loss, [x])[0] if loss is not None else None
    return g, x, ps, outs, grad


def _run(lib, prog, xshape, xv, ints):
    g, x, ps, outs, grad = _build(lib, prog, xshape, ints)
    feed = {x: xv, **dict(zip(ps, [np.asarray(v, np.int32) for v in ints]))}
    with lib.Session(graph=g) as s:
        fetch = outs + ([grad] if grad is not None else [])
        vals = s.run(fetch, feed)
    return [o.shape.as_list() if o.shape.rank is not None else None for o in outs], vals


def _compare(prog, xshape, xv, ints, shapes_only=False):
    want_shapes, want = _run(tf, prog, xshape, xv, ints)
    got_shapes, got = _run(cf, prog, xshape, xv, ints)
    assert got_shapes == want_shapes
    assert len(got) == len(want)
    for k, (a, b) in enumerate(zip(got, want)):
        assert np.shape(a) == np.shape(b), (k, np.shape(a), np.shape(b))
        if not shapes_only:
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=f"fetch {k}")


def _shape(r, rank):
    return tuple(int(d) for d in r.integers(1, 4, rank))


SEEDS = range(12)


@pytest.mark.parametrize("seed", SEEDS)
def test_tile(seed):
    r = np.random.default_rng(seed)
    rank = int(r.integers(1, 4))
    s = _shape(r, rank)
    xv = r.normal(size=s).astype(np.float32)
    mult = [int(m) for m in r.integers(0 if seed % 3 == 0 else 1, 4, rank)]
    # a multiples placeholder, over a known and an unknown input shape
    _compare(lambda lib, x, m: lib.tile(x, m), s, xv, [mult])
    _compare(lambda lib, x, m: lib.tile(x, m), [None] * rank, xv, [mult])
    # a list holding tf.shape(x)[0] with constants: partly known static shapes
    rest = mult[1:]
    _compare(lambda lib, x: lib.tile(x, [lib.shape(x)[0]] + rest), (None,) + s[1:], xv, [])
    _compare(lambda lib, x: lib.tile(x[:1], lib.stack([lib.shape(x)[0]] + rest)), (None,) + s[1:], xv, [])


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("mode", ["CONSTANT", "REFLECT", "SYMMETRIC"])
def test_pad(seed, mode):
    r = np.random.default_rng(seed)
    rank = int(r.integers(1, 4))
    s = tuple(int(d) for d in r.integers(2, 4, rank))
    xv = r.normal(size=s).astype(np.float32)
    lim = {"CONSTANT": 3, "REFLECT": 1, "SYMMETRIC": 2}[mode]
    pads = [[int(a), int(b)] for a, b in r.integers(0, lim + 1, (rank, 2))]
    c = float(r.normal())
    _compare(lambda lib, x, p: lib.pad(x, p, mode, constant_values=c), s, xv, [pads])
    _compare(lambda lib, x, p: lib.pad(x, p, mode), [None] * rank, xv, [pads])
    # [[0, shape(x)[0] - 1], [1, 1], ...]: the dims whose paddings are constants stay known
    rows = [[1, 1]] * (rank - 1)
    _compare(lambda lib, x: lib.pad(x, [[0, lib.shape(x)[0] - 1]] + rows, mode), (None,) + s[1:], xv, [])


@pytest.mark.parametrize("seed", SEEDS)
def test_one_hot(seed):
    r = np.random.default_rng(seed)
    idx = r.integers(-1, 5, _shape(r, int(r.integers(1, 3)))).astype(np.int32)
    depth = int(r.integers(0, 5))
    axis = int(r.integers(-1, idx.ndim + 1))
    xv = r.normal(size=(2,)).astype(np.float32)

    def prog(lib, x, d):
        on, off = x[0], x[1]
        return [lib.one_hot(lib.constant(idx), d, axis=axis),
                lib.one_hot(lib.constant(idx), d, on_value=on, off_value=off, axis=axis),
                lib.one_hot(lib.constant(idx), d + 0 * lib.shape(x)[0], on_value=3, off_value=-1)]
    _compare(prog, (2,), xv, [depth])


@pytest.mark.parametrize("seed", SEEDS)
def test_broadcast_to(seed):
    r = np.random.default_rng(seed)
    rank = int(r.integers(1, 4))
    target = _shape(r, rank)
    s = tuple(d if r.random() < 0.5 else 1 for d in target)[int(r.integers(0, rank)):]
    xv = r.normal(size=s).astype(np.float32)
    _compare(lambda lib, x, t: lib.broadcast_to(x, t), s, xv, [list(target)])
    _compare(lambda lib, x, t: lib.broadcast_to(x, t), [None] * len(s), xv, [list(target)])
    ys = tuple(target[:-1]) + (2,)
    yv = np.zeros(ys, np.float32)

    def listed(lib, x, _):
        y = lib.placeholder_with_default(yv, [None] * len(ys))  # an unknown leading shape
        return lib.broadcast_to(x, [lib.shape(y)[i] for i in range(len(ys) - 1)] + [target[-1]])
    _compare(listed, s, xv, [0])


@pytest.mark.parametrize("seed", SEEDS)
def test_reverse(seed):
    r = np.random.default_rng(seed)
    rank = int(r.integers(1, 4))
    s = _shape(r, rank)
    xv = r.normal(size=s).astype(np.float32)
    axes = [int(a) - (rank if r.random() < 0.5 else 0) for a in r.permutation(rank)[:int(r.integers(0, rank + 1))]]
    _compare(lambda lib, x, a: lib.reverse(x, a), s, xv, [axes])
    _compare(lambda lib, x: lib.reverse(x, [lib.shape(x)[0] - lib.shape(x)[0]]), (None,) + s[1:], xv, [])


@pytest.mark.parametrize("name", ["random_normal", "random_uniform", "truncated_normal", "random_gamma",
                                  "random_poisson", "stateless_normal", "stateless_uniform",
                                  "stateless_truncated_normal"])
def test_random_shapes_holding_a_tensor(name):
    def prog(lib, x):
        shape = [lib.shape(x)[0], 2]
        if name == "random_gamma":
            return lib.random_gamma(shape, 1.5)
        if name == "random_poisson":
            return lib.random_poisson(1.5, shape)
        if name.startswith("stateless"):
            return getattr(lib.random, name)(shape, seed=[1, 2])
        return getattr(lib, name)(shape)
    _compare(prog, (None, 3), np.zeros((5, 3), np.float32), [], shapes_only=True)


ERRORS = [
    ("tile-length", lambda lib, x, v: lib.tile(x, v), [1, 2, 3]),
    ("tile-negative", lambda lib, x, v: lib.tile(x, v), [1, -2]),
    ("pad-rows", lambda lib, x, v: lib.pad(x, v), [[1, 1]]),
    ("pad-negative", lambda lib, x, v: lib.pad(x, v), [[1, 1], [-1, 0]]),
    ("reflect-too-far", lambda lib, x, v: lib.pad(x, v, "REFLECT"), [[2, 0], [0, 0]]),
    ("symmetric-too-far", lambda lib, x, v: lib.pad(x, v, "SYMMETRIC"), [[3, 0], [0, 0]]),
    ("one_hot-depth", lambda lib, x, v: lib.one_hot([0, 1], v), -1),
    ("broadcast-incompatible", lambda lib, x, v: lib.broadcast_to(x, v), [2, 2]),
    ("broadcast-rank", lambda lib, x, v: lib.broadcast_to(x, v), [3]),
    ("broadcast-negative", lambda lib, x, v: lib.broadcast_to(x, v), [-1, 3]),
    ("reverse-range", lambda lib, x, v: lib.reverse(x, v), [2]),
    ("reverse-twice", lambda lib, x, v: lib.reverse(x, v), [0, -2]),
]


def _error(lib, prog, value):
    g = lib.Graph()
    with g.as_default():
        x = lib.placeholder(lib.float32, (None, 3))
        v = lib.placeholder(lib.int32, [None] * np.ndim(value))
        y = prog(lib, x, v)
    with lib.Session(graph=g) as s:
        with pytest.raises(Exception) as e:
            s.run(y, {x: np.zeros((2, 3), np.float32), v: value})
    return e.value


@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_bad_run_time_values(case):
    _, prog, value = case
    want = _error(tf, prog, value)
    got = _error(cf, prog, value)
    assert type(want).__name__ == type(got).__name__ == "InvalidArgumentError"
    gist = str(got).split("\n")[0]
    assert gist in want.message, (gist, want.message)
