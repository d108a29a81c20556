"""Differential tests against real TensorFlow 1.x for the ops of TF1 fidelity part 3 (tf.div,
tf.round, tf.einsum, tf.gather_nd, the segment reductions, tf.nn.elu, tf.image.resize_*, ...):
the same graph built in both, fed the same data, values and gradients compared (float32, 1e-5),
plus what tf.Print / tf.print write and what tf.Assert / tf.check_numerics raise.

Skipped cleanly without TensorFlow (`pip install -e ".[conformance]"`).  tf.multinomial is
random and has no case here (its sampling is tested against its distribution in
tests/test_more_ops2.py).
"""
import os
import re
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tfdiff import check_case  # noqa: E402  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

import collflow.compat.v1 as cft  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()


def _f(tf, t):
    return tf.cast(t, tf.float32)


def _ints(tf, a, scale=3.0):
    """float inputs in [-2, 2) as int32 in [-6, 6], zeros replaced by 1 (divisors)."""
    i = tf.cast(a * scale, tf.int32)
    return tf.where(tf.equal(i, 0), tf.ones_like(i), i)



def _spd(tf, a):
    """a a^T + 3 I: symmetric positive definite."""
    return tf.matmul(a, a, transpose_b=True) + 3.0 * tf.eye(a.shape.as_list()[-1], batch_shape=a.shape.as_list()[:-2])


def _wc(tf, a):
    """a + 4 I: well conditioned for inputs in [-2, 2)."""
    return a + 4.0 * tf.eye(a.shape.as_list()[-1], batch_shape=a.shape.as_list()[:-2])


_HALVES = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49, 3.51]
_SPECIAL = [np.nan, np.inf, -np.inf, 1.0]

# (id, fn(tf, *xs) -> tensor or list, input specs): see tfdiff.py
CASES = [
    # division and rounding
    ("div_float", lambda tf, a, b: tf.div(a, b), [(3, 4), ("pos", 3, 4)]),
    ("div_int_floors", lambda tf, a, b: _f(tf, tf.div(_ints(tf, a), _ints(tf, b, 1.7))), [(3, 4), (3, 4)]),
    ("realdiv", lambda tf, a, b: tf.realdiv(a, b), [(3, 4), ("pos", 4)]),
    ("truncatediv", lambda tf, a, b: _f(tf, tf.truncatediv(_ints(tf, a), _ints(tf, b, 1.7))), [(3, 4), (3, 4)]),
    ("truncatemod", lambda tf, a, b: _f(tf, tf.truncatemod(_ints(tf, a), _ints(tf, b, 1.7))), [(3, 4), (3, 4)]),
    ("floormod", lambda tf, a, b: tf.floormod(a, b), [(3, 4), ("pos", 3, 4)]),
    ("floor_ceil", lambda tf, a: [tf.floor(a * 3.0), tf.ceil(a * 3.0)], [(3, 4)]),
    ("round_half_even", lambda tf, a: tf.round(tf.constant(_HALVES)) + a, [(8,)]),
    ("round_rint", lambda tf, a: [tf.round(a * 3.0), tf.rint(a * 3.0)], [(3, 4)]),
    ("rint_halves", lambda tf, a: tf.rint(tf.constant(_HALVES)) * a, [(8,)]),
    ("is_nan_finite_inf", lambda tf, a: [_f(tf, tf.is_nan(a + _SPECIAL)), _f(tf, tf.is_finite(a + _SPECIAL)),
                                         _f(tf, tf.is_inf(a + _SPECIAL))], [(4,)]),
    ("erf", lambda tf, a: tf.erf(a), [(3, 5)]),
    ("atan2", lambda tf, a, b: tf.atan2(a, b), [(3, 4), (3, 4)]),
    ("count_nonzero", lambda tf, a: [_f(tf, tf.count_nonzero(tf.nn.relu(a))),
                                     _f(tf, tf.count_nonzero(tf.nn.relu(a), axis=1, keepdims=True))], [(3, 4)]),
    ("linspace", lambda tf, a: tf.linspace(tf.reduce_min(a), tf.reduce_max(a), 7) + tf.lin_space(0.0, 1.0, 4)[1],
     [(5,)]),
    # matrices and contractions
    ("eye", lambda tf, a: tf.eye(3, 4, batch_shape=[2]) * tf.reduce_sum(a), [(2,)]),
    ("meshgrid_xy", lambda tf, a, b: tf.meshgrid(a, b), [(3,), (2,)]),
    ("meshgrid_ij", lambda tf, a, b, c: tf.meshgrid(a, b, c, indexing="ij"), [(3,), (2,), (4,)]),
    ("einsum_matmul", lambda tf, a, b: tf.einsum("ij,jk->ik", a, b), [(3, 4), (4, 5)]),
    ("einsum_batch_transpose", lambda tf, a, b: tf.einsum("bij,bkj->bki", a, b), [(2, 3, 4), (2, 5, 4)]),
    ("einsum_implicit", lambda tf, a, b: tf.einsum("ij,jk", a, b), [(3, 4), (4, 2)]),
    ("einsum_trace_diag", lambda tf, a: [tf.einsum("ii->", a), tf.einsum("ii->i", a)], [(4, 4)]),
    ("einsum_outer_sum", lambda tf, a, b: tf.einsum("i,j->ij", a, b) + tf.einsum("ij->j", tf.einsum("i,j->ij", a, b)),
     [(3,), (4,)]),
    ("einsum_ellipsis", lambda tf, a, b: tf.einsum("...ij,...jk->...ik", a, b), [(2, 3, 4), (2, 4, 2)]),
    ("einsum_three", lambda tf, a, b, c: tf.einsum("ij,jk,kl->il", a, b, c), [(2, 3), (3, 4), (4, 2)]),
    ("tensordot_int", lambda tf, a, b: tf.tensordot(a, b, 1), [(2, 3), (3, 4)]),
    ("tensordot_pairs", lambda tf, a, b: tf.tensordot(a, b, [[0, 2], [1, 0]]), [(3, 2, 4), (4, 3, 5)]),
    ("tensordot_outer", lambda tf, a, b: tf.tensordot(a, b, 0), [(2, 3), (2,)]),
    ("diag", lambda tf, a: tf.diag(a), [(2, 3)]),
    ("diag_part", lambda tf, a: tf.diag_part(a), [(2, 3, 2, 3)]),
    ("matrix_diag", lambda tf, a: tf.matrix_diag(a), [(2, 3)]),
    ("matrix_diag_part", lambda tf, a: [tf.matrix_diag_part(a), tf.matrix_diag_part(tf.transpose(a, [0, 2, 1]))],
     [(2, 3, 4)]),
    ("matrix_set_diag", lambda tf, a, d: tf.matrix_set_diag(a, d), [(2, 4, 3), (2, 3)]),
    # gathering and scattering
    ("gather_nd", lambda tf, p: tf.gather_nd(p, [[0, 1], [2, 0], [0, 1]]), [(3, 2, 4)]),
    ("gather_nd_full", lambda tf, p: tf.gather_nd(p, [[[0, 1, 1]], [[2, 0, 0]]]), [(3, 2, 2)]),
    ("gather_nd_rows", lambda tf, p: tf.gather_nd(p, [[2], [0], [2]]) * 2.0, [(3, 4)]),
    ("scatter_nd", lambda tf, u: tf.scatter_nd([[1, 0], [0, 2], [1, 0]], u, [2, 3, 4]), [(3, 4)]),
    # boolean_mask's selected dimension is not static: fetched through a reshape to its known size
    ("boolean_mask", lambda tf, t: tf.reshape(
        tf.boolean_mask(t, tf.constant([[True, False, True], [False, True, True]])), [4, 4]), [(2, 3, 4)]),
    ("boolean_mask_axis", lambda tf, t: tf.reshape(
        tf.boolean_mask(t, tf.constant([False, True, True, False]), axis=2), [2, 3, 2]), [(2, 3, 4)]),
    ("sparse_to_dense", lambda tf, v, d: tf.sparse_to_dense([[0, 1], [1, 0], [2, 3]], [3, 4], v, tf.reduce_sum(d)),
     [(3,), (2,)]),
    # TensorFlow's own gradient of 1-D indices fails (a GatherNd shape error): values only
    ("sparse_to_dense_1d", lambda tf, a: tf.sparse_to_dense([1, 3], [5], tf.constant([2.0, 3.0]), -1.0) * a,
     [(5,)]),
    # segment reductions (empty segments only where the result stays finite); the sorted ones'
    # number of segments is not static in TensorFlow: fetched through a reshape
    ("segment_sum_mean", lambda tf, d: [tf.reshape(tf.segment_sum(d, [0, 0, 2, 3, 3]), [4, 3]),
                                        tf.reshape(tf.segment_mean(d, [0, 0, 2, 3, 3]), [4, 3])], [(5, 3)]),
    ("segment_max_min", lambda tf, d: [tf.reshape(tf.segment_max(d, [0, 1, 1, 2, 2]), [3, 3]),
                                       tf.reshape(tf.segment_min(d, [0, 0, 1, 1, 2]), [3, 3])], [(5, 3)]),
    ("segment_max_empty_is_zero", lambda tf, d: tf.reshape(tf.segment_max(d, [0, 0, 3, 3]), [4, 2]), [(4, 2)]),
    ("unsorted_segment_sum", lambda tf, d: tf.unsorted_segment_sum(d, [3, -1, 0, 3, 1], 5), [(5, 2)]),
    ("unsorted_segment_sum_2d_ids", lambda tf, d: tf.unsorted_segment_sum(d, [[2, 0, 1], [1, 1, -1]], 3),
     [(2, 3, 2)]),
    ("unsorted_segment_mean", lambda tf, d: tf.unsorted_segment_mean(d, [3, 0, 0, 3, 1], 5), [(5, 2)]),
    ("unsorted_segment_max", lambda tf, d: tf.unsorted_segment_max(d, [2, 0, 0, 2, 1], 3), [(5, 2)]),
    ("unsorted_segment_min", lambda tf, d: tf.unsorted_segment_min(d, [[2, 0], [0, 1]], 3), [(2, 2, 3)]),
    # pass-through checks
    ("Print_identity", lambda tf, a: tf.Print(a * 2.0, [a], message="x", first_n=0), [(3,)]),
    ("check_numerics", lambda tf, a: tf.check_numerics(a * a, "a"), [(3, 2)]),
    ("verify_tensor_all_finite", lambda tf, a: tf.verify_tensor_all_finite(tf.sin(a), "a"), [(3,)]),
    # activations
    ("relu6", lambda tf, a: tf.nn.relu6(a * 4.0), [(4, 5)]),
    ("elu", lambda tf, a: tf.nn.elu(a), [(4, 5)]),
    ("selu", lambda tf, a: tf.nn.selu(a), [(4, 5)]),
    ("softplus", lambda tf, a: tf.nn.softplus(a * 10.0), [(4, 5)]),
    ("softsign", lambda tf, a: tf.nn.softsign(a), [(4, 5)]),
    ("leaky_relu", lambda tf, a: tf.nn.leaky_relu(a, 0.1), [(4, 5)]),
    ("lrn", lambda tf, a: tf.nn.lrn(a, depth_radius=2, bias=1.5, alpha=0.3, beta=0.75), [(2, 3, 2, 7)]),
    ("local_response_normalization", lambda tf, a: tf.nn.local_response_normalization(a), [(1, 2, 2, 12)]),
    # 1-D convolution (text CNNs)
    ("conv1d_same_stride2", lambda tf, x, w: tf.nn.conv1d(x, w, 2, "SAME"), [(2, 9, 3), (4, 3, 5)]),
    ("conv1d_valid_list_stride", lambda tf, x, w: tf.nn.conv1d(x, w, [1, 1, 1], "VALID"), [(1, 7, 2), (3, 2, 4)]),
    # convolution transposed
    ("conv2d_transpose_same", lambda tf, x, w: tf.nn.conv2d_transpose(x, w, [2, 6, 6, 3], [1, 2, 2, 1], "SAME"),
     [(2, 3, 3, 4), (3, 3, 3, 4)]),
    ("conv2d_transpose_valid", lambda tf, x, w: tf.nn.conv2d_transpose(x, w, [1, 7, 5, 2], [1, 2, 1, 1], "VALID"),
     [(1, 3, 3, 3), (3, 3, 2, 3)]),
    ("conv2d_transpose_tensor_shape", lambda tf, x, w: tf.nn.conv2d_transpose(
        x, w, tf.stack([tf.shape(x)[0], 5, 5, 2]), [1, 2, 2, 1], "SAME"), [(2, 3, 3, 3), (2, 2, 2, 3)]),
    # depthwise, separable and atrous convolutions (MobileNet, Xception, DeepLab)
    ("depthwise_same_stride2", lambda tf, x, w: tf.nn.depthwise_conv2d(x, w, [1, 2, 2, 1], "SAME"),
     [(2, 7, 6, 3), (3, 3, 3, 2)]),
    ("depthwise_valid_rate", lambda tf, x, w: tf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "VALID", rate=[2, 2]),
     [(1, 8, 7, 2), (3, 2, 2, 1)]),
    ("depthwise_native", lambda tf, x, w: tf.nn.depthwise_conv2d_native(x, w, [1, 1, 1, 1], "SAME"),
     [(2, 5, 5, 4), (2, 2, 4, 3)]),
    ("separable_same", lambda tf, x, dw, pw: tf.nn.separable_conv2d(x, dw, pw, [1, 2, 2, 1], "SAME"),
     [(2, 6, 6, 3), (3, 3, 3, 2), (1, 1, 6, 4)]),
    ("separable_rate", lambda tf, x, dw, pw: tf.nn.separable_conv2d(x, dw, pw, [1, 1, 1, 1], "SAME", rate=[2, 2]),
     [(1, 7, 7, 2), (3, 3, 2, 1), (1, 1, 2, 3)]),
    ("atrous_conv2d", lambda tf, x, w: tf.nn.atrous_conv2d(x, w, 2, "SAME"), [(2, 7, 7, 2), (3, 3, 2, 3)]),
    ("atrous_conv2d_valid", lambda tf, x, w: tf.nn.atrous_conv2d(x, w, 3, "VALID"), [(1, 9, 8, 2), (2, 2, 2, 3)]),
    ("atrous_conv2d_transpose", lambda tf, x, w: tf.nn.atrous_conv2d_transpose(x, w, [2, 6, 6, 2], 2, "SAME"),
     [(2, 6, 6, 3), (3, 3, 2, 3)]),
    # tf.nn composites (nn_composites.py): values and gradients (fused_batch_norm's: y's alone)
    ("zero_fraction", lambda tf, a: tf.nn.zero_fraction(tf.nn.relu(a)) + 0 * tf.reduce_sum(a), [(3, 4)]),
    ("swish", lambda tf, a: tf.nn.swish(a), [(3, 4)]),
    ("silu_beta", lambda tf, a: tf.nn.silu(a, beta=1.7), [(3, 4)]),
    ("crelu", lambda tf, a: tf.nn.crelu(a), [(3, 4)]),
    ("crelu_axis0", lambda tf, a: tf.nn.crelu(a, axis=0), [(3, 4)]),
    ("relu_layer", lambda tf, a, w, b: tf.nn.relu_layer(a, w, b), [(3, 4), (4, 5), (5,)]),
    ("space_to_depth", lambda tf, a: tf.nn.space_to_depth(a, 2), [(2, 4, 6, 3)]),
    ("space_to_depth_top", lambda tf, a: tf.space_to_depth(a, 3), [(1, 6, 3, 2)]),
    ("depth_to_space", lambda tf, a: tf.nn.depth_to_space(a, 2), [(2, 3, 2, 8)]),
    ("depth_to_space_top", lambda tf, a: tf.depth_to_space(a, 3), [(1, 2, 2, 9)]),
    ("sufficient_statistics", lambda tf, a: list(tf.nn.sufficient_statistics(a, [0, 2])[:3]), [(3, 4, 5)]),
    ("sufficient_statistics_shift",
     lambda tf, a, s: list(tf.nn.sufficient_statistics(a, [1], shift=s, keep_dims=True)[:3]), [(3, 4), (3, 1)]),
    ("normalize_moments", lambda tf, a: list(tf.nn.normalize_moments(*tf.nn.sufficient_statistics(a, [0]))), [(6, 4)]),
    ("normalize_moments_shift",
     lambda tf, a, s: list(tf.nn.normalize_moments(*tf.nn.sufficient_statistics(a, [0], shift=s))), [(6, 4), (4,)]),
    ("weighted_moments", lambda tf, a, w: list(tf.nn.weighted_moments(a, [0], w)), [(5, 3), ("pos", 5, 3)]),
    ("weighted_moments_bcast_keep",
     lambda tf, a, w: list(tf.nn.weighted_moments(a, [0, 1], w, keep_dims=True)), [(5, 3), ("pos", 5, 1)]),
    ("weighted_moments_int_weights",
     lambda tf, a, w: list(tf.nn.weighted_moments(a, [0], tf.cast(w * 3.0 + 1.0, tf.int32))), [(5, 3), ("pos", 5, 3)]),
    ("log_poisson", lambda tf, z, l: tf.nn.log_poisson_loss(z, l), [("pos", 3, 4), (3, 4)]),
    ("log_poisson_full", lambda tf, z, l: tf.nn.log_poisson_loss(z * 3.0 - 1.4, l, compute_full_loss=True),
     [("pos", 3, 4), (3, 4)]),
    ("fused_bn_train", lambda tf, x, s, o: list(tf.nn.fused_batch_norm(x, s, o, epsilon=1e-3)),
     [(2, 3, 4, 5), ("pos", 5), (5,)]),
    ("fused_bn_train_tiny_eps", lambda tf, x, s, o: list(tf.nn.fused_batch_norm(x, s, o, epsilon=1e-8)),
     [(2, 3, 4, 5), ("pos", 5), (5,)]),
    ("fused_bn_infer", lambda tf, x, s, o, m, v: list(tf.nn.fused_batch_norm(x, s, o, m, v, is_training=False)),
     [(2, 3, 4, 5), ("pos", 5), (5,), (5,), ("pos", 5)]),
    # tf.sort, tf.argsort, tf.roll, tf.repeat (rearrange_ops.py)
    ("sort_last", lambda tf, a: tf.sort(a), [(3, 5)]),
    ("sort_axis0_desc", lambda tf, a: tf.sort(a, axis=0, direction="DESCENDING"), [(4, 3, 2)]),
    ("sort_ties", lambda tf, a: tf.sort(tf.round(a * 2.0) + a * 0.0 + a * 1e-3, axis=1), [(3, 6)]),
    ("argsort", lambda tf, a: tf.cast(tf.argsort(tf.round(a)), tf.float32) + 0 * a, [(3, 6)]),
    ("argsort_axis0_desc", lambda tf, a: tf.cast(tf.argsort(a, axis=0, direction="DESCENDING"), tf.float32) + 0 * a,
     [(5, 3)]),
    ("sort_int32_extremes", lambda tf, a: _f(tf, tf.sort(tf.concat([_ints(tf, a), tf.constant(
        [[-2 ** 31, 2 ** 31 - 1, 0]] * 3, tf.int32)], 1))) + 0 * tf.reduce_sum(a), [(3, 4)]),
    ("argsort_int32_extremes", lambda tf, a: _f(tf, tf.argsort(tf.concat([_ints(tf, a), tf.constant(
        [[2 ** 31 - 1, -2 ** 31, -2 ** 31]] * 3, tf.int32)], 1))) + 0 * tf.reduce_sum(a), [(3, 4)]),
    ("sort_uint8", lambda tf, a: [_f(tf, tf.sort(tf.cast(a * 60.0 + 125.0, tf.uint8))),
                                  _f(tf, tf.argsort(tf.cast(tf.round(a) + 2.0, tf.uint8), axis=0))], [(4, 5)]),
    # tf.bitwise (bitwise_ops.py)
    ("bitwise", lambda tf, a, b: [_f(tf, op(_ints(tf, a, 40.0), _ints(tf, b, 40.0))) for op in (
        tf.bitwise.bitwise_and, tf.bitwise.bitwise_or, tf.bitwise.bitwise_xor)]
     + [_f(tf, tf.bitwise.invert(_ints(tf, a, 40.0)))], [(3, 4), (4,)]),
    ("bitwise_shifts", lambda tf, a, b: [_f(tf, tf.bitwise.left_shift(_ints(tf, a, 40.0), tf.abs(_ints(tf, b)))),
                                         _f(tf, tf.bitwise.right_shift(_ints(tf, a, 40.0), tf.abs(_ints(tf, b))))],
     [(3, 4), (3, 4)]),
    ("bitwise_uint8", lambda tf, a: [_f(tf, tf.bitwise.invert(tf.cast(a * 60.0 + 125.0, tf.uint8))),
                                     _f(tf, tf.bitwise.right_shift(tf.cast(a * 60.0 + 125.0, tf.uint8),
                                                                   tf.constant(3, tf.uint8)))], [(3, 4)]),
    # tally_ops.py: tf.math.reduce_variance/std, xlogy, tf.confusion_matrix, bincount, ...
    ("reduce_variance", lambda tf, a: [tf.math.reduce_variance(a), tf.math.reduce_variance(a, 1, keepdims=True)],
     [(3, 4)]),
    ("reduce_std", lambda tf, a: [tf.math.reduce_std(a, [0, 2]), tf.math.reduce_std(a, -1)], [(2, 3, 4)]),
    ("xlogy", lambda tf, a, b: tf.math.xlogy(tf.nn.relu(a), b), [(3, 4), ("pos", 4)]),
    ("xlogy_zero_y", lambda tf, a, b: tf.math.xlogy(tf.nn.relu(a) * tf.constant([0.0, 1.0, 0.0, 2.0]),
                                                    b * tf.constant([0.0, 1.0, 1.0, 1.0])), [(4,), ("pos", 4)]),
    ("where_v2", lambda tf, a, b: [tf.where_v2(a > 0, a, b), tf.where_v2(tf.constant([True, False, True]), a, 1.5)],
     [(4, 3), (3,)]),
    ("confusion_matrix", lambda tf, a: [_f(tf, tf.confusion_matrix(tf.abs(_ints(tf, a[0])) - 1, tf.abs(
        _ints(tf, a[1] * 0.7)) - 1, num_classes=6)), tf.confusion_matrix(
            [0, 2, 1], [1, 2, 1], num_classes=4, weights=tf.abs(a[0, :3]), dtype=tf.float32)], [(2, 6)]),
    ("bincount_weights_min_max", lambda tf, a: [tf.reshape(tf.stop_gradient(tf.bincount(  # (TF: no gradient)
        tf.abs(_ints(tf, a)), weights=a, minlength=8, maxlength=8)), [8]) + 0 * tf.reduce_sum(a),
        tf.reshape(_f(tf, tf.stop_gradient(tf.bincount(tf.abs(_ints(tf, a)), minlength=3, maxlength=3))), [3])],
     [(3, 5)]),
    ("invert_permutation", lambda tf, a: _f(tf, tf.invert_permutation(tf.argsort(a))) + 0 * tf.reduce_sum(a),
     [(7,)]),
    ("saturate_cast", lambda tf, a: [_f(tf, tf.saturate_cast(a * 200.0, tf.uint8)),
                                     _f(tf, tf.saturate_cast(_ints(tf, a, 9e4), tf.int16))], [(3, 4)]),
    ("reduce_max_min_empty", lambda tf, a: [tf.reduce_max(a[:0]), tf.reduce_min(a[:, :0], 1),
                                            _f(tf, tf.reduce_max(_ints(tf, a)[:0], 0))], [(3, 4)]),
    # scatter_nd_ops.py: scatters into tensors
    ("tensor_scatter_nd", lambda tf, t, u: [tf.tensor_scatter_nd_update(t, [[1, 2], [3, 0]], u),
                                            tf.tensor_scatter_nd_add(t, [[1, 2], [3, 0], [1, 2]], tf.concat([u, u[:1]], 0)),
                                            tf.tensor_scatter_nd_sub(t, [[2]], tf.reshape(tf.tile(u, [2])[:3], [1, 3])),
                                            tf.tensor_scatter_update(t, [[0], [2]], tf.stack([t[1], t[3]]) * 2.0)],
     [(4, 3), (2,)]),
    # an index given twice: the last update wins in value (TF's CPU order), all get gradient
    ("tensor_scatter_nd_duplicates", lambda tf, t, u: [
        tf.tensor_scatter_nd_update(t, [[1, 2], [3, 0], [1, 2], [1, 2]], tf.concat([u, u * 3.0], 0)),
        tf.tensor_scatter_nd_update(t, [[2], [0], [2]], tf.stack([t[1], t[3], t[0] * 2.0]))],
     [(4, 3), (2,)]),
    # block_ops.py: space <-> batch, image patches
    ("space_to_batch_nd", lambda tf, a, b: [tf.space_to_batch_nd(a, [2, 3], [[1, 0], [1, 1]]),
                                            tf.space_to_batch_nd(b, [2], [[0, 2]]),
                                            tf.space_to_batch(a, [[1, 0], [0, 1]], 2)], [(2, 5, 7, 3), (3, 4, 6)]),
    ("batch_to_space_nd", lambda tf, a: [tf.batch_to_space_nd(a, [2, 3], [[1, 0], [1, 1]]),
                                         tf.batch_to_space_nd(a, [2, 3], [[0, 1], [2, 0]]),
                                         tf.batch_to_space(a[:, :, :2], [[1, 0], [0, 1]], 2)], [(12, 3, 3, 2)]),
    ("extract_image_patches", lambda tf, a: [tf.extract_image_patches(a, [1, 3, 2, 1], [1, 2, 1, 1], [1, 1, 2, 1], p)
                                             for p in ("VALID", "SAME")]
     + [tf.extract_image_patches(a, [1, 2, 2, 1], [1, 3, 3, 1], [1, 1, 1, 1], "SAME")], [(2, 5, 7, 3)]),
    # conv3d_ops.py: 3-D convolution and pooling (TF's CPU conv3d has no dilation to compare)
    ("conv3d", lambda tf, a, w: [tf.nn.conv3d(a, w, [1, 1, 1, 1, 1], "SAME"), tf.nn.conv3d(a, w, [1, 2, 1, 2, 1], "VALID"),
                                 tf.nn.conv3d(a, w, [1, 1, 2, 1, 1], "SAME")], [(2, 5, 6, 7, 3), (3, 2, 3, 3, 4)]),
    ("pool3d", lambda tf, a: [tf.nn.max_pool3d(a, [1, 2, 2, 2, 1], [1, 2, 2, 2, 1], "SAME"),
                              tf.nn.max_pool3d(a, [1, 3, 2, 3, 1], [1, 1, 2, 2, 1], "VALID"),
                              tf.nn.avg_pool3d(a, [1, 2, 3, 2, 1], [1, 2, 2, 2, 1], "SAME"),
                              tf.nn.avg_pool3d(a, [1, 3, 3, 3, 1], [1, 1, 1, 1, 1], "VALID")], [(2, 5, 6, 7, 3)]),
    # conv_dispatch_ops.py: tf.nn.convolution and tf.nn.pool over 1, 2 and 3 spatial dimensions
    ("convolution", lambda tf, a, w, b, v: [tf.nn.convolution(a, w, "SAME"), tf.nn.convolution(a, w, "VALID", strides=[2]),
                                            tf.nn.convolution(a, w, "SAME", dilation_rate=[2]),
                                            tf.nn.convolution(b, v, "SAME", strides=[2, 1]),
                                            tf.nn.convolution(b, v, "VALID", dilation_rate=[2, 2])],
     [(2, 9, 3), (3, 3, 4), (2, 7, 8, 3), (3, 2, 3, 4)]),
    ("pool", lambda tf, a, b, c: [tf.nn.pool(a, [2], "MAX", "SAME", strides=[2]), tf.nn.pool(a, [3], "AVG", "VALID"),
                                  tf.nn.pool(b, [2, 3], "AVG", "SAME", strides=[2, 2]),
                                  tf.nn.pool(b, [2, 2], "MAX", "VALID"), tf.nn.pool(c, [2, 3, 2], "AVG", "SAME")],
     [(2, 9, 3), (2, 7, 8, 3), (1, 5, 6, 4, 2)]),
    ("roll", lambda tf, a: tf.roll(a, 2, 1), [(3, 5)]),
    ("roll_multi", lambda tf, a: tf.roll(a, [1, -2, 3], [0, 1, 1]), [(3, 5, 2)]),
    ("roll_neg_axis", lambda tf, a: tf.roll(a, [7], [-1]), [(2, 4)]),
    ("repeat_flat", lambda tf, a: tf.repeat(a, 2), [(2, 3)]),
    ("repeat_axis", lambda tf, a: tf.repeat(a, [1, 0, 3], axis=1), [(2, 3)]),
    ("repeat_axis0", lambda tf, a: tf.repeat(a, 3, axis=0), [(2, 3)]),
    # square-matrix linear algebra (linalg_ops.py): well-conditioned and SPD inputs built in-graph
    ("matrix_inverse", lambda tf, a: tf.matrix_inverse(_wc(tf, a)), [(3, 3)]),
    ("matrix_inverse_adjoint_batch", lambda tf, a: tf.matrix_inverse(_wc(tf, a), adjoint=True), [(2, 3, 3)]),
    ("matrix_determinant", lambda tf, a: tf.matrix_determinant(_wc(tf, a)), [(2, 4, 4)]),
    ("slogdet", lambda tf, a: list(tf.linalg.slogdet(_wc(tf, a) - 6.0 * tf.eye(3))), [(3, 3)]),
    ("cholesky", lambda tf, a: tf.cholesky(_spd(tf, a)), [(3, 3)]),
    ("cholesky_batch", lambda tf, a: tf.linalg.cholesky(_spd(tf, a)), [(2, 4, 4)]),
    ("logdet", lambda tf, a: tf.linalg.logdet(_spd(tf, a)), [(3, 3)]),
    ("matrix_solve", lambda tf, a, b: tf.matrix_solve(_wc(tf, a), b), [(3, 3), (3, 2)]),
    ("matrix_solve_adjoint", lambda tf, a, b: tf.matrix_solve(_wc(tf, a), b, adjoint=True), [(2, 3, 3), (2, 3, 4)]),
    ("triangular_lower", lambda tf, a, b: tf.matrix_triangular_solve(_wc(tf, a), b), [(3, 3), (3, 2)]),
    ("triangular_upper_adjoint", lambda tf, a, b: tf.matrix_triangular_solve(_wc(tf, a), b, lower=False, adjoint=True),
     [(4, 4), (4, 2)]),
    ("triangular_lower_adjoint_batch",
     lambda tf, a, b: tf.linalg.triangular_solve(_wc(tf, a), b, lower=True, adjoint=True), [(2, 3, 3), (2, 3, 1)]),
    ("band_part", lambda tf, a: [tf.matrix_band_part(a, 1, 0), tf.matrix_band_part(a, -1, 1),
                                 tf.linalg.band_part(a, 0, -1)], [(2, 4, 5)]),
    ("trace", lambda tf, a: tf.trace(a), [(2, 3, 4)]),
    ("cholesky_solve", lambda tf, a, b: tf.cholesky_solve(tf.cholesky(_spd(tf, a)), b), [(3, 3), (3, 2)]),
    # eig_ops.py: eigenvectors compared by magnitude (unique up to sign per column)
    ("self_adjoint_eig", lambda tf, a: (lambda ev: [ev[0], tf.abs(ev[1]), tf.self_adjoint_eigvals(a + tf.matrix_transpose(a))])(
        tf.self_adjoint_eig(a + tf.matrix_transpose(a))), [(2, 4, 4)]),
    ("self_adjoint_eig_lower_triangle", lambda tf, a: tf.self_adjoint_eig(tf.matrix_band_part(a, -1, 0) * 2.0)[0],
     [(3, 3)]),
    ("matrix_solve_ls", lambda tf, a, b: [tf.matrix_solve_ls(a, b), tf.matrix_solve_ls(a, b, l2_regularizer=0.5)],
     [(5, 3), (5, 2)]),
    ("matrix_solve_ls_underdetermined", lambda tf, a, b: [tf.matrix_solve_ls(a, b), tf.matrix_solve_ls(a, b, 0.1)],
     [(2, 4), (2, 3)]),
    # images
    ("resize_bilinear_up", lambda tf, a: tf.image.resize_bilinear(a, [5, 7]), [(2, 3, 4, 2)]),
    ("resize_bilinear_down", lambda tf, a: tf.image.resize_bilinear(a, [2, 3]), [(1, 5, 7, 1)]),
    ("resize_bilinear_align", lambda tf, a: tf.image.resize_bilinear(a, [5, 6], align_corners=True),
     [(1, 3, 4, 2)]),
    ("resize_bilinear_half_pixel", lambda tf, a: tf.image.resize_bilinear(a, [7, 3], half_pixel_centers=True),
     [(2, 4, 5, 1)]),
    ("resize_nearest_up", lambda tf, a: tf.image.resize_nearest_neighbor(a, [5, 7]), [(2, 3, 4, 2)]),
    ("resize_nearest_down", lambda tf, a: tf.image.resize_nearest_neighbor(a, [2, 3]), [(1, 5, 7, 1)]),
    ("resize_nearest_align", lambda tf, a: tf.image.resize_nearest_neighbor(a, [7, 5], align_corners=True),
     [(1, 3, 4, 2)]),
    ("resize_nearest_half_pixel", lambda tf, a: tf.image.resize_nearest_neighbor(a, [7, 3], half_pixel_centers=True),
     [(2, 4, 5, 1)]),
    # image_more_ops.py: contrast, grayscale, bounding boxes, central_crop, rot90, resize_image_with_pad
    ("adjust_contrast", lambda tf, a, b: [tf.stop_gradient(tf.image.adjust_contrast(a, 1.7)),  # (TF: no gradient)
                                          tf.stop_gradient(tf.image.adjust_contrast(b, 0.3))], [(7, 9, 3), (2, 6, 5, 3)]),
    ("rgb_to_grayscale", lambda tf, a: [tf.image.rgb_to_grayscale(a), tf.image.grayscale_to_rgb(a[..., :1])],
     [(2, 5, 4, 3)]),
    ("crop_pad_bounding_box", lambda tf, a: [tf.image.crop_to_bounding_box(a, 1, 2, 4, 5),
                                             tf.image.pad_to_bounding_box(a, 1, 2, 10, 12)], [(7, 9, 3)]),
    ("central_crop", lambda tf, a, b: [tf.image.central_crop(a, 0.5), tf.image.central_crop(a, 0.33),
                                       tf.image.central_crop(b, 0.875)], [(7, 9, 3), (2, 6, 5, 3)]),
    ("rot90_transpose", lambda tf, a, b: [tf.reshape(tf.image.rot90(a, k), [5, 4, 2] if k % 2 else [4, 5, 2])
                                          for k in (-1, 0, 1, 2, 3)]  # (TF's static shape is unknown)
     + [tf.reshape(tf.image.rot90(b, 3), [2, 4, 3, 1]), tf.image.transpose_image(b)], [(4, 5, 2), (2, 3, 4, 1)]),
    ("resize_image_with_pad", lambda tf, a, b: [tf.image.resize_image_with_pad(a, 10, 6),
                                                tf.image.resize_image_with_pad(b, 4, 9)], [(7, 9, 3), (2, 6, 5, 3)]),
    ("rgb_to_hsv", lambda tf, a: tf.image.rgb_to_hsv(a), [("pos", 2, 5, 4, 3)]),
    ("hsv_to_rgb", lambda tf, a: [tf.stop_gradient(tf.image.hsv_to_rgb(tf.minimum(a * 0.55, 1.0))), 0 * a],
     [("pos", 4, 5, 3)]),  # (TF: not differentiable)
    ("adjust_hue_saturation", lambda tf, a: [tf.stop_gradient(tf.image.adjust_hue(a, d)) for d in (0.2, -0.45, 0.9)]
     + [tf.stop_gradient(tf.image.adjust_saturation(a, f)) for f in (0.0, 0.5, 3.0)] + [0 * a],  # (TF: no gradient)
     [("pos", 2, 5, 4, 3)]),
    ("resize_images_single", lambda tf, a: tf.image.resize_images(a, [6, 2]), [(3, 4, 2)]),
    ("resize_images_nearest", lambda tf, a: tf.image.resize_images(a, [6, 2], tf.image.ResizeMethod.NEAREST_NEIGHBOR),
     [(2, 3, 4, 2)]),
    ("resize_images_aspect", lambda tf, a: tf.image.resize_images(a, [8, 8], preserve_aspect_ratio=True),
     [(1, 3, 5, 1)]),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_values_and_gradients_match_tensorflow(case):
    check_case(case, tft, cft)


def _both(build):
    out = []
    for tf in (cft, tft):
        with tf.Graph().as_default():
            fetch = build(tf)
            with tf.Session() as s:
                out.append(s.run(fetch))
    return out


def test_sizes_known_only_at_run_time_match_tensorflow():
    """Outputs whose size the data decides (bincount, confusion_matrix without num_classes)."""
    got, want = _both(lambda tf: [tf.bincount([1, 1, 3, 5]), tf.bincount(np.zeros(0, np.int32)),
                                  tf.bincount([[4, 2], [2, 2]], weights=[[0.5, 1.0], [2.0, 3.0]], minlength=2),
                                  tf.confusion_matrix([0, 1, 3, 1], [0, 3, 3, 1]),
                                  tf.reduce_max(np.zeros((0, 3), np.float32), 0),
                                  tf.reduce_min(np.zeros((2, 0), np.int32), 1)])
    for a, b in zip(got, want):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


# -- what the printing ops write --------------------------------------------------------------------


def _run_print(tf, build):
    g = tf.Graph()
    with g.as_default():
        fetch = build(tf)
        with tf.Session(graph=g) as s:
            for _ in range(3):
                s.run(fetch)


PRINTS = [
    ("Print_summarize", lambda tf: tf.Print(tf.constant(1.0), [tf.constant([1.0, 2.5, 1 / 3, 4.0, 5.0]),
                                                               tf.constant([[1, 2], [3, 4]]),
                                                               tf.constant([True, False])], message="msg: ")),
    ("Print_nested_first_n", lambda tf: tf.Print(tf.constant(1.0), [tf.reshape(tf.range(24), [2, 3, 4]),
                                                                    tf.constant(np.float64(1 / 3)),
                                                                    tf.constant(1e-7), tf.constant("s\tr")],
                                                  first_n=2, summarize=5)),
    ("Print_all_and_empty", lambda tf: tf.Print(tf.constant(1.0), [tf.range(6), tf.zeros([2, 0])], summarize=-1)),
    ("print_v2", lambda tf: tf.print("hello", tf.constant([1.0, 2.5, 1 / 3, 4.0, 5.0]), tf.constant([[1, 2], [3, 4]]),
                                     tf.reshape(tf.range(24), [2, 3, 4]), tf.range(10), tf.constant("s"), 1.5,
                                     {"a": tf.constant([7, 8])}, summarize=2)),
    ("print_v2_sep_end", lambda tf: tf.print(tf.constant(1 / 3), tf.constant(np.float64(1 / 3)),
                                             tf.constant([True, False]), tf.reshape(tf.range(8), [2, 2, 2]),
                                             sep="|", end="<\n")),
    ("print_v2_all", lambda tf: tf.print(tf.reshape(tf.range(40), [5, 8]), summarize=-1)),
]


@pytest.mark.parametrize("case", PRINTS, ids=[c[0] for c in PRINTS])
def test_printed_text_matches_tensorflow(case, capfd):
    _, build = case
    _run_print(tft, build)
    want = capfd.readouterr().err
    _run_print(cft, build)
    got = capfd.readouterr().err
    # TensorFlow's log lines (deprecation warnings) are not part of what the op prints
    want = "".join(ln for ln in want.splitlines(keepends=True) if not re.match(r"^(WARNING|I\d{4}|W\d{4})", ln))
    assert want.strip(), "TensorFlow printed nothing: the capture is broken"
    assert got == want


# -- what the checks raise ----------------------------------------------------------------------------


def _failure(tf, build, feed_values):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None])
        op = build(tf, x)
        with tf.Session(graph=g) as s:
            with pytest.raises(tf.errors.InvalidArgumentError) as e:
                s.run(op, {x: feed_values})
    return e.value.message


def _core(message):
    """The failing condition's own text: TensorFlow adds graph-execution context around it."""
    for ln in message.splitlines():
        if ln.startswith("assertion failed:") or " : Tensor had " in ln:
            return ln.replace("\t", "").split(" [[")[0].strip()
    return message


CHECKS = [
    ("Assert", lambda tf, x: tf.Assert(tf.reduce_all(x > 0), [x, "text", tf.constant([4, 5, 6])], summarize=2),
     [1.0, -2.0, 3.0]),
    ("assert_equal", lambda tf, x: tf.assert_equal(x, tf.constant([1.0, 2.0, 3.0]), message="custom"), [1, 2, 4]),
    ("assert_less", lambda tf, x: tf.assert_less(x, 3.0), [1, 5, 2, 7]),
    ("assert_positive", lambda tf, x: tf.assert_positive(x), [1, -1, 0, 2]),
    ("assert_non_negative", lambda tf, x: tf.assert_non_negative(x, message="nonneg"), [1, -1]),
    ("check_numerics_nan", lambda tf, x: tf.check_numerics(x, "mymsg"), [1, np.nan]),
    ("check_numerics_both", lambda tf, x: tf.check_numerics(x, "mymsg"), [1, np.inf, np.nan]),
    ("check_numerics_inf", lambda tf, x: tf.check_numerics(x, "mymsg"), [1, -np.inf]),
]


def _renamed(message):
    # tensor names may differ between the two graphs (the constants' scopes)
    return re.sub(r"\([\w/]+:\d+\)", "(name)", message)


@pytest.mark.parametrize("case", CHECKS, ids=[c[0] for c in CHECKS])
def test_check_failures_match_tensorflow(case):
    _, build, feed = case
    want = _core(_failure(tft, build, feed))
    got = _core(_failure(cft, build, feed))
    assert want.startswith("assertion failed: [") or " : Tensor had " in want, want
    assert _renamed(got) == _renamed(want)


def test_static_checks_match_tensorflow():
    for tf in (tft, cft):
        with tf.Graph().as_default():
            x = tf.placeholder(tf.float32, [None])
            with pytest.raises(ValueError, match=r"must have rank 2\.  Received rank 1, shape"):
                tf.assert_rank(x, 2)
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match=r"^mm\nCondition x == y did not hold element-wise:\nx \(.*\) = \n\[1 2\]\n"
                                     r"y \(.*\) = \n\[1 3\]$"):
                tf.assert_equal(tf.constant([1, 2]), tf.constant([1, 3]), message="mm")


def test_integer_images_convert_as_tensorflow():
    u8 = (np.random.default_rng(4).random((5, 6, 3)) * 255).astype(np.uint8)
    got, want = _both(lambda tf: [tf.image.adjust_contrast(u8, 1.5), tf.image.adjust_contrast(u8, 0.2),
                                  tf.image.rgb_to_grayscale(u8), tf.image.adjust_hue(u8, 0.25),
                                  tf.image.adjust_saturation(u8, 1.5)])
    for a, b in zip(got, want):
        assert a.dtype == b.dtype == np.uint8
        np.testing.assert_array_equal(a, b)


SCHEDULES = {
    "cosine_decay_restarts": lambda tf, s: tf.train.cosine_decay_restarts(0.5, s, 30, alpha=0.05),
    "cosine_decay_restarts_tmul1_mmul": lambda tf, s: tf.train.cosine_decay_restarts(0.5, s, 30, t_mul=1.0,
                                                                                     m_mul=0.8),
    "cosine_decay_restarts_tmul3": lambda tf, s: tf.train.cosine_decay_restarts(1.0, s, 7, t_mul=3.0, m_mul=0.5),
    "linear_cosine_decay": lambda tf, s: tf.train.linear_cosine_decay(0.1, s, 120, num_periods=2.0, alpha=0.1),
    "linear_cosine_decay_default": lambda tf, s: tf.train.linear_cosine_decay(0.1, s, 100),
    "cosine_decay": lambda tf, s: tf.train.cosine_decay(0.5, s, 100, alpha=0.1),
    "polynomial_decay_cycle": lambda tf, s: tf.train.polynomial_decay(0.1, s, 40, 0.01, power=2.0, cycle=True),
}


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_learning_rate_schedules_match_tensorflow(name):
    steps = [0, 1, 5, 29, 30, 31, 37, 89, 99, 100, 150, 400, 1000]
    out = []
    for tf in (cft, tft):
        with tf.Graph().as_default():
            s = tf.placeholder(tf.int64, [])
            lr = SCHEDULES[name](tf, s)
            with tf.Session() as sess:
                out.append([sess.run(lr, {s: k}) for k in steps])
    np.testing.assert_allclose(out[0], out[1], rtol=2e-6, atol=1e-8)


def test_noisy_linear_cosine_decay_stays_near_its_mean():
    """Its noise is collflow's stream, not TF's: the rate stays within a few sigma of the noiseless one."""
    with cft.Graph().as_default():
        s = cft.placeholder(cft.int64, [])
        noisy = cft.train.noisy_linear_cosine_decay(0.1, s, 100, initial_variance=0.01)
        clean = cft.train.linear_cosine_decay(0.1, s, 100)
        with cft.Session() as sess:
            for k in (0, 10, 60):
                vals = np.array([sess.run(noisy, {s: k}) for _ in range(200)])
                c = sess.run(clean, {s: k})
                cos = 0.5 * (1 + np.cos(np.pi * 2 * 0.5 * k / 100))
                sigma = 0.1 * cos * np.sqrt(0.01 / (1 + k) ** 0.55)
                assert abs(vals.mean() - c) < 4 * sigma / np.sqrt(200) + 1e-7 and vals.std() > 0.5 * sigma


def test_index_arithmetic_and_variable_scatters_match_tensorflow():
    t0 = np.random.default_rng(5).standard_normal((4, 3)).astype(np.float32)

    def build(tf):
        v = tf.Variable(t0)
        ups = [tf.scatter_nd_add(v, [[0, 0], [1, 1]], [1.0, 2.0]), tf.scatter_nd_sub(v, [[2]], [[1.0, 1.0, 1.0]]),
               tf.scatter_nd_update(v, [[3, 2]], [9.0])]
        sd = tf.setdiff1d([1, 2, 3, 4, 2, 6], [2, 4])
        return ups, v, [tf.unravel_index([5, 7, 0, 11], [3, 4]), tf.unravel_index(7, [2, 2, 2]),
                        tf.unravel_index(np.array([3, 22], np.int64), np.array([5, 5], np.int64)), sd.out, sd.idx]
    got = []
    for tf in (cft, tft):
        with tf.Graph().as_default():
            ups, v, rest = build(tf)
            with tf.Session() as s:
                s.run(tf.global_variables_initializer())
                for u in ups:
                    s.run(u)
                got.append([s.run(v)] + s.run(rest))
    for a, b in zip(*got):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


def test_special_functions_match_tensorflow():
    """lgamma, digamma, erfc, polygamma(1, .) and lbeta in float64 over both sides of the
    reflection, large arguments and the poles (TF: lgamma and trigamma +inf, digamma NaN);
    their gradients too."""
    x = np.concatenate([np.linspace(-7.3, 12.0, 97), [0.5, 1.0, 2.0, 3.0, 1e-8, 1e-3, 30.0, 170.0, 1e5, -0.5, -1.5,
                                                      -3.99999, 0.0, -1.0, -2.0]])
    outs = []
    for tf in (cft, tft):
        with tf.Graph().as_default():
            p = tf.constant(x)
            pos = tf.constant(np.abs(x[:40]).reshape(8, 5) + 0.1)
            fetch = [tf.lgamma(p), tf.digamma(p), tf.erfc(p), tf.math.polygamma(tf.constant(1.0, tf.float64), p),
                     tf.lbeta(pos)]
            fetch += tf.gradients([tf.reduce_sum(tf.lgamma(pos)), tf.reduce_sum(tf.erfc(p)),
                                   tf.reduce_sum(tf.digamma(pos)), tf.reduce_sum(tf.lbeta(pos))], [p, pos])
            with tf.Session() as s:
                outs.append(s.run(fetch))
    for k, (a, b) in enumerate(zip(*outs)):
        assert np.array_equal(np.isnan(a), np.isnan(b)) and np.array_equal(np.isinf(a), np.isinf(b)), k
        fin = np.isfinite(b)
        np.testing.assert_allclose(a[fin], b[fin], rtol=1e-8, atol=1e-12, err_msg=f"fetch {k}")


def _ctc_program(tf, x, labels, seq, **kw):
    idx = np.array([[b, i] for b, lab in enumerate(labels) for i in range(len(lab))], np.int64).reshape(-1, 2)
    vals = np.array([v for lab in labels for v in lab], np.int32)
    p = tf.constant(x)
    loss = tf.nn.ctc_loss(tf.SparseTensor(idx, vals, [len(labels), 6]), p, seq, **kw)
    g = tf.gradients(tf.reduce_sum(loss * tf.constant(np.linspace(0.5, 2.0, len(labels)).astype(np.float32))), p)[0]
    return [loss, g]


@pytest.mark.parametrize("kw", [{}, {"preprocess_collapse_repeated": True}, {"time_major": False},
                                {"ignore_longer_outputs_than_inputs": True}], ids=["default", "collapse", "batch_major",
                                                                                    "ignore_longer"])
def test_ctc_loss_matches_tensorflow(kw):
    """Losses and gradients over repeated labels and short sequences, an entry with no path
    (repeats need blanks between them: inf, and softmax as its gradient), and with
    ignore_longer_outputs_than_inputs a label longer than its sequence (0), as TF."""
    x = np.random.default_rng(3).standard_normal((12, 5, 6)).astype(np.float32)
    labels = [[1, 2, 2, 3], [4], [0, 1, 0, 1, 3], [2, 2], [3]]
    seq = np.array([12, 5, 11, 9, 7], np.int32)
    labels[3], seq[3] = [1, 1, 1], 4               # no path: the repeats need 5 steps
    if kw.get("ignore_longer_outputs_than_inputs"):
        labels[1], seq[1] = [1, 2, 3, 4, 0], 4     # longer than its sequence
    if kw.get("time_major") is False:
        x = np.ascontiguousarray(x.transpose(1, 0, 2))
    got, want = [], []
    for tf, out in ((cft, got), (tft, want)):
        with tf.Graph().as_default():
            fetch = _ctc_program(tf, x, labels, seq, **kw)
            with tf.Session() as s:
                out.extend(s.run(fetch))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("labels,message", [([[1, 2, 0, 1]], "not enough time for target transition sequence"),
                                            ([[1], []], "labels length is zero in batch 1")])
def test_ctc_loss_refuses_what_tensorflow_refuses(labels, message):
    x = np.zeros((3, len(labels), 4), np.float32)
    for tf, err in ((cft, cft.errors.InvalidArgumentError), (tft, tensorflow.errors.InvalidArgumentError)):
        with tf.Graph().as_default():
            fetch = _ctc_program(tf, x, labels, np.array([3] * len(labels), np.int32))
            with tf.Session() as s, pytest.raises(err, match="(?i)" + message):
                s.run(fetch)


def test_svd_matches_tensorflow():
    """Singular values, |singular vectors| (their signs are arbitrary) and the gradient of a
    loss through sign-invariant products, square, wide, tall, batched and full_matrices, float64."""
    rng = np.random.default_rng(6)
    mats = [rng.standard_normal(s) for s in [(4, 4), (3, 5), (5, 3), (2, 3, 4)]]
    out = []
    for tf in (cft, tft):
        with tf.Graph().as_default():
            fetch = []
            for a in mats:
                p = tf.constant(a)
                s, u, v = tf.svd(p)
                loss = tf.reduce_sum(s * s * 0.7) + tf.reduce_sum(tf.matmul(u * s[..., None, :], u, transpose_b=True)) \
                    + tf.reduce_sum(tf.square(tf.matmul(v, v, transpose_b=True))) \
                    + tf.reduce_sum(tf.sqrt(tf.svd(p, compute_uv=False)))
                sf, uf, vf = tf.svd(p, full_matrices=True)
                k = min(a.shape[-2:])
                fetch += [s, tf.abs(u), tf.abs(v), tf.gradients(loss, p)[0], sf, tf.abs(uf[..., :, :k]),
                          tf.abs(vf[..., :, :k])]
            with tf.Session() as sess:
                out.append(sess.run(fetch))
    for k, (a, b) in enumerate(zip(*out)):
        assert a.shape == b.shape, k
        np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-9, err_msg=str(k))
