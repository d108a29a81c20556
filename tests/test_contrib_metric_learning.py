"""tf.contrib.losses.metric_learning (collflow/contrib/metric_learning.py) against NumPy loop
references written from the losses' definitions, their gradients against finite differences
(tests/gradcheck.py), the clustering scores against hand-computed values; and the contrib.layers
names of collflow/contrib/layers_gdn.py (gdn/GDN, poincare_normalize, pool, the activation
partials, legacy_fully_connected) against closed forms, with their variable names."""
import math

import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow.contrib import metric_learning as ml
from gradcheck import Case, check_case

pytestmark = pytest.mark.usefixtures("graph")  # a fresh default graph per test

L = tf.contrib.losses


def _run(t, feed=None):
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        return s.run(t, feed)


# -- NumPy references ------------------------------------------------------------------------------

def ref_dist(x, squared):
    d2 = np.array([[np.sum((a - b) ** 2) for b in x] for a in x])
    return d2 if squared else np.sqrt(d2)


def ref_triplet(lab, x, margin=1.0):
    d = ref_dist(x, True)
    n = len(lab)
    total, count = 0.0, 0
    for a in range(n):
        negs = [k for k in range(n) if lab[k] != lab[a]]
        for p in range(n):
            if p == a or lab[p] != lab[a]:
                continue
            count += 1
            farther = [d[a, k] for k in negs if d[a, k] > d[a, p]]
            if farther:
                neg = min(farther)
            else:  # the hardest negative; with none at all the row's minimum, 0 (TF's masked max)
                neg = max(d[a, k] for k in negs) if negs else 0.0
            total += max(margin + d[a, p] - neg, 0.0)
    return total / count if count else np.nan


def ref_lifted(lab, x, margin=1.0):
    d = ref_dist(x, False)
    n = len(lab)
    total, pairs = 0.0, 0
    for i in range(n):
        for j in range(i + 1, n):
            if lab[i] != lab[j]:
                continue
            pairs += 1
            s = sum(math.exp(margin - d[i, k]) for k in range(n) if lab[k] != lab[i])
            s += sum(math.exp(margin - d[j, k]) for k in range(n) if lab[k] != lab[j])
            total += max(math.log(s) + d[i, j], 0.0) ** 2
    return total / (2 * pairs)


def ref_npairs(adj, a, p, reg):
    sim = a @ p.T
    target = adj / adj.sum(1, keepdims=True)
    logp = sim - np.log(np.exp(sim).sum(1, keepdims=True))
    xent = -(target * logp).sum(1).mean()
    return xent + 0.25 * reg * ((a ** 2).sum(1).mean() + (p ** 2).sum(1).mean())


def ref_contrastive(y, a, p, margin):
    d = np.sqrt(((a - p) ** 2).sum(1))
    return np.mean(y * d ** 2 + (1 - y) * np.maximum(margin - d, 0) ** 2)


LABEL_SETS = {
    "random": np.array([0, 1, 2, 0, 1, 2, 0, 1]),
    "singleton": np.array([0, 0, 1, 1, 1, 0, 7, 1]),  # class 7 has one member
    "same": np.zeros(8, np.int64),
    "pairs": np.array([3, 3, 5, 5, 9, 9, 4, 4]),
}


@pytest.mark.parametrize("kind", sorted(LABEL_SETS))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_triplet_and_lifted_match_loops(kind, seed):
    rng = np.random.RandomState(seed)
    lab = LABEL_SETS[kind]
    x = rng.randn(8, 3).astype(np.float64)
    margin = 0.3 + seed
    got = _run([L.triplet_semihard_loss(lab, x, margin), L.metric_learning.lifted_struct_loss(lab, x, margin=margin)])
    np.testing.assert_allclose(got[0], ref_triplet(lab, x, margin), rtol=1e-9, atol=1e-12)
    if kind == "same":  # no negatives: TF's log(0) gives NaN (0 * -inf on the diagonal)
        assert np.isnan(got[1])
    else:
        np.testing.assert_allclose(got[1], ref_lifted(lab, x, margin), rtol=1e-9)


def test_triplet_without_positives_is_nan():
    assert np.isnan(_run(L.triplet_semihard_loss(np.arange(4), np.random.RandomState(0).randn(4, 2))))


def test_pairwise_distance_rules():
    x = np.array([[1.0, 2.0], [1.0, 2.0], [4.0, 6.0]])
    xt = tf.constant(x)
    d, d2 = ml.pairwise_distance(xt), ml.pairwise_distance(xt, squared=True)
    got = _run([d, d2, tf.gradients(tf.reduce_sum(d), xt)[0]])
    np.testing.assert_allclose(got[0], ref_dist(x, False), atol=1e-12)
    np.testing.assert_allclose(got[1], ref_dist(x, True), atol=1e-12)
    assert np.all(np.isfinite(got[2]))  # the zero distance between rows 0 and 1 has no inf slope
    big = (np.random.RandomState(0).randn(6, 5) * 100).astype(np.float32)  # rounding leaves a diagonal
    got = _run(ml.pairwise_distance(big))
    assert np.all(np.diag(got) == 0)
    np.testing.assert_allclose(got, ref_dist(big.astype(np.float64), False), rtol=1e-3, atol=0.05)
    v = np.array([[3.0, -1.0, 2.0], [0.5, 4.0, 1.0]])
    m = np.array([[0, 1, 1], [0, 0, 0]])
    mx, mn = _run([ml.masked_maximum(v, m), ml.masked_minimum(v, m)])
    np.testing.assert_allclose(mx, [[2.0], [0.5]])  # an empty row: its minimum
    np.testing.assert_allclose(mn, [[-1.0], [4.0]])  # an empty row: its maximum


@pytest.mark.parametrize("seed", [0, 1])
def test_npairs_and_contrastive_match_references(seed):
    rng = np.random.RandomState(seed)
    a, p = rng.randn(6, 4), rng.randn(6, 4)
    lab = np.array([0, 1, 2, 1, 3, 0])
    adj = (lab[:, None] == lab[None, :]).astype(np.float64)
    y = rng.randint(0, 2, 6)
    got = _run([L.npairs_loss(lab, a, p), L.npairs_loss(lab, a, p, reg_lambda=0.3, print_losses=seed == 1),
                L.contrastive_loss(y, a, p, margin=2.5), L.metric_learning.contrastive_loss(y, a, p)])
    np.testing.assert_allclose(got[0], ref_npairs(adj, a, p, 0.002), rtol=1e-9)
    np.testing.assert_allclose(got[1], ref_npairs(adj, a, p, 0.3), rtol=1e-9)
    np.testing.assert_allclose(got[2], ref_contrastive(y, a, p, 2.5), rtol=1e-9)
    np.testing.assert_allclose(got[3], ref_contrastive(y, a, p, 1.0), rtol=1e-9)


def test_npairs_multilabel_counts_label_intersections():
    rng = np.random.RandomState(3)
    sets = [{0, 2}, {2}, {1, 3, 4}, {0, 4}]
    a, p = rng.randn(4, 3), rng.randn(4, 3)
    sparse = [tf.SparseTensor([[0, c] for c in sorted(s)], np.ones(len(s), np.int64), [1, 5]) for s in sets]
    adj = np.array([[len(s & t) for t in sets] for s in sets], np.float64)
    got = _run(L.npairs_loss_multilabel(sparse, a, p, reg_lambda=0.1))
    np.testing.assert_allclose(got, ref_npairs(adj, a, p, 0.1), rtol=1e-9)
    with pytest.raises(TypeError, match="SparseTensors"):
        L.npairs_loss_multilabel([np.ones([1, 5])], a, p)


def test_bad_inputs_raise():
    x = np.zeros([4, 3])
    with pytest.raises(ValueError, match="1-D"):
        L.triplet_semihard_loss(np.zeros([4, 2], np.int32), x)
    with pytest.raises(TypeError, match="float"):
        L.lifted_struct_loss(np.arange(4), np.zeros([4, 3], np.int32))
    with pytest.raises(ValueError, match="rank 2"):
        L.npairs_loss(np.arange(4), np.zeros([4]), x)
    with pytest.raises(ValueError, match="margin_type"):
        L.cluster_loss(np.arange(4), x, 1.0, margin_type="purity")


def test_flat_names_match_tf_slim_losses():
    names = ["cluster_loss", "contrastive_loss", "lifted_struct_loss", "metric_learning", "npairs_loss",
             "npairs_loss_multilabel", "triplet_semihard_loss"]
    for n in names:
        assert n in L.__all__ and getattr(tf.contrib.slim.losses, n) is getattr(L, n)
    assert L.metric_learning.triplet_semihard_loss is L.triplet_semihard_loss


# -- gradients ----------------------------------------------------------------------------------------

LAB8 = np.array([0, 1, 0, 2, 1, 0, 2, 1])
LAB6 = np.array([0, 1, 2, 1, 3, 0])


@pytest.mark.parametrize("case", [
    Case("MatMul", lambda x: L.triplet_semihard_loss(LAB8, x, margin=0.8), [(8, 3)], id="triplet_semihard"),
    Case("MatMul", lambda x: L.triplet_semihard_loss(LABEL_SETS["singleton"], x, margin=3.0), [(8, 2)],
         id="triplet_semihard_singleton"),
    Case("Exp", lambda x: L.lifted_struct_loss(LAB8, x), [(8, 3)], low=-1.0, high=1.0, id="lifted_struct"),
    Case("MatMul", lambda a, p: L.npairs_loss(LAB6, a, p, reg_lambda=0.1), [(6, 4), (6, 4)], id="npairs"),
    Case("Sqrt", lambda a, p: L.contrastive_loss(np.array([1, 0, 0, 1, 0]), a, p, margin=2.0), [(5, 3), (5, 3)],
         id="contrastive"),
    Case("MatMul", lambda x: L.cluster_loss(LAB8, x, 1.5), [(8, 3)], id="cluster_loss"),
], ids=str)
def test_gradients_match_finite_differences(case):
    check_case(case)


# -- cluster_loss --------------------------------------------------------------------------------------

def test_clustering_scores_known_values():
    a = np.array([0, 0, 1, 1])
    for f in (ml.nmi_score, ml.ami_score, ml.ari_score, ml.vmeasure_score):
        assert f(a, np.array([7, 7, 3, 3])) == pytest.approx(1.0)  # a relabelling is a perfect match
        assert f(np.zeros(4), np.zeros(4)) == pytest.approx(1.0)
    assert ml.nmi_score(a, np.array([0, 1, 0, 1])) == pytest.approx(0.0, abs=1e-12)
    assert ml.ari_score(a, np.array([0, 1, 0, 1])) == pytest.approx(-0.5)
    # [0 0 0 1 1 1] vs [0 0 1 1 2 2]: MI = 2/3 ln 2 (the two cells of 2), H = ln 2 and ln 3
    b, c = np.array([0, 0, 0, 1, 1, 1]), np.array([0, 0, 1, 1, 2, 2])
    mi = 2 / 3 * math.log(2)
    assert ml.nmi_score(b, c) == pytest.approx(mi / ((math.log(2) + math.log(3)) / 2))
    hom, com = mi / math.log(2), mi / math.log(3)
    assert ml.vmeasure_score(b, c) == pytest.approx(2 * hom * com / (hom + com))
    # AMI: E[MI] of [0 0 1 1] vs [0 1 1 1] by enumerating the 4 equally likely placements
    # (per row: b_j = 1 takes n_ij = 1 half the time; b_j = 3 takes 1 or 2, each half the time)
    emi = 2 * (0.5 * 0.25 * math.log(2) + 0.5 * 0.25 * math.log(4 / 6) + 0.5 * 0.5 * math.log(8 / 6))
    mi2 = 0.25 * math.log(2) + 0.25 * math.log(2 / 3) + 0.5 * math.log(4 / 3)
    h1, h2 = math.log(2), -(0.25 * math.log(0.25) + 0.75 * math.log(0.75))
    assert ml.ami_score(a, np.array([0, 1, 1, 1])) == pytest.approx((mi2 - emi) / ((h1 + h2) / 2 - emi))
    got = _run(ml.compute_clustering_score(tf.constant(a), tf.constant([1, 1, 0, 0]), "nmi"))
    assert got == pytest.approx(1.0)


def test_cluster_assignment_keeps_each_centroid_its_own():
    d = np.array([[0.0, 0.0, 1.0], [0.0, 0.0, 1.0], [1.0, 1.0, 0.0]], np.float32)  # points 0, 1 coincide
    np.testing.assert_array_equal(ml._assign(d, np.array([0, 1])), [0, 1, 0])
    np.testing.assert_array_equal(ml._assign(d, np.array([2, 1])), [1, 1, 0])


def test_pam_refines_the_greedy_centroids():
    """The greedy pass fixes its first centroid at the 1-medoid; PAM then moves it to the
    member that serves its own cluster best (here: to the middle of the left class)."""
    x = np.array([[0.0], [1.0], [3.0], [8.0], [9.0], [20.0], [21.0]])
    lab = np.array([0, 0, 0, 0, 0, 1, 1])
    d = ref_dist(x, False).astype(np.float32)
    greedy = ml._search(d, lab, 0.0, ml.nmi_score, False)
    refined = ml._search(d, lab, 0.0, ml.nmi_score, True)
    assert greedy[0] == 3 and refined[0] == 2  # the median of all points, then of the left class
    f_gt = -sum(min(d[np.ix_(lab == c, lab == c)].sum(0)) for c in (0, 1))
    for pam in (False, True):
        chosen = ml._search(d, lab, 0.0, ml.nmi_score, pam)
        want = max(-d[chosen].min(0).sum() - f_gt, 0.0)
        got = _run(L.cluster_loss(lab, x, 0.0, enable_pam_finetuning=pam))
        assert got == pytest.approx(want, abs=1e-5)
    assert want == 0.0 and got == 0.0  # PAM found the classes' own medoids
    gt, assign = _run([ml.compute_gt_cluster_score(d, lab), ml.get_cluster_assignment(d, np.array([2, 5]))])
    assert gt == pytest.approx(f_gt) and assign.tolist() == [0, 0, 0, 0, 0, 1, 1]


def _blobs(rng, centers, per):
    x = np.concatenate([c + 0.05 * rng.randn(per, len(c)) for c in centers])
    return x, np.repeat(np.arange(len(centers)), per)


def test_cluster_loss_separated_classes_is_zero_without_margin():
    """Well separated classes: the search finds their medoids, so the loss is the margin term
    only, and 0 at margin_multiplier 0."""
    rng = np.random.RandomState(0)
    x, lab = _blobs(rng, [[0.0, 0.0], [5.0, 0.0], [0.0, 5.0]], 4)
    for pam in (True, False):
        assert _run(L.cluster_loss(lab, x, 0.0, enable_pam_finetuning=pam)) == pytest.approx(0.0, abs=1e-9)
    assert _run(L.cluster_loss(lab[:, None], x, 2.0)) == pytest.approx(0.0, abs=1e-9)  # [batch, 1] labels


def test_cluster_loss_value_from_its_centroids():
    """The loss is max(F(centroids) + m (1 - NMI) - F(class medoids), 0), F the negated sum of
    distances to the nearest centroid; the first greedy centroid is the 1-medoid."""
    rng = np.random.RandomState(4)
    x = rng.randn(9, 3)
    lab = np.array([0, 1, 2, 0, 1, 2, 0, 1, 2])
    d = ref_dist(x, False).astype(np.float32)
    chosen, score = ml._cluster_host(d, lab, 1.0, "nmi", True)
    assert len(chosen) == 3 and len(set(chosen.tolist())) == 3
    assert ml._search(d, lab, 0.0, ml.nmi_score, False)[0] == np.argmin(d.sum(0))
    pred = np.argmin(d[chosen], axis=0)
    pred[chosen] = np.arange(3)
    assert score == pytest.approx(ml.nmi_score(lab, pred), abs=1e-6)
    f_pred = -d[chosen].min(0).sum()
    f_gt = -sum(min(d[np.ix_(lab == c, lab == c)].sum(0)) for c in range(3))
    want = max(f_pred + (1.0 - score) - f_gt, 0.0)
    assert _run(L.cluster_loss(lab, x.astype(np.float32), 1.0)) == pytest.approx(want, rel=1e-5)
    # a margin that large makes the search prefer the centroids that split the classes
    assert _run(L.cluster_loss(lab, x.astype(np.float32), 50.0)) > want


# -- the contrib.layers names --------------------------------------------------------------------------

def test_gdn_closed_form_and_variables():
    rng = np.random.RandomState(0)
    x = rng.randn(2, 3, 4, 5).astype(np.float32)
    y = tf.contrib.layers.gdn(x)
    yi = tf.contrib.layers.gdn(x, inverse=True, gamma_init=0.5, data_format="channels_first", name="ig")
    assert [v.name for v in tf.global_variables()] == ["gdn/reparam_beta:0", "gdn/reparam_gamma:0",
                                                       "ig/reparam_beta:0", "ig/reparam_gamma:0"]
    assert tf.global_variables()[3].shape.as_list() == [3, 3]
    got, goti = _run([y, yi])
    np.testing.assert_allclose(got, x / np.sqrt(1 + 0.1 * x ** 2), rtol=1e-5)
    np.testing.assert_allclose(goti, x * np.sqrt(1 + 0.5 * x ** 2), rtol=1e-5)
    layer = tf.contrib.layers.GDN(name="shared")
    layer(x)
    layer(x)
    assert len(tf.global_variables()) == 6 and layer.beta is not None
    assert [v.name for v in layer.variables] == ["shared/reparam_beta:0", "shared/reparam_gamma:0"]
    tf.contrib.layers.gdn(x, name="shared", reuse=True, activity_regularizer=lambda t: tf.reduce_sum(t * 0.0))
    assert len(tf.global_variables()) == 6
    assert len(tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)) == 1
    with pytest.raises(ValueError):
        tf.contrib.layers.gdn(x, name="shared")  # sharing needs reuse


def test_gdn_general_parameters_and_lower_bound_gradient():
    rng = np.random.RandomState(1)
    x = rng.randn(3, 4, 2).astype(np.float64)
    y = tf.contrib.layers.gdn(tf.constant(x))
    rb, rg = tf.global_variables()
    beta_v, gamma_v = np.array([0.9, 0.0]), np.array([[0.5, 0.2], [0.0, 0.7]])  # zeros: under the bounds
    off = 2 ** -18
    g = tf.gradients(tf.reduce_sum(tf.abs(y)), [rb, rg]) + tf.gradients(-tf.reduce_sum(tf.abs(y)), [rb, rg])
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        rb.load(beta_v, s)
        rg.load(gamma_v, s)
        got, (gb, gg, gb_up, gg_up) = s.run(y), s.run(g)
    beta = np.maximum(beta_v, np.sqrt(1e-6 + off ** 2)) ** 2 - off ** 2
    gamma = np.maximum(gamma_v, off) ** 2 - off ** 2
    np.testing.assert_allclose(got, x / np.sqrt(beta + (x ** 2) @ gamma), rtol=1e-9)
    # sum|y| falls as beta or gamma grows: its negative gradient is kept at the bound (it moves
    # the parameter up, off it), the positive one of -sum|y| is stopped there
    assert gb[1] < 0 and gg[1, 0] < 0 and gb[0] < 0
    assert gb_up[1] == 0 and gg_up[1, 0] == 0 and gb_up[0] == -gb[0]


def test_gdn_gradient_finite_differences():
    check_case(Case("MatMul", lambda x: tf.contrib.layers.gdn(x, gamma_init=0.4), [(2, 3, 4)],
                    as_variables=False, id="gdn"))


def test_poincare_normalize_and_pool():
    x = np.array([[3.0, 4.0], [0.3, 0.4]])
    got = _run(tf.contrib.layers.poincare_normalize(x, epsilon=0.1))
    np.testing.assert_allclose(got, [[0.9 * 0.6, 0.9 * 0.8], [0.3, 0.4]], rtol=1e-9)
    v = np.arange(2 * 4 * 4 * 1, dtype=np.float64).reshape(2, 4, 4, 1)
    out = tf.contrib.layers.pool(v, 2, "MAX", stride=2, outputs_collections="ends")
    np.testing.assert_allclose(_run(out), v.reshape(2, 2, 2, 2, 2, 1).max(axis=(2, 4)))
    assert tf.contrib.layers.utils.get_tensor_aliases(out) == ["max_pool"]
    avg = tf.contrib.layers.pool(v[:, :, 0], [2], "AVG", scope="a1")
    np.testing.assert_allclose(_run(avg), (v[:, :-1, 0] + v[:, 1:, 0]) / 2)


def test_legacy_fully_connected_variables_and_collections():
    x = np.random.RandomState(0).randn(2, 3, 4).astype(np.float32)
    y = tf.contrib.layers.legacy_relu(x, 5)
    y2 = tf.contrib.layers.legacy_linear(x[0], 2, bias_init=None, name="lin", output_collections=["mine"])
    assert [v.name for v in tf.global_variables()] == ["fully_connected/weights:0", "fully_connected/bias:0",
                                                       "lin/weights:0"]
    assert [v.name for v in tf.get_collection("weights")] == ["fully_connected/weights:0", "lin/weights:0"]
    assert [v.name for v in tf.get_collection("biases")] == ["fully_connected/bias:0"]
    assert tf.get_collection("activations") == [y, y2] and tf.get_collection("mine") == [y2]
    assert tf.get_collection(tf.GraphKeys.MODEL_VARIABLES) == []
    w, b = tf.global_variables()[:2]
    got, wv, bv = _run([y, w, b])
    assert y.shape.as_list() == [2, 3, 5]
    np.testing.assert_allclose(got, np.maximum(x @ wv + bv, 0), rtol=1e-5, atol=1e-6)
    r6 = tf.contrib.layers.relu6(x[0], 3, scope="r6")
    assert [v.name for v in tf.global_variables()][-2:] == ["r6/weights:0", "r6/biases:0"]
    assert r6.op.type == "Relu6" and tf.contrib.slim.elu.keywords["activation_fn"] is not None
