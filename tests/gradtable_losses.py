"""Gradient-check cases for tf.losses, the sampled losses, batch normalization, norms and
clipping, and top_k.

TopKV2 and SingularValues are the new op types with gradients of their own; the other cases check
compositions (their gradients are built from already-checked ops, but the wiring -- sparse
lookups, masks, where-guards, moving statistics -- is what these cases exercise).
"""
import numpy as np

import collflow as cf
from collflow.graph.ops.linalg_ops import singular_values
from gradcheck import Case

_I64 = np.int64


def _distinct(shape, spacing=0.3):
    """Values at least `spacing` apart, so a finite-difference step never reorders them."""
    def make(rng):
        n = int(np.prod(shape))
        return [(rng.permutation(n) * spacing - n * spacing / 2 + rng.uniform(-0.01, 0.01, n)).reshape(shape)]
    return make


def _sampled(sampled, true_q, sampled_q):
    """Fixed sampled_values: the candidates and their expected counts, as constants."""
    return (cf.constant(np.asarray(sampled, _I64)), cf.constant(np.asarray(true_q, np.float32)),
            cf.constant(np.asarray(sampled_q, np.float32)))


def _nce(w, b, x):
    labels = cf.constant(np.array([[1], [4], [0]], _I64))
    sv = _sampled([2, 3, 5], [[0.3], [0.2], [0.5]], [0.25, 0.2, 0.1])
    return cf.nn.nce_loss(w, b, labels, x, num_sampled=3, num_classes=6, sampled_values=sv)


def _nce_two_true(w, b, x):
    labels = cf.constant(np.array([[1, 3], [4, 0]], _I64))
    sv = _sampled([2, 5], [[0.3, 0.2], [0.1, 0.4]], [0.25, 0.2])
    return cf.nn.nce_loss(w, b, labels, x, num_sampled=2, num_classes=6, num_true=2, sampled_values=sv)


def _sampled_softmax_hits(w, b, x):
    # class 4 is both a true class (row 1) and a sampled one: that logit is masked out
    labels = cf.constant(np.array([[1], [4], [0]], _I64))
    sv = _sampled([4, 2, 5], [[0.3], [0.2], [0.5]], [0.25, 0.2, 0.1])
    return cf.nn.sampled_softmax_loss(w, b, labels, x, num_sampled=3, num_classes=6, sampled_values=sv,
                                      remove_accidental_hits=True)


def _bn_layer(x):
    return cf.layers.batch_normalization(x, training=True, gamma_initializer=cf.initializers.constant(1.5),
                                         beta_initializer=cf.initializers.constant(0.2))


def _bn_layer_fused(x):
    return cf.layers.batch_normalization(x, axis=3, training=True)


def _onehot(rows, cols):
    return cf.constant(np.eye(cols)[np.arange(rows) % cols])


CASES = [
    # CTC over a batch of three (a repeated label, short sequences)
    Case("CTCLoss", lambda x: cf.nn.ctc_loss(cf.SparseTensor([[0, 0], [0, 1], [0, 2], [1, 0], [2, 0]], [1, 1, 2, 0, 2],
                                                             [3, 3]), x, [6, 4, 5]), [(6, 3, 4)]),
    Case("TopKV2", lambda a: cf.nn.top_k(a, 2)[0], [(3, 4)], make_inputs=_distinct((3, 4))),
    Case("TopKV2", lambda a: cf.nn.top_k(a, 3)[0] * 1.0, [(2, 2, 3)], make_inputs=_distinct((2, 2, 3)),
         id="TopKV2-3d-k-is-n"),
    # sampled losses: gradients to the tables arrive as IndexedSlices over the looked-up rows
    Case("GatherV2", _nce, [(6, 2), (6,), (3, 2)], as_variables=True, id="nce_loss"),
    Case("GatherV2", _nce_two_true, [(6, 2), (6,), (2, 2)], as_variables=True, id="nce_loss-num_true-2"),
    Case("IndexedSlicesToDense", _sampled_softmax_hits, [(6, 2), (6,), (3, 2)], as_variables=True,
         id="sampled_softmax_loss-accidental-hits"),
    # batch normalization: the raw formula, and the layer in training mode (batch statistics)
    Case("Rsqrt", lambda x, m, v, o, s: cf.nn.batch_normalization(x, m, v, o, s, 1e-3),
         [(4, 3), (3,), (3,), (3,), (3,)],
         make_inputs=lambda r: [r.uniform(-2, 2, (4, 3)), r.uniform(-1, 1, 3), r.uniform(0.5, 2, 3),
                                r.uniform(-1, 1, 3), r.uniform(0.5, 2, 3)], id="nn.batch_normalization"),
    Case("Mean", _bn_layer, [(5, 3)], id="layers.batch_normalization-training", rtol=1e-4, atol=1e-5),
    Case("Mean", _bn_layer_fused, [(2, 2, 2, 3)], id="layers.batch_normalization-fused-nhwc", rtol=1e-4, atol=1e-5),
    Case("Rsqrt", lambda x: cf.nn.l2_normalize(x, axis=1), [(3, 4)], id="nn.l2_normalize"),
    Case("Log1p", lambda x, z: cf.nn.weighted_cross_entropy_with_logits(labels=z, logits=x, pos_weight=2.5),
         [(3, 4), (3, 4)], make_inputs=lambda r: [r.uniform(-3, 3, (3, 4)), r.uniform(0, 1, (3, 4))],
         id="nn.weighted_cross_entropy_with_logits"),
    # norms and clipping (inputs chosen so the clipping is active)
    Case("Sqrt", lambda x: cf.norm(x, axis=1), [(3, 4)], id="norm-euclidean-axis"),
    Case("Max", lambda x: cf.norm(x, ord=1, axis=(0, 1)), [(3, 4)], make_inputs=_distinct((3, 4), 0.4),
         id="norm-matrix-1"),
    Case("Max", lambda x: cf.norm(x, ord=np.inf, axis=[-2, -1], keepdims=True), [(2, 3, 4)],
         make_inputs=_distinct((2, 3, 4), 0.4), id="norm-matrix-inf"),
    Case("SingularValues", lambda x: cf.norm(x, ord=2, axis=(0, 1)), [(3, 4)], id="norm-matrix-2"),
    Case("SingularValues", singular_values, [(2, 3, 2)], id="SingularValues-batched"),
    Case("Pow", lambda x: cf.norm(x, ord=3), [(2, 3)], make_inputs=lambda r: [r.uniform(0.3, 2, (2, 3))
                                                                              * r.choice([-1, 1], (2, 3))],
         id="norm-p3"),
    Case("Select", lambda x: cf.clip_by_norm(x, 1.0, axes=[1]), [(3, 4)], id="clip_by_norm"),
    Case("L2Loss", lambda a, b: cf.clip_by_global_norm([a, None, b], 1.5)[0][::2], [(2, 3), (4,)],
         id="clip_by_global_norm"),
    # losses whose elementwise part keeps float64 (the regression losses compute in float32)
    Case("SoftmaxCrossEntropyWithLogits",
         lambda x: cf.losses.softmax_cross_entropy(_onehot(4, 3), x,
                                                   weights=cf.constant([1.0, 0.0, 2.0, 0.5], cf.float64),
                                                   label_smoothing=0.1, loss_collection=None),
         [(4, 3)], id="losses.softmax_cross_entropy"),
    Case("SparseSoftmaxCrossEntropyWithLogits",
         lambda x: cf.losses.sparse_softmax_cross_entropy(cf.constant([[0], [2], [1]]), x,
                                                          reduction=cf.losses.Reduction.MEAN,
                                                          weights=cf.constant([[2.0], [1.0], [0.5]], cf.float64),
                                                          loss_collection=None),
         [(3, 3)], id="losses.sparse_softmax_cross_entropy"),
    Case("Select", lambda x: cf.losses.sigmoid_cross_entropy(cf.constant(np.eye(3)), x, label_smoothing=0.2,
                                                           reduction=cf.losses.Reduction.SUM_OVER_BATCH_SIZE,
                                                           loss_collection=None),
         [(3, 3)], id="losses.sigmoid_cross_entropy"),
    Case("Mul", lambda l, w: cf.losses.compute_weighted_loss(l, w, loss_collection=None), [(3, 2), (3, 1)],
         id="losses.compute_weighted_loss-weights-get-gradients"),
]
