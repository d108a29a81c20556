"""Gradient-check cases for TensorFlow 1.x's remaining common ops (TF1 fidelity, part 3):
erf, atan2, einsum / tensordot, the diagonal ops, gather_nd / scatter_nd / sparse_to_dense /
boolean_mask, the segment reductions, Print / check_numerics, the extra activations, lrn,
conv2d_transpose and the image resizes."""
import numpy as np

import collflow as cf
from gradcheck import Case


def _away_from(*points):
    """Inputs in [-3, 9] at least 0.1 from each kink in `points`."""
    def make(shape):
        def gen(r):
            v = r.uniform(-3.0, 9.0, shape)
            for p in points:
                near = np.abs(v - p) < 0.1
                v[near] += 0.25
            return [v]
        return gen
    return make


def _distinct(*shapes):
    """Values with no ties (max/min gradients are then unambiguous)."""
    def gen(r):
        out = []
        for s in shapes:
            n = int(np.prod(s))
            out.append((r.permutation(n) * 0.37 - 1.0 + r.uniform(0, 0.05, n)).reshape(s))
        return out
    return gen


_IDS = np.array([0, 0, 2, 3, 3], np.int32)          # segment 1 is empty
_UIDS = np.array([[2, -1, 0], [2, 1, 0]], np.int32)  # -1 drops its row; segment 3 is empty

CASES = [
    # elementwise math
    Case("Erf", cf.erf, [(3, 4)]),
    Case("Erfc", cf.erfc, [(3, 4)]),
    # lgamma and digamma on both sides of the reflection at 1/2, away from the poles
    Case("Lgamma", cf.lgamma, [(2, 3)], make_inputs=lambda r: [np.array([[0.3, 1.7, 4.2], [-0.6, -1.4, 11.5]])]),
    Case("Digamma", cf.digamma, [(2, 3)], make_inputs=lambda r: [np.array([[0.3, 1.7, 4.2], [-0.6, -1.4, 11.5]])],
         rtol=1e-4),
    Case("Lgamma", lambda x: cf.lbeta(x), [(2, 3)], low=0.5, high=3.0, id="Lgamma-lbeta"),
    Case("FloorMod", cf.floormod, [(3, 4), (4,)],
         make_inputs=lambda r: [r.uniform(-2, 2, (3, 4)), r.uniform(0.5, 1.5, (4,)) * r.choice([-1, 1], (4,))]),
    Case("Atan2", cf.atan2, [(3, 4), (3, 4)]),
    Case("LinSpace", lambda a, b: cf.linspace(a, b, 5), [(), ()]),
    Case("LinSpace", lambda a, b: cf.linspace(a, b, 1), [(), ()], id="LinSpace-one"),
    Case("Atan2", cf.atan2, [(3, 4), (4,)], id="Atan2-broadcast",
         make_inputs=lambda r: [r.uniform(-2, 2, (3, 4)), r.uniform(0.5, 2, (4,))]),
    # contractions
    Case("Einsum", lambda a, b: cf.einsum("ij,jk->ik", a, b), [(3, 4), (4, 2)]),
    Case("Einsum", lambda a, b: cf.einsum("bij,bkj->bik", a, b), [(2, 3, 4), (2, 5, 4)], id="Einsum-batched"),
    Case("Einsum", lambda a, b, c: cf.einsum("ij,jk,kl", a, b, c), [(2, 3), (3, 4), (4, 2)], id="Einsum-three"),
    Case("Einsum", lambda a: cf.einsum("ii->i", a), [(3, 3)], id="Einsum-diagonal"),
    Case("Einsum", lambda a: cf.einsum("iji->j", a), [(3, 2, 3)], id="Einsum-trace-like"),
    Case("Einsum", lambda a, b: cf.einsum("ij,j->i", a, b), [(3, 4), (4,)], id="Einsum-summed-in-one"),
    Case("Einsum", lambda a, b: cf.einsum("ijk,k->", a, b), [(2, 3, 4), (4,)], id="Einsum-lonely-labels"),
    Case("Einsum", lambda a, b: cf.einsum("...ij,...jk->...ik", a, b), [(2, 1, 3, 4), (5, 4, 2)],
         id="Einsum-ellipsis-broadcast"),
    Case("Einsum", lambda a, b: cf.tensordot(a, b, [[1, 2], [0, 1]]), [(2, 3, 4), (3, 4, 5)], id="tensordot"),
    Case("Einsum", lambda a, b: cf.tensordot(a, b, 0), [(2, 3), (2,)], id="tensordot-outer"),
    # diagonals
    Case("Diag", cf.diag, [(2, 3)]),
    Case("DiagPart", cf.diag_part, [(3, 3)]),
    Case("MatrixDiag", cf.matrix_diag, [(2, 3)]),
    Case("MatrixDiagPart", cf.matrix_diag_part, [(2, 3, 3)]),
    Case("MatrixDiagPart", cf.matrix_diag_part, [(2, 3, 4)], id="MatrixDiagPart-wide"),
    Case("MatrixSetDiag", cf.matrix_set_diag, [(2, 4, 3), (2, 3)]),
    Case("Mul", lambda a, b: [t * t for t in cf.meshgrid(a, b)], [(3,), (2,)], id="meshgrid"),
    # indexing
    Case("GatherNd", lambda p: cf.gather_nd(p, [[0, 1], [2, 0], [0, 1]]), [(3, 2, 2)]),
    Case("GatherNd", lambda p: cf.gather_nd(p, [[2], [0], [2]]), [(3, 2)], id="GatherNd-rows"),
    Case("ScatterNd", lambda u: cf.scatter_nd([[1, 0], [0, 2], [1, 0]], u, [2, 3, 2]), [(3, 2)]),
    Case("SparseToDense", lambda v, d: cf.sparse_to_dense([[0, 1], [1, 0], [2, 2]], [3, 3], v, d), [(3,), ()]),
    Case("SparseToDense", lambda v: cf.sparse_to_dense([0, 2], [4], v), [()], id="SparseToDense-scalar-value"),
    # sparse_tensor_dense_matmul: gradients to the sparse values and (dense) to b
    Case("DenseGradIdentity", lambda v, b: cf.sparse_tensor_dense_matmul(
        cf.SparseTensor([[0, 1], [0, 3], [2, 0], [2, 3]], v, [3, 4]), b), [(4,), (4, 2)]),
    Case("DenseGradIdentity", lambda v, b: cf.sparse_tensor_dense_matmul(
        cf.SparseTensor([[0, 1], [1, 1], [2, 0]], v, [3, 2]), b, adjoint_a=True, adjoint_b=True), [(3,), (2, 3)],
         id="DenseGradIdentity-adjoints"),
    Case("GatherV2", lambda t: cf.boolean_mask(t, cf.constant([[True, False, True], [False, True, True]])),
         [(2, 3, 2)], id="boolean_mask"),
    Case("GatherV2", lambda t: cf.boolean_mask(t, cf.constant([False, True, True]), axis=1), [(2, 3)],
         id="boolean_mask-axis1"),
    # segments
    Case("SegmentSum", lambda d: cf.segment_sum(d, _IDS), [(5, 2)]),
    Case("SegmentMean", lambda d: cf.segment_mean(d, _IDS), [(5, 2)]),
    Case("SegmentMax", lambda d: cf.segment_max(d, _IDS), [(5, 2)], make_inputs=_distinct((5, 2))),
    Case("SegmentMin", lambda d: cf.segment_min(d, _IDS), [(5, 2)], make_inputs=_distinct((5, 2))),
    Case("UnsortedSegmentSum", lambda d: cf.unsorted_segment_sum(d, _UIDS, 4), [(2, 3, 2)]),
    Case("UnsortedSegmentSum", lambda d: cf.unsorted_segment_mean(d, _UIDS, 4), [(2, 3, 2)],
         id="unsorted_segment_mean"),
    # no empty segment here: it would hold the dtype's lowest (highest) value, overflowing the checker's sum
    Case("UnsortedSegmentMax", lambda d: cf.unsorted_segment_max(d, _UIDS, 3), [(2, 3, 2)],
         make_inputs=_distinct((2, 3, 2))),
    Case("UnsortedSegmentMin", lambda d: cf.unsorted_segment_min(d, _UIDS, 3), [(2, 3)],
         make_inputs=_distinct((2, 3))),
    # pass-through checks
    Case("Print", lambda a: cf.Print(a * a, [a], first_n=0), [(3,)]),
    Case("CheckNumerics", lambda a: cf.check_numerics(a * a, "a"), [(3, 2)]),
    Case("Identity", lambda a: cf.verify_tensor_all_finite(a * a, "a"), [(3,)], id="verify_tensor_all_finite"),
    # activations
    Case("Relu6", cf.nn.relu6, [(3, 4)], make_inputs=_away_from(0.0, 6.0)((3, 4))),
    Case("Elu", cf.nn.elu, [(3, 4)], make_inputs=_away_from(0.0)((3, 4))),
    Case("Selu", cf.nn.selu, [(3, 4)], make_inputs=_away_from(0.0)((3, 4))),
    Case("Softplus", cf.nn.softplus, [(3, 4)]),
    Case("Softsign", cf.nn.softsign, [(3, 4)], make_inputs=_away_from(0.0)((3, 4))),
    Case("LRN", lambda x: cf.nn.lrn(x, depth_radius=2, bias=1.5, alpha=0.3, beta=0.75), [(2, 2, 2, 6)]),
    Case("LRN", lambda x: cf.nn.local_response_normalization(x, depth_radius=5), [(1, 2, 1, 3)], id="LRN-wide"),
    # convolution, images
    Case("Conv2DBackpropInput", lambda x, w: cf.nn.conv2d_transpose(x, w, [2, 5, 5, 3], [1, 2, 2, 1], "SAME"),
         [(2, 3, 3, 2), (3, 3, 3, 2)], id="conv2d_transpose"),
    Case("Conv2DBackpropInput", lambda x, w: cf.nn.conv2d_transpose(x, w, [1, 6, 5, 1], 1, "VALID"),
         [(1, 4, 3, 2), (3, 3, 1, 2)], id="conv2d_transpose-valid"),
    # bilinear output is float32 (TensorFlow's op): exact differences need steps well above its rounding
    Case("ResizeBilinear", lambda x: cf.cast(cf.image.resize_bilinear(x, [5, 3]), cf.float64), [(2, 3, 4, 2)],
         eps=1e-2, rtol=1e-4, atol=1e-4),
    Case("ResizeBilinear", lambda x: cf.cast(cf.image.resize_bilinear(x, [4, 7], align_corners=True), cf.float64),
         [(1, 3, 4, 1)], eps=1e-2, rtol=1e-4, atol=1e-4, id="ResizeBilinear-align-corners"),
    Case("ResizeBilinear", lambda x: cf.cast(cf.image.resize_bilinear(x, [2, 6], half_pixel_centers=True),
                                             cf.float64),
         [(1, 4, 3, 2)], eps=1e-2, rtol=1e-4, atol=1e-4, id="ResizeBilinear-half-pixel"),
    Case("ResizeNearestNeighbor", lambda x: cf.image.resize_nearest_neighbor(x, [5, 2]), [(2, 3, 4, 1)]),
    Case("ResizeNearestNeighbor", lambda x: cf.image.resize_images(x, [3, 7], method=1, align_corners=True),
         [(3, 4, 2)], id="resize_images-nearest-align-corners"),
    # nan-safe product (graph/ops/nan_safe_ops.py; the composed ones: tests/test_nan_safe_ops.py)
    Case("MulNoNan", lambda x, y: cf.multiply_no_nan(x, y), [(3, 4), (4,)], id="multiply_no_nan"),
    Case("MulNoNan", lambda x, y: cf.multiply_no_nan(x, y * cf.constant([1.0, 0.0, 1.0, 0.0], cf.float64)),
         [(3, 4), (4,)], id="multiply_no_nan-zeros"),
    Case("EnsureShape", lambda x: cf.ensure_shape(x * 2.0, [None, 4]), [(3, 4)]),
]
