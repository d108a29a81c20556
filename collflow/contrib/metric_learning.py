"""tf.contrib.losses.metric_learning (TF 1.15; tf_slim.losses has the same): the embedding
losses, LABELS FIRST, unlike contrib's other losses:

    loss = tf.contrib.losses.metric_learning.triplet_semihard_loss(labels, embeddings, margin=1.0)

triplet_semihard_loss, npairs_loss, npairs_loss_multilabel, contrastive_loss,
lifted_struct_loss and cluster_loss, with TF's defaults, masks and reductions, built from graph
ops so tf.gradients works.  pairwise_distance clamps tiny negative squared distances to 0,
gives exactly-zero distances a zero gradient and zeroes the diagonal, as TF's does.

cluster_loss's facility-location search (greedy, then PAM refinement; its candidates scored
by the facility energy plus margin_multiplier * (1 - NMI/AMI/ARI/V-measure/0-1 agreement with
the labels)) picks indices only, so it runs on the host as one py_func, in NumPy with our own
clustering scores (TF calls sklearn's); the loss is then built from the distances at those
indices in the graph, so its gradient is TF's.  The float math uses the embeddings' dtype
(TF's is float32 only).
"""
from __future__ import annotations

import math
from typing import Any, Callable, Dict, Sequence, Tuple

import numpy as np

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.ops import array_ops, logging_ops, math_ops, matrix_ops, nn_ops, script_ops, sparse_extra_ops
from ..graph.ops import partition_ops, segment_ops, sparse_ops
from ..graph.ops.slicing_ops import gather
from ..graph.sparse_tensor import SparseTensor
from ..summary import summary_ops as _summary

__all__ = ["pairwise_distance", "masked_maximum", "masked_minimum", "contrastive_loss", "triplet_semihard_loss",
           "npairs_loss", "npairs_loss_multilabel", "lifted_struct_loss", "get_cluster_assignment",
           "compute_facility_energy", "compute_gt_cluster_score", "compute_clustering_score", "cluster_loss"]

LOSSES = ("triplet_semihard_loss", "npairs_loss", "npairs_loss_multilabel", "contrastive_loss",
          "lifted_struct_loss", "cluster_loss")


def _float(x: Any, what: str, rank: int = 2) -> _g.Tensor:
    t = _g.convert_to_tensor(x)
    if not t.dtype.is_floating:
        raise TypeError(f"{what} must be a float tensor, got {t.dtype.name}")
    if t.shape.rank is not None and t.shape.rank != rank:
        raise ValueError(f"{what} must be of rank {rank}, got shape {t.shape}")
    return t


def _labels_column(labels: Any) -> _g.Tensor:
    """[batch] labels as a [batch, 1] column (TF asserts rank 1)."""
    t = _g.convert_to_tensor(labels)
    if t.shape.rank is not None and t.shape.rank != 1:
        raise ValueError(f"labels must be a 1-D tensor [batch_size], got shape {t.shape}")
    return array_ops.reshape(t, [-1, 1])


def _off_diagonal(n: Any, dtype: Any) -> _g.Tensor:
    return 1.0 - matrix_ops.eye(n, dtype=dtype)


def pairwise_distance(feature: Any, squared: bool = False) -> _g.Tensor:
    """[n, n] Euclidean distances between the rows of `feature` [n, d] (squared if asked):
    ||a||^2 + ||b||^2 - 2 a.b clamped at 0, a zero gradient where it is 0, zero diagonal."""
    x = _float(feature, "feature")
    sq = math_ops.reduce_sum(math_ops.square(x), axis=[1], keepdims=True)
    d2 = sq + array_ops.transpose(sq) - 2.0 * math_ops.matmul(x, x, transpose_b=True)
    d2 = math_ops.maximum(d2, 0.0)
    is_zero = math_ops.less_equal(d2, 0.0)
    if squared:
        d = d2
    else:  # sqrt's infinite slope at 0 is kept out of the gradient by the 1e-16 and the mask
        d = math_ops.sqrt(d2 + math_ops.cast(is_zero, x.dtype) * 1e-16)
    d = d * math_ops.cast(math_ops.logical_not(is_zero), x.dtype)
    return d * _off_diagonal(array_ops.shape(x)[0], x.dtype)


def masked_maximum(data: Any, mask: Any, dim: int = 1) -> _g.Tensor:
    """The maximum along `dim` over the entries where mask is 1 (kept as a size-1 axis): the
    data shifted to be >= 0 first, so masked-out zeros never win (the row minimum if none is)."""
    data = _g.convert_to_tensor(data)
    low = math_ops.reduce_min(data, dim, keepdims=True)
    return math_ops.reduce_max((data - low) * math_ops.cast(mask, data.dtype), dim, keepdims=True) + low


def masked_minimum(data: Any, mask: Any, dim: int = 1) -> _g.Tensor:
    """The minimum along `dim` over the entries where mask is 1 (the row maximum if none is)."""
    data = _g.convert_to_tensor(data)
    high = math_ops.reduce_max(data, dim, keepdims=True)
    return math_ops.reduce_min((data - high) * math_ops.cast(mask, data.dtype), dim, keepdims=True) + high


def contrastive_loss(labels: Any, embeddings_anchor: Any, embeddings_positive: Any,
                     margin: float = 1.0) -> _g.Tensor:
    """mean(y d^2 + (1 - y) max(margin - d, 0)^2), d the distance of each anchor/positive
    pair and y its {0, 1} label (1: the same class)."""
    a = _float(embeddings_anchor, "embeddings_anchor")
    p = _float(embeddings_positive, "embeddings_positive")
    d = math_ops.sqrt(math_ops.reduce_sum(math_ops.squared_difference(a, p), 1))
    y = math_ops.cast(labels, d.dtype)
    return math_ops.reduce_mean(y * math_ops.square(d) + (1.0 - y) * math_ops.square(math_ops.maximum(margin - d, 0.0)),
                                name="contrastive_loss")


def triplet_semihard_loss(labels: Any, embeddings: Any, margin: float = 1.0) -> _g.Tensor:
    """Mean over the (anchor, positive) pairs of max(margin + D_ap - D_an, 0), D squared
    distances, n the semi-hard negative: the closest negative farther than the positive,
    or the farthest negative when there is none (FaceNet's mining)."""
    col = _labels_column(labels)
    x = _float(embeddings, "embeddings")
    d = pairwise_distance(x, squared=True)
    same = math_ops.equal(col, array_ops.transpose(col))
    neg = math_ops.logical_not(same)
    # cube[a, p, n]: n is a negative of anchor a farther from it than p
    farther = math_ops.greater(array_ops.expand_dims(d, 1), array_ops.expand_dims(d, 2))
    cube = math_ops.logical_and(array_ops.expand_dims(neg, 1), farther)
    has_outside = math_ops.greater(math_ops.reduce_sum(math_ops.cast(cube, x.dtype), 2), 0.0)
    outside = array_ops.squeeze(masked_minimum(array_ops.expand_dims(d, 1), cube, dim=2), [2])
    inside = masked_maximum(d, neg) + array_ops.zeros_like(d)  # [n, 1] over every positive
    semi_hard = array_ops.where(has_outside, outside, inside)
    loss_mat = margin + d - semi_hard
    positives = math_ops.cast(same, x.dtype) - matrix_ops.eye(array_ops.shape(x)[0], dtype=x.dtype)
    return math_ops.truediv(math_ops.reduce_sum(math_ops.maximum(loss_mat * positives, 0.0)),
                            math_ops.reduce_sum(positives), name="triplet_semihard_loss")


def _npairs(adjacency: _g.Tensor, a: _g.Tensor, p: _g.Tensor, reg_lambda: float, print_losses: bool) -> _g.Tensor:
    """0.25 reg_lambda (mean |a|^2 + mean |p|^2) + mean softmax cross entropy of the a.p
    similarities against the adjacency rows normalized to sum to 1."""
    reg_a = math_ops.reduce_mean(math_ops.reduce_sum(math_ops.square(a), 1))
    reg_p = math_ops.reduce_mean(math_ops.reduce_sum(math_ops.square(p), 1))
    l2loss = math_ops.multiply(0.25 * reg_lambda, reg_a + reg_p, name="l2loss")
    sim = math_ops.matmul(a, p, transpose_b=True)
    target = adjacency / math_ops.reduce_sum(adjacency, 1, keepdims=True)
    xent = math_ops.reduce_mean(nn_ops.softmax_cross_entropy_with_logits(labels=target, logits=sim), name="xentropy")
    if print_losses:
        xent = logging_ops.Print(xent, ["cross entropy:", xent, "l2loss:", l2loss])
    return l2loss + xent


def npairs_loss(labels: Any, embeddings_anchor: Any, embeddings_positive: Any, reg_lambda: float = 0.002,
                print_losses: bool = False) -> _g.Tensor:
    """N-pair loss: labels [n] of the n (anchor, positive) pairs; each anchor's softmax over
    its similarities to all positives, the target spread over the positives of its class,
    plus the embeddings' L2 term (reg_lambda)."""
    a = _float(embeddings_anchor, "embeddings_anchor")
    p = _float(embeddings_positive, "embeddings_positive")
    col = _labels_column(labels)
    adjacency = math_ops.cast(math_ops.equal(col, array_ops.transpose(col)), a.dtype)
    return _npairs(adjacency, a, p, reg_lambda, print_losses)


def npairs_loss_multilabel(sparse_labels: Sequence[Any], embeddings_anchor: Any, embeddings_positive: Any,
                           reg_lambda: float = 0.002, print_losses: bool = False) -> _g.Tensor:
    """npairs_loss where pair i has a set of labels (sparse_labels[i], a 0/1 SparseTensor):
    the targets are the label-intersection counts |L_i & L_j|, rows normalized."""
    if not all(isinstance(s, SparseTensor) for s in sparse_labels):
        raise TypeError(f"sparse_labels must be a list of SparseTensors, but got {sparse_labels}")
    a = _float(embeddings_anchor, "embeddings_anchor")
    p = _float(embeddings_positive, "embeddings_positive")
    with a.graph.as_default(), a.graph.name_scope("NpairsLossMultiLabel"):
        rows = []
        for si in sparse_labels:
            row = [sparse_ops.sparse_reduce_sum(sparse_extra_ops.sparse_minimum(si, sj)) for sj in sparse_labels]
            rows.append(array_ops.stack([math_ops.cast(v, a.dtype) for v in row]))
        adjacency = array_ops.stack(rows)
        return _npairs(adjacency, a, p, reg_lambda, print_losses)


def lifted_struct_loss(labels: Any, embeddings: Any, margin: float = 1.0) -> _g.Tensor:
    """Lifted structured loss: for each positive pair (i, j), J = log(sum over the negatives
    k of i or j of exp(margin - D_ik)) + D_ij (a logsumexp shifted by the larger of the two
    rows' maxima), then 0.25 * sum(max(J, 0)^2) / (number of positive pairs / 2)."""
    col = _labels_column(labels)
    x = _float(embeddings, "embeddings")
    d = pairwise_distance(x)
    same = math_ops.equal(col, array_ops.transpose(col))
    neg = math_ops.cast(math_ops.logical_not(same), x.dtype)
    diff = margin - d
    row_max = masked_maximum(diff, neg)                                    # [n, 1]
    m = math_ops.maximum(row_max, array_ops.transpose(row_max))            # M[i, j] = max(m_i, m_j)
    # s[i, j] = sum_k neg[i, k] exp(diff[i, k] - M[i, j])
    s = math_ops.reduce_sum(math_ops.exp(array_ops.expand_dims(diff, 1) - array_ops.expand_dims(m, 2))
                            * array_ops.expand_dims(neg, 1), 2)
    loss_mat = m + math_ops.log(s + array_ops.transpose(s)) + d
    positives = math_ops.cast(same, x.dtype) - matrix_ops.eye(array_ops.shape(x)[0], dtype=x.dtype)
    num_pairs = math_ops.reduce_sum(positives) / 2.0
    return math_ops.truediv(0.25 * math_ops.reduce_sum(math_ops.square(math_ops.maximum(loss_mat * positives, 0.0))),
                            num_pairs, name="liftedstruct_loss")


# -- clustering scores (NumPy): how well a predicted clustering matches the labels, in [0, 1] ------


def _contingency(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    _, ia = np.unique(a, return_inverse=True)
    _, ib = np.unique(b, return_inverse=True)
    c = np.zeros((ia.max() + 1, ib.max() + 1), np.float64)
    np.add.at(c, (ia.ravel(), ib.ravel()), 1.0)
    return c


def _entropy(counts: np.ndarray) -> float:
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log(p)).sum())


def _mutual_info(c: np.ndarray) -> float:
    n = c.sum()
    r, k = c.sum(1, keepdims=True), c.sum(0, keepdims=True)
    nz = c > 0
    return float((c[nz] / n * np.log(c[nz] * n / (r * k)[nz])).sum())


def _trivial(a: np.ndarray, b: np.ndarray) -> bool:
    """Both clusterings one cluster (or both empty): a perfect match by convention."""
    na, nb = len(np.unique(a)), len(np.unique(b))
    return na == nb and na <= 1


def nmi_score(a: np.ndarray, b: np.ndarray) -> float:
    """Normalized mutual information, MI / mean(H(a), H(b)) (sklearn's default)."""
    if _trivial(a, b):
        return 1.0
    c = _contingency(a, b)
    mi = _mutual_info(c)
    if mi == 0.0:
        return 0.0
    return mi / max(0.5 * (_entropy(c.sum(1)) + _entropy(c.sum(0))), np.finfo(np.float64).eps)


def _expected_mutual_info(c: np.ndarray) -> float:
    """E[MI] of two random clusterings with c's row and column sums (hypergeometric model)."""
    n = int(c.sum())
    lg = math.lgamma
    total = 0.0
    for ai in c.sum(1).astype(int):
        for bj in c.sum(0).astype(int):
            base = lg(ai + 1) + lg(bj + 1) + lg(n - ai + 1) + lg(n - bj + 1) - lg(n + 1)
            for nij in range(max(1, ai + bj - n), min(ai, bj) + 1):
                logp = base - lg(nij + 1) - lg(ai - nij + 1) - lg(bj - nij + 1) - lg(n - ai - bj + nij + 1)
                total += nij / n * math.log(n * nij / (ai * bj)) * math.exp(logp)
    return total


def ami_score(a: np.ndarray, b: np.ndarray) -> float:
    """Adjusted mutual information, (MI - E[MI]) / (mean(H(a), H(b)) - E[MI])."""
    if _trivial(a, b):
        return 1.0
    c = _contingency(a, b)
    emi = _expected_mutual_info(c)
    den = 0.5 * (_entropy(c.sum(1)) + _entropy(c.sum(0))) - emi
    eps = np.finfo(np.float64).eps
    den = min(den, -eps) if den < 0 else max(den, eps)
    return (_mutual_info(c) - emi) / den


def ari_score(a: np.ndarray, b: np.ndarray) -> float:
    """Adjusted Rand index from the pair confusion counts (1 when no pair disagrees)."""
    c = _contingency(a, b)
    n = c.sum()
    sum_sq = (c ** 2).sum()
    tp = sum_sq - n
    fp = (c.sum(0) ** 2).sum() - sum_sq
    fn = (c.sum(1) ** 2).sum() - sum_sq
    tn = n * n - fp - fn - sum_sq
    if fn == 0 and fp == 0:
        return 1.0
    return float(2.0 * (tp * tn - fn * fp) / ((tp + fn) * (fn + tn) + (tp + fp) * (fp + tn)))


def vmeasure_score(a: np.ndarray, b: np.ndarray) -> float:
    """V-measure: the harmonic mean of homogeneity and completeness."""
    if len(a) == 0:
        return 1.0
    c = _contingency(a, b)
    mi = _mutual_info(c)
    ha, hb = _entropy(c.sum(1)), _entropy(c.sum(0))
    hom = mi / ha if ha else 1.0
    com = mi / hb if hb else 1.0
    return 0.0 if hom + com == 0 else 2.0 * hom * com / (hom + com)


def _zero_one(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.array_equal(a, b))


# the clipped ones can go below 0 (TF clips them too)
_SCORES: Dict[str, Tuple[Callable[[np.ndarray, np.ndarray], float], bool]] = {
    "nmi": (nmi_score, False), "ami": (ami_score, True), "ari": (ari_score, True),
    "vmeasure": (vmeasure_score, True), "const": (_zero_one, False)}


def _score_fn(margin_type: str) -> Callable[[np.ndarray, np.ndarray], float]:
    if margin_type not in _SCORES:
        raise ValueError(f"Unrecognized margin_type: {margin_type} (one of {sorted(_SCORES)})")
    fn, clip = _SCORES[margin_type]
    return (lambda a, b: max(0.0, fn(a, b))) if clip else fn


def compute_clustering_score(labels: Any, predictions: Any, margin_type: str) -> _g.Tensor:
    """The agreement in [0, 1] of two clusterings ('nmi', 'ami', 'ari', 'vmeasure' or
    'const'), a float32 scalar computed on the host."""
    fn = _score_fn(margin_type)
    out = script_ops.py_func(lambda a, b: np.float32(fn(np.asarray(a), np.asarray(b))), [labels, predictions],
                             _dt.float32, stateful=False, name=margin_type)
    out.set_shape([])
    return out


# -- cluster_loss's search (NumPy, on the host) ---------------------------------------------------


def _assign(d: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Each point's nearest centroid (its position in `centroids`); a centroid is its own."""
    pred = np.argmin(d[centroids], axis=0).astype(np.int64)
    pred[centroids] = np.arange(len(centroids))
    return pred


def _energy(d: np.ndarray, centroids: np.ndarray) -> np.float32:
    return -np.min(d[centroids], axis=0).sum(dtype=np.float32)


def _margin(score: float) -> np.float32:
    return np.float32(1.0) - np.float32(score)  # in float32, as TF's graph does


def _search(d: np.ndarray, labels: np.ndarray, mult: float, score: Callable, pam: bool) -> np.ndarray:
    """The loss-augmented centroids: greedily add the point maximizing energy + mult * (1 -
    score), one per class; then (pam) 5 rounds of swapping each cluster's medoid for the
    member that maximizes the same, a cluster at a time."""
    n = d.shape[0]
    k = len(np.unique(labels))
    mult = np.float32(mult)
    chosen = np.zeros([0], np.int64)
    for _ in range(k):
        cand = np.setdiff1d(np.arange(n), chosen)
        vals = [_energy(d, np.append(chosen, c)) + mult * _margin(score(labels, _assign(d, np.append(chosen, c))))
                for c in cand]
        chosen = np.append(chosen, cand[int(np.argmax(vals))])
    if pam:
        for _ in range(5):
            pred = _assign(d, chosen)
            for c in range(k):
                members = np.flatnonzero(pred == c)
                fac = -d[np.ix_(members, members)].sum(axis=0, dtype=np.float32)
                margins = []
                for m in members:
                    trial = chosen.copy()
                    trial[c] = m
                    margins.append(_margin(score(labels, _assign(d, trial))))
                chosen[c] = members[int(np.argmax(fac + mult * np.asarray(margins, np.float32)))]
    return chosen


def _cluster_host(d: np.ndarray, labels: np.ndarray, mult: Any, margin_type: str, pam: bool) -> list:
    d = np.asarray(d, np.float32)
    labels = np.asarray(labels).reshape(-1)
    if d.shape[0] != labels.shape[0]:
        raise ValueError(f"cluster_loss: {labels.shape[0]} labels for {d.shape[0]} embeddings")
    score = _score_fn(margin_type)
    chosen = _search(d, labels, float(mult), score, pam)
    return [chosen.astype(np.int32), np.float32(score(labels, _assign(d, chosen)))]


def get_cluster_assignment(pairwise_distances: Any, centroid_ids: Any) -> _g.Tensor:
    """Each point's nearest centroid, as its position in centroid_ids (int64; a centroid is
    always its own, even where another is as near)."""
    out = script_ops.py_func(lambda d, c: _assign(np.asarray(d), np.asarray(c, np.int64)),
                             [pairwise_distances, centroid_ids], _dt.int64, stateful=False, name="cluster_assignment")
    out.set_shape([None])
    return out


def compute_gt_cluster_score(pairwise_distances: Any, labels: Any) -> _g.Tensor:
    """The facility energy of the labels' own clustering: -(sum over the classes of the least
    total distance from one member to the class's others)."""
    d = _g.convert_to_tensor(pairwise_distances)
    lab = array_ops.reshape(_g.convert_to_tensor(labels), [-1])
    classes, idx = partition_ops.unique(lab)
    col = array_ops.reshape(idx, [-1, 1])
    within = math_ops.reduce_sum(d * math_ops.cast(math_ops.equal(col, array_ops.transpose(col)), d.dtype), axis=0)
    best = segment_ops.unsorted_segment_min(within, idx, array_ops.size(classes))
    return -1.0 * math_ops.reduce_sum(best)


def compute_facility_energy(pairwise_distances: Any, centroid_ids: Any) -> _g.Tensor:
    """-(sum over the points of the distance to the nearest centroid)."""
    return -1.0 * math_ops.reduce_sum(math_ops.reduce_min(gather(pairwise_distances, centroid_ids), axis=0))


def cluster_loss(labels: Any, embeddings: Any, margin_multiplier: Any, enable_pam_finetuning: bool = True,
                 margin_type: str = "nmi", print_losses: bool = False) -> _g.Tensor:
    """Structured clustering loss (Song et al. 2017): max(F(loss-augmented centroids) +
    margin_multiplier * (1 - score(labels, their clustering)) - F(the classes' medoids), 0),
    F the facility energy of the distances, score per margin_type ('nmi', 'ami', 'ari',
    'vmeasure', 'const').  labels [batch] or [batch, 1]."""
    _score_fn(margin_type)  # an unknown margin_type fails here, as TF's does when building
    x = _float(embeddings, "embeddings")
    with x.graph.as_default():
        d = pairwise_distance(x)
        lab = array_ops.reshape(_g.convert_to_tensor(labels), [-1])
        chosen, pred_score = script_ops.py_func(
            lambda dv, lv, mv: _cluster_host(dv, lv, mv, margin_type, enable_pam_finetuning),
            [d, lab, margin_multiplier], [_dt.int32, _dt.float32], stateful=False, name="cluster_search")
        chosen.set_shape([None])
        pred_score = math_ops.cast(array_ops.reshape(pred_score, []), x.dtype)
        score_pred = compute_facility_energy(d, chosen)
        score_gt = compute_gt_cluster_score(d, lab)
        mult = math_ops.cast(margin_multiplier, x.dtype)
        loss = math_ops.maximum(score_pred + mult * (1.0 - pred_score) - score_gt, 0.0, name="clustering_loss")
        loss.set_shape([])
        if print_losses:
            loss = logging_ops.Print(loss, ["clustering_loss: ", loss, array_ops.shape(loss)])
        _summary.scalar("losses/score_pred", score_pred)
        _summary.scalar("losses/" + margin_type, pred_score)
        _summary.scalar("losses/score_gt", score_gt)
        return loss
