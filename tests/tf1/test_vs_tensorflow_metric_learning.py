"""tf.contrib.losses.metric_learning (labels first) and the contrib.layers names added with it
(elu/relu/relu6/linear, legacy_fully_connected/relu/linear, gdn/GDN, poincare_normalize, pool)
against tf_slim, TF1 contrib's kept as a package: equal inputs, several seeds and sizes, the
edge cases (a class with one member, all labels equal, no positive pair), values and gradients;
for the layers also the variables' names and collections, with equal weights.  cluster_loss
runs tf_slim's with our own reference NMI/AMI/ARI/V-measure (written below from their
definitions) in place of sklearn's, which is not installed.  Skipped cleanly without
TensorFlow or tf_slim."""
import math
import os
import sys
import types
from collections import Counter

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

import collflow.compat.v1 as cft  # noqa: E402
from test_vs_tensorflow_feature_columns_layers_fuzz import tf_slim  # noqa: E402,F401  (the patched tf_slim)

tft = tensorflow.compat.v1
tft.disable_eager_execution()
pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"), pytest.mark.filterwarnings("ignore::DeprecationWarning")]

SLIM = None  # the patched tf_slim, set for every test


@pytest.fixture(autouse=True)
def _slim(tf_slim, monkeypatch):  # noqa: F811
    global SLIM
    SLIM = tf_slim
    from tensorflow.python.ops import array_ops  # TF 1.x's name legacy_fully_connected uses
    monkeypatch.setattr(array_ops, "unstack", tft.unstack, raising=False)
    monkeypatch.setattr(array_ops, "stack", tft.stack, raising=False)


# -- reference clustering scores for tf_slim's cluster_loss (sklearn's definitions) -------------

def _pairs(a, b):
    n = len(a)
    joint = Counter(zip(a.tolist(), b.tolist()))
    return n, joint, Counter(a.tolist()), Counter(b.tolist())


def _h(counts, n):
    return -sum(c / n * math.log(c / n) for c in counts.values())


def _mi(a, b):
    n, joint, ca, cb = _pairs(a, b)
    return sum(c / n * math.log(n * c / (ca[x] * cb[y])) for (x, y), c in joint.items())


def _one_each(a, b):
    return len(set(a.tolist())) == len(set(b.tolist())) <= 1


def ref_nmi(a, b):
    if _one_each(a, b):
        return 1.0
    mi = _mi(a, b)
    if mi == 0:
        return 0.0
    n, _, ca, cb = _pairs(a, b)
    return mi / ((_h(ca, n) + _h(cb, n)) / 2)


def ref_ami(a, b):
    if _one_each(a, b):
        return 1.0
    n, _, ca, cb = _pairs(a, b)
    emi = 0.0
    for ai in ca.values():  # hypergeometric: P(nij) = C(ai, nij) C(n - ai, bj - nij) / C(n, bj)
        for bj in cb.values():
            for nij in range(max(1, ai + bj - n), min(ai, bj) + 1):
                p = math.comb(ai, nij) * math.comb(n - ai, bj - nij) / math.comb(n, bj)
                emi += p * nij / n * math.log(n * nij / (ai * bj))
    den = (_h(ca, n) + _h(cb, n)) / 2 - emi
    eps = np.finfo(np.float64).eps
    den = min(den, -eps) if den < 0 else max(den, eps)
    return (_mi(a, b) - emi) / den


def ref_ari(a, b):
    n, joint, ca, cb = _pairs(a, b)
    same_both = sum(math.comb(c, 2) for c in joint.values())
    same_a = sum(math.comb(c, 2) for c in ca.values())
    same_b = sum(math.comb(c, 2) for c in cb.values())
    if same_a == same_b == same_both:  # the two agree on every pair
        return 1.0
    expected = same_a * same_b / math.comb(n, 2)
    return (same_both - expected) / ((same_a + same_b) / 2 - expected)


def ref_vmeasure(a, b):
    n, _, ca, cb = _pairs(a, b)
    mi = _mi(a, b)
    ha, hb = _h(ca, n), _h(cb, n)
    hom = mi / ha if ha else 1.0
    com = mi / hb if hb else 1.0
    return 0.0 if hom + com == 0 else 2 * hom * com / (hom + com)


@pytest.fixture
def tf_cluster(monkeypatch, _slim):
    fake = types.SimpleNamespace(
        normalized_mutual_info_score=lambda a, b: np.float64(ref_nmi(a, b)),
        adjusted_mutual_info_score=lambda a, b: np.float64(ref_ami(a, b)),
        adjusted_rand_score=lambda a, b: np.float64(ref_ari(a, b)),
        v_measure_score=lambda a, b: np.float64(ref_vmeasure(a, b)))
    monkeypatch.setattr(SLIM.losses.metric_learning, "metrics", fake, raising=False)
    monkeypatch.setattr(SLIM.losses.metric_learning, "HAS_SKLEARN", True)
    from tensorflow.python.ops import control_flow_ops  # TF 1.x's names tf_slim's cluster_loss uses
    monkeypatch.setattr(control_flow_ops, "while_loop", tft.while_loop, raising=False)


def test_reference_scores_known_values():
    a = np.array([0, 0, 1, 1])
    assert ref_nmi(a, np.array([5, 5, 7, 7])) == pytest.approx(1.0)
    assert ref_nmi(a, np.array([0, 1, 0, 1])) == pytest.approx(0.0, abs=1e-12)
    assert ref_ari(a, np.array([0, 1, 0, 1])) == pytest.approx(-0.5)
    assert ref_ami(a, np.array([1, 1, 0, 0])) == pytest.approx(1.0)


# -- the losses ------------------------------------------------------------------------------------

def _labels(kind, n, rng):
    if kind == "random":
        return rng.randint(0, max(2, n // 3), n)
    if kind == "singleton":  # class 9 has one member
        lab = rng.randint(0, 2, n)
        lab[-1] = 9
        return lab
    if kind == "same":
        return np.zeros(n, np.int64)
    if kind == "distinct":
        return np.arange(n)
    raise ValueError(kind)


def _loss(tf, name, lab, x, y, kw):
    L = SLIM.losses if tf is tft else cft.contrib.losses
    if name in ("triplet_semihard_loss", "lifted_struct_loss"):
        return getattr(L, name)(lab, x, **kw)
    if name == "cluster_loss":
        return L.cluster_loss(lab, x, **kw)
    return getattr(L, name)(lab, x, y, **kw)


def _run_loss(tf, name, lab, xv, yv, kw):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, xv.shape)
        y = tf.placeholder(tf.float32, yv.shape)
        out = _loss(tf, name, tf.constant(lab), x, y, kw)
        grads = [gr for gr in tf.gradients(out, [x, y]) if gr is not None]
        with tf.Session(graph=g) as s:
            return s.run([out] + grads, {x: xv, y: yv})


def _compare(name, lab, xv, yv, kw, atol=1e-5):
    want = _run_loss(tft, name, lab, xv, yv, kw)
    got = _run_loss(cft, name, lab, xv, yv, kw)
    assert len(got) == len(want), name
    for w, o in zip(want, got):
        np.testing.assert_allclose(o, w, rtol=2e-5, atol=atol, equal_nan=True, err_msg=f"{name} {kw}")
    return want[0]


@pytest.mark.parametrize("name", ["triplet_semihard_loss", "lifted_struct_loss"])
@pytest.mark.parametrize("kind", ["random", "singleton", "same", "distinct"])
@pytest.mark.parametrize("seed,n,d", [(0, 8, 4), (1, 12, 3), (2, 5, 6)])
def test_pairwise_losses(name, kind, seed, n, d):
    rng = np.random.RandomState(seed)
    lab = _labels(kind, n, rng).astype(np.int32)
    xv = rng.randn(n, d).astype(np.float32)
    if seed == 1:
        xv /= np.linalg.norm(xv, axis=1, keepdims=True)
    _compare(name, lab, xv, xv, {"margin": 0.5 + seed * 0.5})


def test_triplet_duplicate_points():
    """Equal embeddings: the clamped zero distances and their zero gradient."""
    rng = np.random.RandomState(3)
    xv = rng.randn(6, 3).astype(np.float32)
    xv[3] = xv[0]
    lab = np.array([0, 1, 0, 0, 1, 2], np.int32)
    _compare("triplet_semihard_loss", lab, xv, xv, {})
    _compare("lifted_struct_loss", lab, xv, xv, {"margin": 2.0})


@pytest.mark.parametrize("seed,n,d", [(0, 6, 4), (1, 9, 5), (2, 1, 3)])
def test_npairs_and_contrastive(seed, n, d):
    rng = np.random.RandomState(seed)
    xv, yv = rng.randn(n, d).astype(np.float32), rng.randn(n, d).astype(np.float32)
    lab = rng.randint(0, max(1, n - 2), n).astype(np.int32)
    _compare("npairs_loss", lab, xv, yv, {})
    _compare("npairs_loss", lab, xv, yv, {"reg_lambda": 0.5})
    _compare("contrastive_loss", rng.randint(0, 2, n).astype(np.int32), xv, yv, {"margin": 1.5})


def _run_multilabel(tf, sets, C, xv, yv, reg):
    g = tf.Graph()
    with g.as_default():
        sparse = [tf.SparseTensor(indices=[[0, c] for c in s], values=tf.constant([1] * len(s), tf.int64),
                                  dense_shape=[1, C]) for s in sets]
        x, y = tf.constant(xv), tf.constant(yv)
        L = SLIM.losses if tf is tft else cft.contrib.losses
        out = L.npairs_loss_multilabel(sparse, x, y, reg_lambda=reg)
        with tf.Session(graph=g) as s:
            return s.run([out] + tf.gradients(out, [x, y]))


@pytest.mark.parametrize("seed", [0, 1])
def test_npairs_multilabel(seed):
    rng = np.random.RandomState(seed)
    n, C = 4, 5
    sets = [sorted(set(rng.randint(0, C, 1 + i % 3).tolist())) for i in range(n)]
    xv, yv = rng.randn(n, 3).astype(np.float32), rng.randn(n, 3).astype(np.float32)
    for w, o in zip(_run_multilabel(tft, sets, C, xv, yv, 0.01), _run_multilabel(cft, sets, C, xv, yv, 0.01)):
        np.testing.assert_allclose(o, w, rtol=1e-5, atol=1e-6)
    with pytest.raises(TypeError, match="SparseTensors"):
        cft.contrib.losses.npairs_loss_multilabel([np.ones([1, 3])], xv, yv)


@pytest.mark.parametrize("margin_type,seed,n,k,pam", [
    *[(t, 0, 8, 3, True) for t in ("nmi", "ami", "ari", "vmeasure", "const")],
    ("nmi", 1, 9, 2, False), ("ami", 1, 9, 4, False), ("ari", 2, 7, 3, True)])
def test_cluster_loss(tf_cluster, margin_type, seed, n, k, pam):
    rng = np.random.RandomState(seed)
    # TF's 'const' compares the labels with its int64 predictions: it needs int64 labels
    lab = rng.randint(0, k, n).astype(np.int64 if margin_type == "const" else np.int32)
    xv = rng.randn(n, 3).astype(np.float32)
    xv /= np.linalg.norm(xv, axis=1, keepdims=True)
    mult = 0.5 + seed
    _compare("cluster_loss", lab, xv, xv, {"margin_multiplier": mult, "margin_type": margin_type,
                                           "enable_pam_finetuning": pam}, atol=2e-5)


def test_cluster_helpers(tf_cluster):
    rng = np.random.RandomState(6)
    d = rng.uniform(0.1, 2, (7, 7)).astype(np.float32)
    d = (d + d.T) / 2
    np.fill_diagonal(d, 0)
    lab = np.array([1, 0, 1, 2, 0, 1, 2], np.int32)
    got = []
    for tf in (tft, cft):
        ML = SLIM.losses.metric_learning if tf is tft else cft.contrib.losses.metric_learning
        with tf.Graph().as_default():
            dt = tf.constant(d)
            outs = [ML.compute_gt_cluster_score(dt, tf.constant(lab)), ML.get_cluster_assignment(dt, [4, 0, 3]),
                    ML.compute_facility_energy(dt, [4, 0, 3]), ML.pairwise_distance(dt, squared=True),
                    ML.masked_maximum(dt, tf.cast(dt > 1.0, tf.float32)),
                    ML.masked_minimum(dt, tf.cast(dt > 1.0, tf.float32))]
            outs.append(tf.gradients(outs[0], dt)[0])
            with tf.Session() as s:
                got.append(s.run(outs))
    for w, o in zip(*got):
        np.testing.assert_allclose(o, w, rtol=1e-5, atol=1e-6)


def test_cluster_loss_edge_labels(tf_cluster):
    rng = np.random.RandomState(5)
    xv = rng.randn(7, 4).astype(np.float32)
    _compare("cluster_loss", np.array([0, 0, 1, 1, 1, 2, 0], np.int32), xv, xv, {"margin_multiplier": 1.0})
    _compare("cluster_loss", np.zeros(7, np.int32), xv, xv, {"margin_multiplier": 1.0})     # one class
    _compare("cluster_loss", np.arange(4, dtype=np.int32), xv[:4], xv[:4], {"margin_multiplier": 2.0})
    v = _compare("cluster_loss", np.array([[0], [1], [0], [1], [1]], np.int32), xv[:5], xv[:5],
                 {"margin_multiplier": 3.0, "margin_type": "ami"})  # [batch, 1] labels
    assert v > 0


# -- the contrib.layers names ----------------------------------------------------------------------

def _gdn_class_twice(L, x, tf):
    layer = L.GDN(inverse=True, gamma_init=0.3, name="g")
    return layer(x) + layer(x * 0.5)


LAYER_CASES = {
    "elu": ([3, 5], lambda L, x, tf: L.elu(x, 4)),
    "relu_scope": ([2, 3, 5], lambda L, x, tf: L.relu(x, 4, scope="r")),
    "relu6": ([3, 5], lambda L, x, tf: L.relu6(x * 4.0, 6)),
    "linear_no_bias": ([3, 5], lambda L, x, tf: L.linear(x, 2, biases_initializer=None)),
    "legacy_fully_connected": ([3, 5], lambda L, x, tf: L.legacy_fully_connected(x, 4)),
    "legacy_rank3_reg": ([2, 3, 5], lambda L, x, tf: L.legacy_fully_connected(
        x, 3, activation_fn=tf.nn.tanh, name="leg", weight_regularizer=lambda w: 0.5 * tf.reduce_sum(w * w),
        bias_regularizer=lambda b: 0.1 * tf.reduce_sum(tf.abs(b)), output_collections=["mine"], weight_collections=["wc"])),
    "legacy_relu_no_bias": ([4, 5], lambda L, x, tf: L.legacy_relu(x, 3, bias_init=None, weight_collections=None)),
    "legacy_linear_frozen": ([4, 5], lambda L, x, tf: L.legacy_linear(x, 2, trainable=False) + x[:, :2]),
    "gdn": ([2, 4, 5, 3], lambda L, x, tf: L.gdn(x)),
    "gdn_rank3_inverse": ([2, 6, 4], lambda L, x, tf: L.gdn(x, inverse=True, gamma_init=0.5, name="ig")),
    "gdn_rank5": ([2, 3, 2, 3, 4], lambda L, x, tf: L.gdn(x, beta_min=0.5)),
    "gdn_nchw": ([2, 3, 4, 5], lambda L, x, tf: L.gdn(x, data_format="channels_first")),
    "gdn_ncw": ([2, 3, 5], lambda L, x, tf: L.gdn(x, data_format="channels_first", inverse=True)),
    # (rank-5 channels_first fails in TF 1.15 and tf_slim: a list added to a shape tensor)
    "gdn_twice": ([2, 3, 4], lambda L, x, tf: L.gdn(x) + L.gdn(x * 2.0)),
    "GDN_called_twice": ([2, 3, 4], _gdn_class_twice),
    "poincare": ([3, 4], lambda L, x, tf: L.poincare_normalize(x * 0.3)),
    "poincare_axis": ([2, 3, 4], lambda L, x, tf: L.poincare_normalize(x, axis=[0, 2], epsilon=0.1)),
    "pool_max": ([2, 6, 6, 3], lambda L, x, tf: L.pool(x, 2, "MAX", stride=2)),
    "pool_avg_same_1d": ([2, 7, 3], lambda L, x, tf: L.pool(x, [3], "AVG", padding="SAME", stride=2)),
    "pool_dilated": ([2, 7, 7, 2], lambda L, x, tf: L.pool(x, [2, 2], "MAX", dilation_rate=2, scope="p")),
    "pool_nchw_3d": ([1, 2, 4, 4, 4], lambda L, x, tf: L.pool(x, 2, "AVG", data_format="NCDHW", stride=[1, 2, 2])),
}


_registered = []


def _layers_of(tf):
    if tf is tft and not _registered:  # TF 1.15 registered GDN's bound gradient; tf_slim does not
        tensorflow.RegisterGradient("GDNLowerBound")(SLIM.layers.GDN._lower_bound_grad)
        _registered.append(True)
    return SLIM.layers if tf is tft else cft.contrib.layers


def _run_layer(tf, name, shape, build, zeros):
    g = tf.Graph()
    with g.as_default():
        xv = np.random.RandomState(0).uniform(-2, 2, shape).astype(np.float32)
        x = tf.placeholder(tf.float32, shape)
        out = build(_layers_of(tf), x, tf)
        vs = sorted(tf.global_variables(), key=lambda v: v.name)
        tv = sorted(tf.trainable_variables(), key=lambda v: v.name)
        w = np.random.RandomState(1).uniform(0.5, 1.5, out.shape.as_list()).astype(np.float32)
        grads = tf.gradients(tf.reduce_sum(out * w), [x] + tv)
        regs = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
        assigns = []
        for v in vs:
            val = np.random.RandomState(sum(map(ord, v.name))).uniform(0.2, 1, v.shape.as_list()).astype(np.float32)
            if zeros and "reparam" in v.name:  # under the lower bounds: their gradient rule
                val.flat[::3] = 0.0
            assigns.append(tf.assign(v, val))
        cols = {k: sorted(getattr(t, "name", str(t)) for t in tf.get_collection(k))
                for k in ("weights", "biases", "activations", "mine", "wc", "model_variables")}
        meta = dict(vars=[(v.name, v.shape.as_list()) for v in vs], train=[v.name for v in tv], cols=cols,
                    shape=out.shape.as_list(), regs=len(regs), out=None if "pool" in name else out.name)
        with tf.Session(graph=g) as s:
            s.run(tf.global_variables_initializer())
            init = s.run(vs)
            s.run(assigns)
            return init + s.run([out] + grads + regs, {x: xv}), meta


@pytest.mark.parametrize("name", sorted(LAYER_CASES))
def test_layer_matches_tf_slim(name):
    shape, build = LAYER_CASES[name]
    for zeros in ((False, True) if "gdn" in name.lower() else (False,)):
        want, want_meta = _run_layer(tft, name, shape, build, zeros)
        got, got_meta = _run_layer(cft, name, shape, build, zeros)
        if name.startswith(("elu", "relu", "linear", "legacy")):  # initial values are random
            n = len(want_meta["vars"])
            want, got = want[n:], got[n:]
        assert got_meta == want_meta
        assert len(got) == len(want)
        for i, (a, b) in enumerate(zip(got, want)):
            np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5, err_msg=f"{name} fetch {i} zeros={zeros}")


def test_partials_are_fully_connected_under_arg_scope():
    L = cft.contrib.layers
    assert L.relu.func is L.fully_connected and L.linear.keywords == {"activation_fn": None}
    assert cft.contrib.slim.legacy_linear.func is L.legacy_fully_connected
    with cft.Graph().as_default():
        with cft.contrib.framework.arg_scope([L.fully_connected], biases_initializer=None):
            L.elu(cft.zeros([2, 3]), 4)
        assert [v.name for v in cft.global_variables()] == ["fully_connected/weights:0"]


def test_layer_errors():
    L = cft.contrib.layers
    with cft.Graph().as_default():
        with pytest.raises(ValueError, match="data_format"):
            L.GDN(data_format="NHWC")
        with pytest.raises(ValueError, match="rank 3 to 5"):
            L.gdn(cft.zeros([2, 3]))
        with pytest.raises(ValueError, match="channel dimension"):
            L.gdn(cft.placeholder(cft.float32, [2, 3, None]))
        with pytest.raises(ValueError, match="at least 2"):
            L.legacy_fully_connected(cft.zeros([3]), 2)
        with pytest.raises(ValueError, match=">= 3"):
            L.pool(cft.zeros([2, 3]), 2, "MAX")
        with pytest.raises(ValueError, match="kernel_size"):
            L.pool(cft.zeros([1, 4, 4, 1]), [2, 2, 2], "MAX")
