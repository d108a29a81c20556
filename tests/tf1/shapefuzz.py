"""Random TF1 graph programs for comparing STATIC shapes with TensorFlow
(tests/tf1/test_vs_tensorflow_static_shapes_fuzz.py).

A program is built twice from one seed: first in tensorflow.compat.v1, where every decision
(which op, which input, which axis) is taken by a `Chooser` and recorded, then in collflow
with the recorded decisions replayed, so that both libraries build the same program even
where their static shapes differ.  Every op output's static shape (as_list(), None for an
unknown rank) is recorded, and whether building an op raised.
"""
import numpy as np


class _Diverged(Exception):
    """The replayed program asked for a decision TF never took (TF refused the op earlier)."""


class Chooser:
    """Records decisions (record mode) or replays them (replay mode)."""

    def __init__(self, seed, replay=None):
        self.rng = np.random.default_rng(seed)
        self.replay = replay
        self.log = []
        self.i = 0

    def get(self, fn):
        """fn() (which may use self.rng) when recording; the recorded value when replaying."""
        if self.replay is not None:
            v = self.replay[self.i]
            if isinstance(v, tuple) and v and v[0] in ("ERR", "STEP"):
                raise _Diverged("TF took fewer decisions here")
            self.i += 1
            return v
        v = fn()
        self.log.append(v)
        return v

    def int(self, lo, hi):
        return self.get(lambda: int(self.rng.integers(lo, hi + 1)))

    def pick(self, seq):
        return self.get(lambda: seq[int(self.rng.integers(len(seq)))])

    def coin(self, p=0.5):
        return self.get(lambda: bool(self.rng.random() < p))


def sshape(t):
    """A tensor's static shape as TF1 programs read it: as_list(), or None for unknown rank."""
    s = t.shape
    return None if s.ndims is None else list(s.as_list())


def _rand_dims(ch, rank, known_p=0.6, lo=1, hi=4):
    return ch.get(lambda: [int(ch.rng.integers(lo, hi + 1)) if ch.rng.random() < known_p else None
                           for _ in range(rank)])


# -- ops: each takes (tf, ch, pool) and returns a tensor or a list of tensors -------------------


def _pick_tensor(ch, pool, pred=lambda s: True):
    """An index of a pool tensor whose (TF) static shape satisfies pred, or -1 for none."""
    return ch.get(lambda: ([i for i, t in enumerate(pool) if pred(sshape(t))] or [-1])
                  [int(ch.rng.integers(len([i for i, t in enumerate(pool) if pred(sshape(t))] or [-1])))])


def _float_pick(ch, pool, pred=lambda s: True):
    i = _pick_tensor(ch, pool, lambda s: pred(s))
    return None if i < 0 else pool[i]


def _ranked(lo, hi=9):
    return lambda s: s is not None and lo <= len(s) <= hi


def _placeholder(tf, ch, rank=None):
    r = ch.int(0, 4) if rank is None else rank
    unknown_rank = ch.coin(0.1) if rank is None else False
    if unknown_rank:
        return tf.placeholder(tf.float32, None)
    return tf.placeholder(tf.float32, _rand_dims(ch, r))


def op_placeholder(tf, ch, pool):
    return _placeholder(tf, ch)


def op_binary(tf, ch, pool):
    x = _float_pick(ch, pool)
    if x is None:
        return None
    mode = ch.pick(["other", "fresh", "self"])
    if mode == "other":
        y = _float_pick(ch, pool)
    elif mode == "fresh":
        s = sshape(x)
        dims = ch.get(lambda: None if s is None else
                      [([1, None, d] + ([d] if d else []))[int(ch.rng.integers(3 + (1 if d else 0)))]
                       for d in s][int(ch.rng.integers(0, len(s) + 1)) if len(s) else 0:])
        y = tf.placeholder(tf.float32, dims)
    else:
        y = x
    fn = ch.pick(["add", "multiply", "maximum", "squared_difference"])
    return getattr(tf.math, fn)(x, y)


def op_reduce(tf, ch, pool):
    x = _float_pick(ch, pool)
    if x is None:
        return None
    s = sshape(x)
    fn = ch.pick(["reduce_sum", "reduce_mean", "reduce_max", "reduce_prod"])
    kd = ch.coin()
    axis = ch.get(lambda: None if (s is None or ch.rng.random() < 0.2) else
                  (int(ch.rng.integers(-len(s), len(s))) if len(s) and ch.rng.random() < 0.5 else
                   sorted(set(int(a) for a in ch.rng.integers(0, max(len(s), 1), int(ch.rng.integers(0, 3)))))
                   if len(s) else None))
    if s is None and ch.coin():
        axis = ch.pick([0, [0], -1])
    return getattr(tf, fn)(x, axis=axis, keepdims=kd)


def op_matmul(tf, ch, pool):
    x = _float_pick(ch, pool, _ranked(2, 3))
    if x is None:
        return None
    s = sshape(x)
    ta, tb = ch.coin(), ch.coin()
    inner = s[-2] if ta else s[-1]
    batch = s[:-2]
    k = ch.get(lambda: [None, 2, 3][int(ch.rng.integers(3))])
    yd = [inner, k][::-1] if tb else [inner, k]
    if batch and ch.coin(0.3):
        yd = [1] + yd if ch.coin() else [None] + yd
    elif batch:
        yd = list(batch) + yd
    y = tf.placeholder(tf.float32, yd)
    return tf.matmul(x, y, transpose_a=ta, transpose_b=tb)


def op_reshape(tf, ch, pool):
    x = _float_pick(ch, pool)
    if x is None:
        return None
    s = sshape(x)
    kind = ch.pick(["flat", "keep0", "stack", "concat", "castconst", "shape_of", "const_tensor", "arith",
                    "fill_shape", "prod", "size", "rank", "static_value"])
    if kind == "flat":
        return tf.reshape(x, [-1])
    if kind == "shape_of":
        return tf.reshape(x, tf.shape(x))
    if s is None:
        return tf.reshape(x, [-1, 1])
    if kind == "keep0" and len(s) >= 1:
        return tf.reshape(x, [tf.shape(x)[0], -1])
    if kind == "stack" and len(s) >= 2:
        sh = tf.shape(x)
        return tf.reshape(x, tf.stack([sh[0] * sh[1]] + [sh[i] for i in range(2, len(s))]))
    if kind == "concat" and len(s) >= 2:
        sh = tf.shape(x)
        return tf.reshape(x, tf.concat([sh[:1], [-1]], axis=0))
    if kind == "castconst" and len(s) >= 1:
        dt = ch.pick(["int64", "int32"])
        return tf.reshape(x, tf.cast(tf.concat([tf.shape(x, out_type=getattr(tf, dt))[:-1],
                                                tf.constant([-1], getattr(tf, dt))], 0), tf.int32))
    if kind == "const_tensor":
        n = ch.int(1, 3)
        return tf.reshape(x, tf.cast(tf.constant([-1] + [1] * (n - 1), tf.int64), tf.int32))
    if kind == "arith" and len(s) >= 2:
        sh = tf.shape(x)
        return tf.reshape(x, [sh[-1], -1, tf.constant(1) + 0])
    if kind == "prod" and len(s) >= 2:  # the flatten idiom of TF1 programs
        return tf.reshape(x, [-1, tf.reduce_prod(tf.shape(x)[1:])])
    if kind == "size" and len(s) >= 1:
        return tf.reshape(x, tf.stack([tf.size(x) // tf.shape(x)[0], tf.shape(x)[0]]))
    if kind == "rank":
        return tf.reshape(x, tf.fill(tf.expand_dims(tf.rank(x) - tf.rank(x) + 2, 0), -1)[1:])
    if kind == "static_value" and len(s) >= 2 and all(d is not None for d in s[1:]):
        return tf.reshape(x, [-1, int(np.prod(x.shape.as_list()[1:]))])
    if kind == "fill_shape":
        return tf.reshape(x, tf.concat([tf.fill([1], -1), tf.ones([ch.int(0, 2)], tf.int32)], 0))
    return tf.reshape(x, [-1, 1])


def op_transpose(tf, ch, pool):
    x = _float_pick(ch, pool, _ranked(0))
    if x is None:
        return None
    s = sshape(x)
    perm = ch.get(lambda: None if ch.rng.random() < 0.3 else [int(p) for p in ch.rng.permutation(len(s))])
    return tf.transpose(x, perm)


def op_expand_squeeze(tf, ch, pool):
    x = _float_pick(ch, pool)
    if x is None:
        return None
    s = sshape(x)
    if ch.coin():
        n = len(s) if s is not None else 0
        return tf.expand_dims(x, ch.int(-n - 1, n))
    ones = [i for i, d in enumerate(s or []) if d == 1]
    if ones and ch.coin(0.7):
        return tf.squeeze(x, [ch.pick(ones)])
    return tf.squeeze(x)


def op_join(tf, ch, pool):
    x = _float_pick(ch, pool, _ranked(1))
    if x is None:
        return None
    s = sshape(x)
    kind = ch.pick(["concat", "stack", "split", "unstack", "splitv"])
    ax = ch.int(-len(s), len(s) - 1)
    if kind == "concat":
        other = ch.get(lambda: [None if i == ax % len(s) else d for i, d in enumerate(s)])
        return tf.concat([x, tf.placeholder(tf.float32, other)], ax)
    if kind == "stack":
        return tf.stack([x, x * 2.0], axis=ch.int(-len(s) - 1, len(s)))
    if kind == "split":
        d = s[ax]
        n = ch.get(lambda: 1 if not d else int([k for k in range(1, d + 1) if d % k == 0][-1]))
        return tf.split(x, n, axis=ax)
    if kind == "splitv":
        d = s[ax]
        if not d:
            return tf.split(x, [-1], axis=ax)
        return tf.split(x, [1, -1], axis=ax) if d >= 1 else None
    if s[ax] is None:
        return tf.unstack(x, num=2, axis=ax) if ch.coin(0.3) else None
    return tf.unstack(x, axis=ax)


def op_tile_pad(tf, ch, pool):
    x = _float_pick(ch, pool, _ranked(1))
    if x is None:
        return None
    s = sshape(x)
    if ch.coin():
        m = ch.get(lambda: [int(v) for v in ch.rng.integers(1, 3, len(s))])
        if ch.coin(0.3):
            return tf.tile(x, tf.constant(m))
        return tf.tile(x, m)
    p = ch.get(lambda: [[int(a), int(b)] for a, b in ch.rng.integers(0, 3, (len(s), 2))])
    mode = ch.pick(["CONSTANT", "REFLECT", "SYMMETRIC"])
    if mode != "CONSTANT" and 0 in s:
        mode = "CONSTANT"  # mirroring an empty dim fails at run time in TF, when built in collflow
    if mode != "CONSTANT":
        p = [[0, 0] for _ in s]
    return tf.pad(x, p, mode=mode)


def op_slice(tf, ch, pool):
    x = _float_pick(ch, pool, _ranked(1))
    if x is None:
        return None
    s = sshape(x)
    kind = ch.pick(["getitem", "slice", "slice_fed", "ss_masks", "getitem_fed"])
    if kind == "getitem":
        key = ch.get(lambda: [int(ch.rng.integers(5)) for _ in range(len(s))])
        parts = []
        for i, k in enumerate(key):
            d = s[i]
            if k == 0:
                parts.append(slice(None))
            elif k == 1:
                parts.append(slice(0, 1))
            elif k == 2:
                parts.append(slice(None, None, 2))
            elif k == 3:
                parts.append(slice(-2, None) if (d is None or d >= 2) else slice(None))
            else:
                parts.append(0)
        if ch.coin(0.3):
            parts = [parts[0], Ellipsis] if ch.coin() else [Ellipsis, None]
        return x[tuple(parts)]
    if kind == "slice":
        b = [0] * len(s)
        sz = ch.get(lambda: [-1 if (d is None or ch.rng.random() < 0.5) else int(ch.rng.integers(0, d + 1))
                             for d in s])
        return tf.slice(x, b, sz)
    if kind == "slice_fed":
        b = tf.placeholder(tf.int32, [len(s)])
        return tf.slice(x, b, [-1] * len(s))
    if kind == "ss_masks":
        r = len(s)
        bm = ch.int(0, 2 ** r - 1)
        em = ch.int(0, 2 ** r - 1)
        sm = ch.get(lambda: (1 << int(ch.rng.integers(r))) if ch.rng.random() < 0.3 else 0)
        nm = ch.get(lambda: 1 if ch.rng.random() < 0.2 else 0)
        return tf.strided_slice(x, [0] * r, [1] * r, [1] * r, begin_mask=bm, end_mask=em,
                                shrink_axis_mask=sm, new_axis_mask=nm)
    n = tf.placeholder(tf.int32, [])
    return x[:n]


def op_gather(tf, ch, pool):
    x = _float_pick(ch, pool, _ranked(1))
    if x is None:
        return None
    s = sshape(x)
    if ch.coin():
        ax = ch.int(0, len(s) - 1)
        idx = tf.placeholder(tf.int32, _rand_dims(ch, ch.int(0, 2)))
        return tf.gather(x, idx, axis=ax)
    k = ch.int(1, len(s))
    idx = tf.placeholder(tf.int32, _rand_dims(ch, ch.int(0, 2)) + [k])
    return tf.gather_nd(x, idx)


def op_index(tf, ch, pool):
    kind = ch.pick(["one_hot", "where1", "where3", "boolean_mask", "top_k", "argmax", "cumsum"])
    if kind == "one_hot":
        idx = tf.placeholder(tf.int32, _rand_dims(ch, ch.int(0, 3)))
        return tf.one_hot(idx, ch.int(1, 4), axis=ch.int(-1, 0))
    x = _float_pick(ch, pool, _ranked(1))
    if x is None:
        return None
    s = sshape(x)
    if kind == "where1":
        return tf.where(x > 0.0)
    if kind == "where3":
        return tf.where(x > 0.0, x, tf.zeros_like(x))
    if kind == "boolean_mask":
        k = ch.int(1, len(s))
        m = tf.placeholder(tf.bool, ch.get(lambda: s[:k]))
        return tf.boolean_mask(x, m)
    if kind == "top_k":
        v, i = tf.nn.top_k(x, k=ch.int(1, 1) if s[-1] is None else ch.int(1, max(1, s[-1])))
        return [v, i]
    if kind == "argmax":
        return tf.argmax(x, axis=ch.int(-len(s), len(s) - 1))
    return tf.cumsum(x, axis=ch.int(-len(s), len(s) - 1), exclusive=ch.coin(), reverse=ch.coin())


def op_conv(tf, ch, pool):
    x = tf.placeholder(tf.float32, ch.get(lambda: [[None, 2][int(ch.rng.integers(2))],
                                                   [None, 5, 6, 7][int(ch.rng.integers(4))],
                                                   [None, 5, 6][int(ch.rng.integers(3))],
                                                   [2, 3][int(ch.rng.integers(2))]]))
    pad = ch.pick(["SAME", "VALID"])
    st = ch.int(1, 3)
    k = ch.int(1, 3)
    c = tf.shape(x)
    kind = ch.pick(["conv", "maxpool", "avgpool", "depthwise", "transpose", "dense", "resize", "conv_unk"])
    cin = sshape(x)[3]
    if kind == "conv":
        w = tf.ones([k, k, cin, 4])
        return tf.nn.conv2d(x, w, [1, st, st, 1], pad)
    if kind == "conv_unk":
        w = tf.placeholder(tf.float32, [k, k, cin, None])
        return tf.nn.conv2d(x, w, [1, st, st, 1], pad)
    if kind == "maxpool":
        return tf.nn.max_pool(x, [1, k, k, 1], [1, st, st, 1], pad)
    if kind == "avgpool":
        return tf.nn.avg_pool(x, [1, k, k, 1], [1, st, st, 1], pad)
    if kind == "depthwise":
        w = tf.ones([k, k, cin, 2])
        return tf.nn.depthwise_conv2d(x, w, [1, st, st, 1], pad)
    if kind == "transpose":
        w = tf.ones([k, k, 4, cin])
        oshape = ch.pick(["stack", "const", "concat"])
        # an output size conv2d maps back to x's (TF checks that only at run time)
        if oshape == "stack":
            os_ = tf.stack([c[0], c[1] * st if pad == "SAME" else (c[1] - 1) * st + k,
                            c[2] * st if pad == "SAME" else (c[2] - 1) * st + k, 4])
        else:
            x = tf.placeholder(tf.float32, [2, 3, None, cin])
            hw = 3 * st if pad == "SAME" else 2 * st + k
            os_ = [2, hw, hw, 4] if oshape == "const" else tf.concat([tf.shape(x)[:1], [hw, hw, 4]], 0)
        return tf.nn.conv2d_transpose(x, w, os_, [1, st, st, 1], pad)
    if kind == "dense":
        return tf.layers.dense(x, 3)
    sz = ch.pick(["const", "shape"])
    if sz == "const":
        return tf.image.resize_images(x, [4, 5])
    return tf.image.resize_images(x, c[1:3] * 2)


def op_creation(tf, ch, pool):
    kind = ch.pick(["range", "fill", "zeros", "zeros_shape", "fill_const", "range_const", "ones_like_stack"])
    n = tf.placeholder(tf.int32, [])
    if kind == "range":
        return tf.range(n)
    if kind == "range_const":
        return tf.range(tf.constant(1) + 2, 9, 2)
    if kind == "fill":
        return tf.fill([n, 3], 1.0)
    if kind == "zeros":
        return tf.zeros(tf.stack([n, 2]))
    if kind == "fill_const":
        return tf.fill(tf.cast(tf.constant([2, 3], tf.int64), tf.int32), 0.5)
    x = _float_pick(ch, pool, _ranked(1))
    if x is None:
        return None
    if kind == "zeros_shape":
        return tf.zeros(tf.shape(x)[:-1])
    return tf.ones(tf.concat([tf.shape(x), [2]], 0))


def op_control(tf, ch, pool):
    x = _float_pick(ch, pool)
    if x is None:
        return None
    kind = ch.pick(["cond_same", "cond_diff", "while", "while_inv", "map_fn", "scan"])
    p = tf.placeholder(tf.bool, [])
    if kind == "cond_same":
        return tf.cond(p, lambda: x * 2.0, lambda: x + 1.0)
    if kind == "cond_diff":
        return tf.cond(p, lambda: x, lambda: tf.reshape(x, [-1]))
    if kind == "while":
        return tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * 2.0), [tf.constant(0), x])[1]
    if kind == "while_inv":
        s = sshape(x)
        inv = tf.TensorShape(None if s is None else [None] * len(s))
        return tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v), [tf.constant(0), x],
                             shape_invariants=[tf.TensorShape([]), inv])[1]
    s = sshape(x)
    if s is None or not s:
        return None
    if kind == "map_fn":
        return tf.map_fn(lambda r: tf.reduce_sum(r, keepdims=True), x)
    return tf.scan(lambda a, r: a + r, x)


def op_set_shape(tf, ch, pool):
    x = _float_pick(ch, pool)
    if x is None:
        return None
    s = sshape(x)
    y = tf.identity(x)
    want = ch.get(lambda: None if s is None else [d if d is not None else
                                                  (int(ch.rng.integers(1, 4)) if ch.rng.random() < 0.5 else None)
                                                  for d in s])
    if s is not None and ch.coin(0.3):  # an incompatible shape: ValueError in TF
        want = ch.get(lambda: [1] * (len(s) + 1) if ch.rng.random() < 0.5 or not s else
                      [(d or 1) + 1 for d in s])
    y.set_shape(want)
    return y


def op_data(tf, ch, pool):
    d = ch.get(lambda: [[None, 3][int(ch.rng.integers(2))]])
    kind = ch.pick(["batch", "batch_drop", "padded", "map"])
    n = ch.int(2, 5)
    if d[0] is None:
        ds = tf.data.Dataset.range(n).map(lambda i: tf.fill(tf.reshape(i + 1, [1]), 1.0))
    else:
        ds = tf.data.Dataset.from_tensor_slices(np.ones([n, 3], np.float32))
    if kind == "batch":
        ds = ds.batch(2)
    elif kind == "batch_drop":
        ds = ds.batch(2, drop_remainder=True)
    elif kind == "padded":
        ds = ds.padded_batch(2, padded_shapes=[None] if ch.coin() else [5])
    else:
        ds = ds.map(lambda v: (v, tf.reduce_sum(v))).batch(2, drop_remainder=ch.coin())
    out = tf.data.make_one_shot_iterator(ds).get_next()
    return list(out) if isinstance(out, tuple) else out


def op_idiom(tf, ch, pool):
    """Shape arguments computed from tf.shape of a partly known tensor."""
    y = tf.placeholder(tf.float32, ch.get(lambda: [[None, 4][int(ch.rng.integers(2))], None,
                                                   [None, 5][int(ch.rng.integers(2))]]))
    x = tf.placeholder(tf.float32, [None, 3])
    sh = tf.shape(y)
    kind = ch.pick(["tile", "top_k", "segments", "scatter_nd", "random_normal", "random_uniform", "eye",
                    "cast_float", "flatten", "resize_const_tensor"])
    if kind == "tile":  # run-time multiples are not supported by collflow (see the report)
        return tf.tile(x, [sh[0], 1]) if sshape(y)[0] is not None else None
    if kind == "top_k":
        return tf.nn.top_k(y, k=sh[2])[0]
    if kind == "segments":
        return tf.unsorted_segment_sum(y, tf.placeholder(tf.int32, [None]), sh[0])
    if kind == "scatter_nd":
        return tf.scatter_nd(tf.placeholder(tf.int32, [None, 1]), tf.placeholder(tf.float32, [None, 3]),
                             tf.stack([sh[0], 3]))
    if kind == "random_normal":
        return tf.random_normal(sh)
    if kind == "random_uniform":
        return tf.random_uniform(tf.stack([sh[-1], 7]))
    if kind == "eye":
        return tf.eye(sh[0])
    if kind == "cast_float":
        return tf.reshape(y, tf.cast(tf.constant([-1.0, 2.5]), tf.int32))
    if kind == "flatten":
        return tf.layers.flatten(y) if hasattr(tf.layers, "flatten") and tf.__name__.startswith("collflow") \
            else tf.reshape(y, [y.shape[0] if y.shape[0] is not None else tf.shape(y)[0], -1])
    return tf.image.resize_images(tf.placeholder(tf.float32, [None, 6, None, 3]), tf.constant([4, 2]) * 2)


OPS = [op_placeholder, op_binary, op_reduce, op_matmul, op_reshape, op_transpose, op_expand_squeeze, op_join,
       op_tile_pad, op_slice, op_gather, op_index, op_conv, op_creation, op_control, op_set_shape, op_data,
       op_idiom]


def build(tf, seed, replay=None, steps=8):
    """Builds program `seed`; returns (decisions, [(step, op name, [shapes] or 'error: ...')])."""
    ch = Chooser(seed, replay)
    g = tf.Graph()
    rec = []
    with g.as_default():
        pool = [_placeholder(tf, ch) for _ in range(2)]
        for i, t in enumerate(pool):
            rec.append((-1, "placeholder", [sshape(t)]))
        for step in range(steps):
            op = ch.pick(OPS)
            try:
                out = op(tf, ch, pool)
                err = None
            except Exception as e:  # noqa: BLE001 - an op either library refuses
                out, err = None, f"{type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''}"
            if replay is None:
                if err is not None:
                    ch.log.append(("ERR",))
                ch.log.append(("STEP",))
            else:  # skip to the end of TF's step
                while replay[ch.i] != ("STEP",):
                    ch.i += 1
                ch.i += 1
            if err is not None:
                rec.append((step, op.__name__, "error: " + err))
                continue
            if out is None:
                rec.append((step, op.__name__, None))
                continue
            outs = out if isinstance(out, list) else [out]
            outs = [o for o in outs if hasattr(o, "shape") and hasattr(o, "dtype")]
            rec.append((step, op.__name__, [sshape(o) for o in outs]))
            pool.extend(o for o in outs if o.dtype == tf.float32)
    return ch.log, rec
