"""Randomised differential checks against TensorFlow of tf.feature_column and the TF1 layer
functions (tf.layers, tf.contrib.layers).

Feature columns: each seed draws 1-4 columns (numeric with shape / default / normalizer_fn,
bucketized, identity, vocabulary list and file with OOV buckets or default, string and int
hash buckets, crossed (nested, with hash_key), weighted, embedding with mean/sum/sqrtn and
max_norm, shared embeddings, indicator) over random dense and SparseTensor features with
missing values, and builds input_layer or linear_model (units, sparse_combiner) in both
libraries; every variable gets the same values by assign; compared: the output, the
gradients of sum(output * W) w.r.t. every trainable variable, the variables' names and
shapes and the MODEL/TRAINABLE collections.  Some seeds instead write the features as
serialized tf.train.Examples and parse them with make_parse_example_spec + parse_example.

Layers: each seed draws one layer (dense, conv1d/2d/3d, conv2d_transpose, separable_conv1d/2d,
max/average pooling 1-3d, batch_normalization (training True/False/tensor, fused None/False,
axis), dropout at inference, flatten; contrib fully_connected / conv2d (with batch_norm as
normalizer, l2 regularizers), batch_norm (decay, center, scale, is_training,
updates_collections None), layer_norm, flatten, l1/l2 + apply_regularization; a scope-reuse
program).  TF2 has no tf.contrib: the reference is tf_slim (TF1 contrib's layers, kept as a
package), patched in-test for the three TF-internal names it lost.  Compared: outputs,
gradients w.r.t. the input and the variables, the moving statistics after running each
UPDATE_OPS op, REGULARIZATION_LOSSES (names and values), variable names, MODEL_VARIABLES.

Left out, as TF 2.21 is not TF 1.15's yardstick there: the names of the moving-average
update ops (TF 2.21 makes resource variables: ".../AssignMovingAvg/AssignSubVariableOp";
TF 1.15's ref variables give collflow's ".../AssignMovingAvg:0"); conv3d with unequal
strides (TF 2.21's CPU Conv3D returns wrong values for e.g. strides [1, 1, 2] on a
[2, 5, 4, 4, 1] input with a 3x3x3 VALID kernel, which collflow and a NumPy loop agree on);
conv2d_transpose with a kernel smaller than its stride (TF 2.21's CPU kernel crashes the
process, e.g. kernel 1x1, strides [1, 2], VALID on [1, 5, 6, 2]); the static batch size of
input_layer / linear_model outputs (TF's shape inference constant-folds the SparseTensors'
dense_shape through Cast/Slice/ConcatV2 in Reshape and gets [3, 1] where collflow says
[None, 1]; values agree).  Skipped cleanly without TensorFlow.
"""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

import collflow.compat.v1 as cft  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()

# TensorFlow's notices that its feature columns and TF1 layers are deprecated
pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning"), pytest.mark.timeout(600)]

FC_SEEDS = list(range(90)) + [158, 257]
PARSE_SEEDS = list(range(100, 130))
LAYER_SEEDS = list(range(150)) + [229, 286, 363, 405, 407, 342]  # + contrib batch_norm on rank 2
_VOCAB = {}


@pytest.fixture(scope="module", autouse=True)
def _vocab_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("fc") / "vocab.txt"
    path.write_text("\n".join(WORDS[:6]) + "\n", encoding="utf-8")
    _VOCAB["path"] = str(path)
    yield


# -- feature columns ---------------------------------------------------------------------------

WORDS = ["a", "bb", "ccc", "dog", "cat", "\u00e9t\u00e9", "x y", "zebra", "0", "12"]


def gen_case(seed):
    """A config: a list of column specs and raw feature values, all plain python/numpy."""
    r = np.random.RandomState(seed)
    B = int(r.randint(1, 5))
    feats = {}      # key -> ("dense", array) / ("sparse", indices, values, shape)
    cols = []       # column spec trees
    ncols = int(r.randint(1, 5))
    k = [0]

    def key():
        k[0] += 1
        return f"f{k[0]}"

    def sparse_of(vals_fn, dtype, width=3, allow_empty=True):
        idx, vals = [], []
        for b in range(B):
            n = int(r.randint(0 if allow_empty else 1, width + 1))
            for j in range(n):
                idx.append([b, j]); vals.append(vals_fn())
        shape = [B, max([i[1] for i in idx], default=-1) + 1 if r.rand() < 0.5 else width]
        return ("sparse", np.array(idx, np.int64).reshape(-1, 2), np.array(vals, dtype), np.array(shape, np.int64))

    def dense_words(keep):
        # [B, 2] strings; with `keep`, each is "" (missing) with probability 1 - keep
        return np.array([[WORDS[r.randint(len(WORDS))] if keep is None or r.rand() < keep else ""
                          for _ in range(2)] for _ in range(B)], object)

    def numeric():
        kk = key()
        shape = [(1,), (2,), (2, 3)][r.randint(3)]
        dtype = ["float32", "int64"][r.randint(2)]
        dv = None
        if r.rand() < 0.3:
            dv = float(r.randint(-3, 3)) if dtype == "float32" else int(r.randint(-3, 3))
        norm = int(r.randint(3)) if dtype == "float32" else 0
        if dtype == "float32":
            arr = r.uniform(-3, 3, (B,) + shape).astype(np.float32)
        else:
            arr = r.randint(-5, 60, (B,) + shape).astype(np.int64)
        if shape == (1,) and r.rand() < 0.4:
            arr = arr.reshape(B)
        feats[kk] = ("dense", arr)
        return ("numeric", kk, shape, dv, dtype, norm)

    def categorical(allow_cross_bad=False, depth=0):
        t = r.randint(7) if depth == 0 else r.randint(6)
        kk = key()
        if t == 0:  # identity
            nb = int(r.randint(1, 8))
            dv = int(r.randint(nb)) if r.rand() < 0.4 else None
            hi = nb + 3 if dv is not None else nb
            if r.rand() < 0.5:
                feats[kk] = sparse_of(lambda: r.randint(0, hi), np.int64)
            else:
                a = r.randint(-1, hi, (B, int(r.randint(1, 4)))).astype(np.int64)
                feats[kk] = ("dense", a)
            return ("identity", kk, nb, dv)
        if t == 1:  # vocab list
            is_str = r.rand() < 0.6
            if is_str:
                vocab = list(WORDS[:int(r.randint(1, 7))])
            else:
                vocab = [int(x) for x in r.permutation(20)[:int(r.randint(1, 7))]]
            oov = int(r.randint(0, 3)) if r.rand() < 0.5 else 0
            dv = -1 if oov else [-1, 0][r.randint(2)]
            if dv == 0 and len(vocab) < 1:
                dv = -1
            if is_str:
                feats[kk] = sparse_of(lambda: WORDS[r.randint(len(WORDS))], object) if r.rand() < 0.5 else \
                    ("dense", dense_words(0.8))
            else:
                feats[kk] = sparse_of(lambda: r.randint(0, 25), np.int64) if r.rand() < 0.5 else \
                    ("dense", r.randint(-1, 25, (B, 2)).astype(np.int64))
            return ("vocab_list", kk, vocab, oov, dv)
        if t == 2:  # hash
            hb = int(r.randint(1, 30))
            if r.rand() < 0.6:
                feats[kk] = sparse_of(lambda: WORDS[r.randint(len(WORDS))], object) if r.rand() < 0.5 else \
                    ("dense", dense_words(None))
                return ("hash", kk, hb, "string")
            feats[kk] = sparse_of(lambda: r.randint(-1000, 1000), np.int64) if r.rand() < 0.5 else \
                ("dense", r.randint(-1, 1000, (B, 2)).astype(np.int64))
            return ("hash", kk, hb, "int64")
        if t == 3:  # vocab file
            oov = int(r.randint(0, 3)) if r.rand() < 0.5 else 0
            size = int(r.randint(1, 7)) if r.rand() < 0.5 else None
            dv = None if oov or r.rand() < 0.5 else 0
            feats[kk] = sparse_of(lambda: WORDS[r.randint(len(WORDS))], object)
            return ("vocab_file", kk, size, oov, dv)
        if t == 4:  # bucketized
            k[0] -= 1
            num = numeric_1d()
            bnd = sorted(set(float(x) for x in r.randint(-3, 40, int(r.randint(1, 5)))))
            return ("bucketized", num, bnd)
        if t == 5:  # crossed
            k[0] -= 1
            keys = []
            for _ in range(int(r.randint(2, 4))):
                if r.rand() < 0.4:
                    kk2 = key()
                    feats[kk2] = sparse_of(lambda: WORDS[r.randint(len(WORDS))], object) if r.rand() < 0.5 else \
                        ("dense", dense_words(None))
                    keys.append(kk2)
                else:
                    c = categorical(depth=1)
                    while c[0] in ("hash",):
                        c = categorical(depth=1)
                    keys.append(c)
            hk = None if r.rand() < 0.7 else int(r.randint(1, 1 << 30))
            return ("crossed", keys, int(r.randint(1, 50)), hk)
        # weighted
        nb = int(r.randint(1, 8))
        sp = sparse_of(lambda: r.randint(0, nb), np.int64, allow_empty=True)
        feats[kk] = sp
        wk = key()
        feats[wk] = ("sparse", sp[1], r.uniform(-2, 2, len(sp[2])).astype(np.float32), sp[3])
        return ("weighted", ("identity", kk, nb, None), wk)

    def numeric_1d():
        kk = key()
        shape = [(1,), (2,)][r.randint(2)]
        arr = r.uniform(-5, 45, (B,) + shape).astype(np.float32)
        if shape == (1,) and r.rand() < 0.4:
            arr = arr.reshape(B)
        feats[kk] = ("dense", arr)
        return ("numeric", kk, shape, None, "float32", 0)

    mode = ["input_layer", "linear_model"][r.randint(2)]
    for _ in range(ncols):
        t = r.randint(6)
        if t == 0:
            cols.append(numeric())
        elif t == 1:
            num = numeric_1d()
            bnd = sorted(set(float(x) for x in r.randint(-3, 40, int(r.randint(1, 5)))))
            cols.append(("bucketized", num, bnd))
        elif t == 2:
            cols.append(("indicator", categorical()))
        elif t == 3:
            cols.append(("embedding", categorical(), int(r.randint(1, 4)), ["mean", "sum", "sqrtn"][r.randint(3)],
                         None if r.rand() < 0.6 else float(r.uniform(0.3, 2))))
        elif t == 4:
            c = categorical()
            if mode == "linear_model":
                cols.append(c)
            else:
                cols.append(("indicator", c))
        else:
            nb = int(r.randint(2, 6))
            ks = []
            for _ in range(int(r.randint(1, 3))):
                kk = key()
                feats[kk] = sparse_of(lambda: r.randint(0, nb), np.int64)
                ks.append(("identity", kk, nb, None))
            cols.append(("shared", ks, int(r.randint(1, 4)), ["mean", "sum", "sqrtn"][r.randint(3)],
                         None if r.rand() < 0.6 else float(r.uniform(0.3, 2))))
    opts = dict(units=int(r.randint(1, 3)), sparse_combiner=["sum", "mean", "sqrtn"][r.randint(3)])
    return dict(B=B, feats=feats, cols=cols, mode=mode, opts=opts, seed=seed)


NORMS = [None, lambda x: x * 2.0 - 1.0, lambda x: x / 3.0 + 0.5]


def build_col(tf, spec, shared_cache):
    fc = tf.feature_column
    t = spec[0]
    if t == "numeric":
        _, kk, shape, dv, dtype, norm = spec
        return fc.numeric_column(kk, shape=shape, default_value=dv, dtype=getattr(tf, dtype), normalizer_fn=NORMS[norm])
    if t == "bucketized":
        return fc.bucketized_column(build_col(tf, spec[1], shared_cache), spec[2])
    if t == "identity":
        return fc.categorical_column_with_identity(spec[1], spec[2], default_value=spec[3])
    if t == "vocab_list":
        return fc.categorical_column_with_vocabulary_list(spec[1], spec[2], num_oov_buckets=spec[3],
                                                          default_value=spec[4])
    if t == "hash":
        return fc.categorical_column_with_hash_bucket(spec[1], spec[2], dtype=getattr(tf, spec[3]))
    if t == "vocab_file":
        return fc.categorical_column_with_vocabulary_file(spec[1], _VOCAB["path"], vocabulary_size=spec[2],
                                                          num_oov_buckets=spec[3], default_value=spec[4])
    if t == "crossed":
        keys = [k if isinstance(k, str) else build_col(tf, k, shared_cache) for k in spec[1]]
        return fc.crossed_column(keys, spec[2], hash_key=spec[3])
    if t == "weighted":
        return fc.weighted_categorical_column(build_col(tf, spec[1], shared_cache), spec[2])
    if t == "indicator":
        return fc.indicator_column(build_col(tf, spec[1], shared_cache))
    if t == "embedding":
        return fc.embedding_column(build_col(tf, spec[1], shared_cache), spec[2], combiner=spec[3], max_norm=spec[4])
    if t == "shared":
        return fc.shared_embedding_columns([build_col(tf, s, shared_cache) for s in spec[1]], spec[2],
                                           combiner=spec[3], max_norm=spec[4])
    raise ValueError(t)


def make_feats(tf, feats):
    out = {}
    for kk, v in feats.items():
        if v[0] == "dense":
            a = v[1]
            out[kk] = tf.constant(a if a.dtype != object else np.vectorize(str.encode, otypes=[object])(a))
        else:
            vals = v[2]
            if vals.dtype == object:
                vals = tf.constant([s.encode() for s in vals], dtype=tf.string)
            else:
                vals = tf.constant(vals)
            out[kk] = tf.SparseTensor(tf.constant(v[1]), vals, tf.constant(v[3]))
    return out


def run(tf, case):
    g = tf.Graph()
    with g.as_default():
        cols = []
        for s in case["cols"]:
            c = build_col(tf, s, {})
            cols.extend(c if isinstance(c, list) else [c])
        feats = make_feats(tf, case["feats"])
        if case["mode"] == "input_layer":
            out = tf.feature_column.input_layer(feats, cols)
        else:
            out = tf.feature_column.linear_model(feats, cols, **case["opts"])
        vs = sorted(tf.global_variables(), key=lambda v: v.name)
        tv = sorted(tf.trainable_variables(), key=lambda v: v.name)
        r = np.random.RandomState(case["seed"] + 1)
        W = tf.constant(r.uniform(0.5, 1.5, (case["B"], out.shape.as_list()[1])).astype(np.float32))
        loss = tf.reduce_sum(out * W)
        grads = tf.gradients(loss, tv)
        grads = [tf.convert_to_tensor(gr) if gr is not None else tf.zeros_like(v) for gr, v in zip(grads, tv)]
        assigns = []
        for v in vs:
            rr = np.random.RandomState(sum(map(ord, v.name)) + case["seed"])
            assigns.append(tf.assign(v, rr.uniform(-1, 1, v.shape.as_list()).astype(np.float32)))
        with tf.Session(graph=g) as s:
            s.run([tf.global_variables_initializer(), tf.tables_initializer()])
            s.run(assigns)
            res = s.run([out] + grads)
        meta = dict(vars=[(v.name, tuple(v.shape.as_list())) for v in vs], train=[v.name for v in tv],
                    shape=out.shape.as_list(),
                    colls={k: sorted(x.name for x in tf.get_collection(k))
                           for k in ["model_variables", "trainable_variables"]})
        return res, meta


def rows_of(v, B, ignore):
    """The per-example value lists of a raw feature."""
    if v[0] == "dense":
        a = v[1].reshape(B, -1)
        return [[x for x in row if not (ignore is not None and x == ignore)] for row in a]
    rows = [[] for _ in range(B)]
    for (b, _), x in zip(v[1], v[2]):
        rows[b].append(x)
    return rows


def to_examples(case, spec):
    B = case["B"]
    exs = []
    per = {}
    for kk, sp in spec.items():
        fixed = type(sp).__name__ == "FixedLenFeature"
        ignore = None if fixed else ("" if sp.dtype == tft.string else -1 if sp.dtype.is_integer else None)
        per[kk] = (fixed, sp, rows_of(case["feats"][kk], B, ignore))
    r = np.random.RandomState(case["seed"] + 7)
    for b in range(B):
        f = {}
        for kk, (fixed, sp, rows) in per.items():
            vals = rows[b]
            if fixed and sp.default_value is not None and r.rand() < 0.3:
                continue  # a missing fixed-length feature takes its default
            if sp.dtype == tft.string:
                f[kk] = tft.train.Feature(bytes_list=tft.train.BytesList(value=[str(x).encode() for x in vals]))
            elif sp.dtype.is_integer:
                f[kk] = tft.train.Feature(int64_list=tft.train.Int64List(value=[int(x) for x in vals]))
            else:
                f[kk] = tft.train.Feature(float_list=tft.train.FloatList(value=[float(x) for x in vals]))
        exs.append(tft.train.Example(features=tft.train.Features(feature=f)).SerializeToString())
    return exs


def spec_repr(spec):
    out = {}
    for k, v in spec.items():
        out[k] = (type(v).__name__, tuple(getattr(v, "shape", ()) or ()), v.dtype.name,
                  getattr(v, "default_value", None))
    return out


def run_parsed(tf, case, exs):
    g = tf.Graph()
    with g.as_default():
        cols = []
        for s in case["cols"]:
            c = build_col(tf, s, {})
            cols.extend(c if isinstance(c, list) else [c])
        spec = tf.feature_column.make_parse_example_spec(cols)
        ser = tf.placeholder(tf.string, [None])
        feats = tf.parse_example(ser, spec)
        if case["mode"] == "input_layer":
            out = tf.feature_column.input_layer(feats, cols)
        else:
            out = tf.feature_column.linear_model(feats, cols, **case["opts"])
        vs = sorted(tf.global_variables(), key=lambda v: v.name)
        assigns = []
        for v in vs:
            rr = np.random.RandomState(sum(map(ord, v.name)) + case["seed"])
            assigns.append(tf.assign(v, rr.uniform(-1, 1, v.shape.as_list()).astype(np.float32)))
        with tf.Session(graph=g) as s:
            s.run([tf.global_variables_initializer(), tf.tables_initializer()])
            s.run(assigns)
            return spec_repr(spec), s.run(out, {ser: exs})


def _parse_spec(case):
    """TF's parse_example spec of the case's feature columns."""
    g = tft.Graph()
    with g.as_default():
        cols = []
        for s in case["cols"]:
            c = build_col(tft, s, {})
            cols.extend(c if isinstance(c, list) else [c])
        return tft.feature_column.make_parse_example_spec(cols)


def _outcome(fn, *args):
    try:
        return fn(*args)
    except Exception as e:  # both libraries must refuse the same programs
        return e


@pytest.mark.parametrize("seed", FC_SEEDS)
def test_feature_columns_match_tensorflow(seed):
    case = gen_case(seed)
    a, b = _outcome(run, tft, case), _outcome(run, cft, case)
    if isinstance(a, Exception) or isinstance(b, Exception):
        assert isinstance(a, Exception) and isinstance(b, Exception), (case["cols"], a, b)
        return
    (ra, ma), (rb, mb) = a, b
    ma.pop("shape"), mb.pop("shape")  # the static batch size: see the header
    assert ma == mb, case["cols"]
    for i, (x, y) in enumerate(zip(ra, rb)):
        np.testing.assert_allclose(y, x, rtol=1e-4, atol=1e-5, err_msg=f"{case['cols']}: fetch {i}")


@pytest.mark.parametrize("seed", PARSE_SEEDS)
def test_feature_columns_on_parsed_examples_match_tensorflow(seed):
    case = gen_case(seed)
    exs = to_examples(case, _parse_spec(case))
    a, b = run_parsed(tft, case, exs), run_parsed(cft, case, exs)
    assert a[0] == b[0], case["cols"]
    np.testing.assert_allclose(b[1], a[1], rtol=1e-4, atol=1e-5, err_msg=str(case["cols"]))


# -- layers ------------------------------------------------------------------------------------

ACTS = [None, "relu", "tanh"]


def act(tf, a):
    return None if a is None else getattr(tf.nn, a)


def gen_layer_case(seed):
    r = np.random.RandomState(seed)
    kind = ["dense", "conv1d", "conv2d", "conv3d", "conv2d_transpose", "sep1d", "sep2d", "pool", "bn", "dropout",
            "flatten", "c_fc", "c_conv2d", "c_bn", "c_ln", "c_flatten", "c_reg", "reuse"][r.randint(18)]
    B = int(r.randint(1, 4))
    c = dict(kind=kind, seed=seed, B=B)
    if kind == "dense":
        c.update(shape=[B] + [int(r.randint(1, 4)) for _ in range(r.randint(1, 3))], units=int(r.randint(1, 5)),
                 act=ACTS[r.randint(3)], use_bias=bool(r.rand() < 0.8), reg=bool(r.rand() < 0.4))
    elif kind.startswith("conv") or kind.startswith("sep"):
        rank = {"conv1d": 1, "conv2d": 2, "conv3d": 3, "conv2d_transpose": 2, "sep1d": 1, "sep2d": 2}[kind]
        k = [int(r.randint(1, 4)) for _ in range(rank)]
        stride = [int(r.randint(1, 3)) for _ in range(rank)]
        if kind == "conv3d":  # TF 2.21's CPU Conv3D is wrong for some unequal strides (see the header)
            stride = [stride[0]] * rank
        if kind == "conv2d_transpose":  # TF 2.21 crashes (SIGSEGV) on a kernel smaller than its stride
            stride = [min(st, kk) for st, kk in zip(stride, k)]
        dil = [1] * rank
        if r.rand() < 0.3 and kind != "conv2d_transpose":
            stride = [1] * rank
            dil = [int(r.randint(1, 3)) for _ in range(rank)]
        spatial = [int(r.randint(max(k) * max(dil), 7)) for _ in range(rank)]
        c.update(shape=[B] + spatial + [int(r.randint(1, 4))], filters=int(r.randint(1, 4)), k=k, stride=stride,
                 dil=dil, padding=["valid", "same"][r.randint(2)], act=ACTS[r.randint(3)],
                 use_bias=bool(r.rand() < 0.8), dm=int(r.randint(1, 3)), reg=bool(r.rand() < 0.3))
    elif kind == "pool":
        rank = int(r.randint(1, 4))
        k = [int(r.randint(1, 4)) for _ in range(rank)]
        c.update(rank=rank, shape=[B] + [int(r.randint(max(k), 7)) for _ in range(rank)] + [int(r.randint(1, 3))],
                 k=k, stride=[int(r.randint(1, 3)) for _ in range(rank)], padding=["valid", "same"][r.randint(2)],
                 op=["max", "average"][r.randint(2)])
    elif kind in ("bn", "c_bn"):
        rank = int(r.randint(2, 5))
        c.update(shape=[int(r.randint(2, 5))] + [int(r.randint(1, 4)) for _ in range(rank - 1)],
                 training=[True, False, "ph"][r.randint(3)], center=bool(r.rand() < 0.7), scale=bool(r.rand() < 0.7),
                 momentum=float(r.choice([0.9, 0.99, 0.5])), eps=float(r.choice([1e-3, 1e-5, 0.1])),
                 axis=int(r.choice([-1, 1])) if rank > 2 else -1, upd=[None, "default"][r.randint(2)],
                 fused=[None, False][r.randint(2)])
    elif kind == "dropout":
        c.update(shape=[B, 3, 2], rate=float(r.uniform(0, 0.9)))
    elif kind in ("flatten", "c_flatten"):
        c.update(shape=[B] + [int(r.randint(1, 4)) for _ in range(r.randint(1, 4))])
    elif kind == "c_fc":
        c.update(shape=[B] + [int(r.randint(1, 4)) for _ in range(r.randint(1, 3))], units=int(r.randint(1, 5)),
                 act=[None, "relu", "tanh"][r.randint(3)], norm=bool(r.rand() < 0.3), reg=bool(r.rand() < 0.5),
                 bias=bool(r.rand() < 0.8))
    elif kind == "c_conv2d":
        k = [int(r.randint(1, 4)) for _ in range(2)]
        rate = int(r.randint(1, 3)) if r.rand() < 0.3 else 1
        stride = 1 if rate > 1 else int(r.randint(1, 3))
        c.update(shape=[B, int(r.randint(max(k) * rate, 7)), int(r.randint(max(k) * rate, 7)), int(r.randint(1, 4))],
                 filters=int(r.randint(1, 4)), k=k, stride=stride, rate=rate, padding=["VALID", "SAME"][r.randint(2)],
                 act=[None, "relu"][r.randint(2)], norm=bool(r.rand() < 0.3), reg=bool(r.rand() < 0.5))
    elif kind == "c_ln":
        rank = int(r.randint(2, 5))
        c.update(shape=[B] + [int(r.randint(1, 4)) for _ in range(rank - 1)], center=bool(r.rand() < 0.7),
                 scale=bool(r.rand() < 0.7), bna=int(r.randint(1, rank)),
                 bpa=int(r.choice([-1] + list(range(1, rank)))),
                 act=[None, "relu"][r.randint(2)])
    elif kind == "c_reg":
        c.update(n=int(r.randint(1, 4)), scale=float(r.uniform(0.01, 1)), l1=bool(r.rand() < 0.5))
    elif kind == "reuse":
        c.update(shape=[B, 3], units=int(r.randint(1, 4)), which=["dense", "c_fc", "bn", "conv"][r.randint(4)])
    return c


def build(tf, c, x, slim):
    """The case's layer(s) applied to x; returns the output."""
    k = c["kind"]
    L = tf.layers
    reg = (lambda w: 0.5 * tf.reduce_sum(w * w)) if c.get("reg") else None
    if k == "dense":
        return L.dense(x, c["units"], activation=act(tf, c["act"]), use_bias=c["use_bias"], kernel_regularizer=reg,
                       bias_regularizer=reg)
    if k in ("conv1d", "conv2d", "conv3d"):
        return getattr(L, k)(x, c["filters"], c["k"], strides=c["stride"], padding=c["padding"],
                             dilation_rate=c["dil"], activation=act(tf, c["act"]), use_bias=c["use_bias"],
                             kernel_regularizer=reg)
    if k == "conv2d_transpose":
        return L.conv2d_transpose(x, c["filters"], c["k"], strides=c["stride"], padding=c["padding"],
                                  activation=act(tf, c["act"]), use_bias=c["use_bias"], kernel_regularizer=reg)
    if k in ("sep1d", "sep2d"):
        fn = L.separable_conv1d if k == "sep1d" else L.separable_conv2d
        return fn(x, c["filters"], c["k"], strides=c["stride"], padding=c["padding"], dilation_rate=c["dil"],
                  depth_multiplier=c["dm"], activation=act(tf, c["act"]), use_bias=c["use_bias"],
                  depthwise_regularizer=reg, pointwise_regularizer=reg)
    if k == "pool":
        fn = getattr(L, f"{c['op']}_pooling{c['rank']}d")
        return fn(x, c["k"], c["stride"], padding=c["padding"])
    if k == "bn":
        tr = c["training"]
        if tr == "ph":
            tr = tf.placeholder_with_default(True, [])
        return L.batch_normalization(x, axis=c["axis"], momentum=c["momentum"], epsilon=c["eps"], center=c["center"],
                                     scale=c["scale"], training=tr, fused=c["fused"])
    if k == "dropout":
        return L.dropout(x, c["rate"], training=False)
    if k == "flatten":
        return L.flatten(x)
    if k == "c_fc":
        return slim.fully_connected(x, c["units"], activation_fn=act(tf, c["act"]),
                                    normalizer_fn=slim.batch_norm if c["norm"] else None,
                                    weights_regularizer=slim.l2_regularizer(0.3) if c["reg"] else None,
                                    biases_initializer=tf.zeros_initializer() if c["bias"] else None)
    if k == "c_conv2d":
        return slim.conv2d(x, c["filters"], c["k"], stride=c["stride"], rate=c["rate"], padding=c["padding"],
                           activation_fn=act(tf, c["act"]), normalizer_fn=slim.batch_norm if c["norm"] else None,
                           weights_regularizer=slim.l2_regularizer(0.3) if c["reg"] else None)
    if k == "c_bn":
        tr = c["training"]
        if tr == "ph":
            tr = tf.placeholder_with_default(True, [])
        kw = {} if c["upd"] == "default" else {"updates_collections": None}
        return slim.batch_norm(x, decay=c["momentum"], center=c["center"], scale=c["scale"], epsilon=c["eps"],
                               is_training=tr, fused=c["fused"], **kw)
    if k == "c_ln":
        return slim.layer_norm(x, center=c["center"], scale=c["scale"], activation_fn=act(tf, c["act"]),
                               begin_norm_axis=c["bna"], begin_params_axis=c["bpa"])
    if k == "c_flatten":
        return slim.flatten(x)
    if k == "reuse":
        outs = []
        for i in range(2):
            with tf.variable_scope("blk", reuse=bool(i)):
                if c["which"] == "dense":
                    outs.append(L.dense(x, c["units"], name="d"))
                    outs.append(L.dense(x, c["units"]))
                elif c["which"] == "c_fc":
                    outs.append(slim.fully_connected(x, c["units"]))
                    outs.append(slim.fully_connected(x, c["units"], scope="fc2"))
                elif c["which"] == "bn":
                    outs.append(L.batch_normalization(x, training=True, name="bn"))
                    outs.append(slim.batch_norm(x, is_training=True))
                else:
                    outs.append(L.conv1d(tf.expand_dims(x, -1), c["units"], 2, name="cv"))
        return tf.concat([tf.reshape(o, [c["B"], -1]) for o in outs], 1)
    raise ValueError(k)


def run_layer(tf, c, slim):
    g = tf.Graph()
    with g.as_default():
        r = np.random.RandomState(c["seed"])
        if c["kind"] == "c_reg":
            ws = [tf.get_variable(f"w{i}", [2, 3]) for i in range(c["n"])]
            rg = slim.l1_regularizer(c["scale"]) if c["l1"] else slim.l2_regularizer(c["scale"])
            out = tf.reshape(slim.apply_regularization(rg, ws), [1, 1])
            xv = np.zeros((1,), np.float32)
            x = tf.placeholder(tf.float32, [1])
            out = out + tf.reduce_sum(x)
        else:
            xv = r.uniform(-2, 2, c["shape"]).astype(np.float32)
            x = tf.placeholder(tf.float32, c["shape"])
            out = build(tf, c, x, slim)
        vs = sorted(tf.global_variables(), key=lambda v: v.name)
        tv = sorted(tf.trainable_variables(), key=lambda v: v.name)
        W = tf.constant(np.random.RandomState(c["seed"] + 1).uniform(0.5, 1.5, out.shape.as_list()).astype(np.float32))
        loss = tf.reduce_sum(out * W)
        grads = tf.gradients(loss, [x] + tv)
        grads = [tf.convert_to_tensor(gr) if gr is not None else tf.zeros_like(v) for gr, v in zip(grads, [x] + tv)]
        regs = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
        upd = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
        assigns = []
        for v in vs:
            rr = np.random.RandomState(sum(map(ord, v.name)) + c["seed"])
            lo = 0.2 if "variance" in v.name else -1
            assigns.append(tf.assign(v, rr.uniform(lo, 1, v.shape.as_list()).astype(np.float32)))
        meta = dict(vars=[(v.name, tuple(v.shape.as_list())) for v in vs], train=[v.name for v in tv],
                    shape=out.shape.as_list(), nupd=len(upd),
                    regs=len(regs), regn=[t.name for t in regs],
                    model=sorted(v.name for v in tf.get_collection(tf.GraphKeys.MODEL_VARIABLES)))
        with tf.Session(graph=g) as s:
            s.run(tf.global_variables_initializer())
            s.run(assigns)
            res = s.run([out] + grads + regs, {x: xv})
            for u in upd:
                s.run(u, {x: xv})
            res += s.run(vs)
        return res, meta


@pytest.fixture
def tf_slim(monkeypatch):
    """tf_slim, with the TF-internal names it imports from TF 1.x put back for this test."""
    slim = pytest.importorskip("tf_slim", reason="tf_slim (TF1 contrib's layers) is not installed")
    import importlib
    from tensorflow.python.framework import ops as tf_ops
    from tensorflow.python.ops import control_flow_ops
    monkeypatch.setattr(tf_ops, "Tensor", tft.Tensor, raising=False)
    monkeypatch.setattr(control_flow_ops, "cond", tft.cond, raising=False)
    # its non-fused batch_norm builds TF1's tf.layers BatchNormalization
    monkeypatch.setattr(importlib.import_module("tf_slim.layers.layers"), "normalization_layers", tft.layers)
    return slim


@pytest.mark.parametrize("seed", LAYER_SEEDS)
def test_layers_match_tensorflow(seed, tf_slim):
    c = gen_layer_case(seed)
    a = _outcome(run_layer, tft, c, tf_slim)
    b = _outcome(run_layer, cft, c, cft.contrib.layers)
    if isinstance(a, Exception) or isinstance(b, Exception):
        assert isinstance(a, Exception) and isinstance(b, Exception), (c, a, b)
        return
    (ra, ma), (rb, mb) = a, b
    assert ma == mb, c
    assert len(ra) == len(rb)
    for i, (x, y) in enumerate(zip(ra, rb)):
        np.testing.assert_allclose(y, x, rtol=1e-4, atol=1e-4, err_msg=f"{c}: fetch {i}")
