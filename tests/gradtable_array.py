"""Gradient-check cases for the array ops.

`_dyn(x)` hides x's static shape (a placeholder_with_default of unknown dims), so the
gradient rules take their run-time-shape paths (ReshapeLike, SplitLike, ScatterLike with
a like-input, ReshapeRows, ...) as well as their static ones.
"""
import numpy as np

import collflow as cf
from collflow.graph.ops import array_ops as A
from collflow.graph.ops.op_util import single
from gradcheck import Case

F64 = cf.float64


def _dyn(x, rank_known=True):
    """x with its static shape forgotten (dims unknown, or the rank too)."""
    return cf.placeholder_with_default(x, [None] * x.shape.rank if rank_known else None)


def _idx(v):
    v = np.asarray(v, dtype=np.int32)
    return A._scalar(v) if v.ndim == 0 else cf.constant(v)


def _run_idx(v):
    """A scalar index the graph cannot fold (a placeholder with a default)."""
    return cf.placeholder_with_default(np.int32(v), [])


_MASK = np.array([[True, False, True, False], [False, False, True, True], [True, True, False, False]])

CASES = [
    # -- creation and selection
    Case("Fill", lambda v: cf.fill([2, 3], v), [()]),
    Case("Fill", lambda v, x: cf.fill(cf.shape(x), v) * x, [(), (2, 3)], id="Fill-shape-of"),
    Case("Select", lambda x, y: cf.where(cf.constant(_MASK), x, y), [(3, 4), (3, 4)]),
    Case("Select", lambda x, y: cf.where(cf.constant(_MASK), x, y), [(3, 1), (4,)], id="Select-broadcast"),
    Case("IdentityN", lambda x, y: cf.identity_n([x, y * 2.0]), [(2, 3), (3,)]),
    Case("IdentityN", lambda x, y: cf.identity_n([x, y])[1], [(2, 3), (3,)], id="IdentityN-one-used"),
    Case("Identity", cf.identity, [(2, 3)]),
    Case("PlaceholderWithDefault", lambda x: cf.placeholder_with_default(x, [None, 3]), [(2, 3)]),
    # -- reshaping
    Case("Reshape", lambda x: cf.reshape(x, [4, -1]), [(2, 3, 2)]),
    Case("Reshape", lambda x: cf.reshape(_dyn(x), [-1]), [(2, 3, 2)], id="Reshape-dynamic"),
    Case("ReshapeLike", lambda x: A.reshape_like(_dyn(x), _dyn(cf.zeros((3, 4), F64))), [(2, 6)]),
    Case("ReshapeRows", lambda g: A.reshape_rows(g, _idx([[0, 1], [1, 2]])), [(2, 2, 3)]),
    Case("ReshapeRows", lambda g: A.reshape_rows(_dyn(g), _idx([[0, 1], [1, 2]])), [(2, 2, 3)],
         id="ReshapeRows-dynamic"),
    Case("ExpandDims", lambda x: cf.expand_dims(x, 1), [(2, 3)]),
    Case("ExpandDims", lambda x: cf.expand_dims(_dyn(x, False), -1), [(2, 3)], id="ExpandDims-neg-unknown-rank"),
    Case("Squeeze", lambda x: cf.squeeze(x), [(2, 1, 3, 1)]),
    Case("Squeeze", lambda x: cf.squeeze(_dyn(x), [1]), [(2, 1, 3, 1)], id="Squeeze-axis-dynamic"),
    Case("ExpandReduced", lambda t, x: A.expand_reduced(t, x, 1) * x, [(3,), (3, 4)]),
    Case("Transpose", lambda x: cf.transpose(x, [2, 0, 1]), [(2, 3, 4)]),
    Case("Transpose", lambda x: cf.transpose(x), [(2, 3, 4)], id="Transpose-reverse"),
    # -- broadcasting and tiling
    Case("BroadcastLike", lambda x, y: A.broadcast_like(x, y) * y, [(1, 4), (3, 4)]),
    Case("BroadcastTo", lambda x: cf.broadcast_to(x, [2, 3, 4]), [(3, 1)]),
    Case("Tile", lambda x: cf.tile(x, [2, 1, 3]), [(2, 3, 2)]),
    Case("Tile", lambda x: cf.tile(_dyn(x), [1, 3]), [(2, 3)], id="Tile-dynamic"),
    Case("TileGrad", lambda g: A.tile_grad(g, cf.zeros((2, 3), F64), [2, 2]), [(4, 6)]),
    Case("TileGrad", lambda g: A.tile_grad(g, _dyn(cf.zeros((2, 3), F64)), [1, 2]), [(2, 6)], id="TileGrad-dynamic"),
    # -- joining and splitting
    Case("ConcatV2", lambda a, b, c: cf.concat([a, b, c], 1), [(2, 1), (2, 3), (2, 2)]),
    Case("ConcatV2", lambda a, b: cf.concat([a, b], -2), [(1, 3), (2, 3)], id="ConcatV2-neg-axis"),
    Case("ConcatV2", lambda a, b: cf.concat([_dyn(a), b], 0), [(1, 3), (2, 3)], id="ConcatV2-dynamic"),
    Case("SplitLike", lambda g, a, b: A.split_like(g, [_dyn(a), _dyn(b)], 1), [(2, 5), (2, 2), (2, 3)]),
    Case("Split", lambda x: cf.split(x, 2, axis=1), [(3, 4)]),
    Case("Split", lambda x: cf.split(x, 3, axis=0)[1], [(3, 2)], id="Split-one-used"),
    Case("SplitV", lambda x: cf.split(x, [1, -1, 2], 1), [(2, 6)]),
    Case("Pack", lambda a, b: cf.stack([a, b], axis=1), [(2, 3), (2, 3)]),
    Case("Pack", lambda a, b: cf.stack([a, b], axis=-1), [(2, 3), (2, 3)], id="Pack-last"),
    Case("Unpack", lambda x: cf.unstack(x, axis=1), [(2, 3, 2)]),
    Case("Unpack", lambda x: list(x)[0] * 3.0, [(2, 3)], id="Unpack-iter-one-used"),
    # -- gathering and scattering
    Case("GatherV2", lambda p: cf.gather(p, _idx([2, 0, 2])), [(3, 4)]),
    Case("GatherV2", lambda p: cf.gather(p, _idx([[0, 2], [2, 1]])), [(3, 4)], id="GatherV2-2d-indices"),
    Case("GatherV2", lambda p: cf.gather(_dyn(p), _idx([[0, 2], [2, 2]])), [(3, 2, 2)],
         id="GatherV2-unknown-inner"),
    Case("GatherV2", lambda p: cf.gather(p, _idx(1)), [(3, 4)], id="GatherV2-scalar-index"),
    Case("GatherV2", lambda p: cf.gather(p, _idx([[3, 0], [3, 1]]), axis=1), [(2, 4, 3)], id="GatherV2-axis1"),
    Case("GatherV2", lambda p: cf.gather(_dyn(p), _idx([1, 1, 0]), axis=-1), [(2, 3)], id="GatherV2-axis-1-dynamic"),
    Case("GatherV2", lambda p: cf.gather(cf.gather(p, _idx([1, 0, 1])), _idx([2, 2])), [(2, 3)],
         id="GatherV2-of-gather"),
    Case("IndexedSlicesToDense",
         lambda v: cf.convert_to_tensor(cf.IndexedSlices(v, _idx([0, 2, 0]), cf.constant(np.array([4, 3], np.int64)))),
         [(3, 3)]),
    Case("ScatterLike", lambda u: A.scatter_like(u, _idx([[1, 0], [1, 1]]), cf.zeros((2, 3, 2), F64), 1),
         [(2, 2, 2, 2)]),
    Case("ScatterLike", lambda u: A.scatter_like(u, _idx([2, 0, 2]), _dyn(cf.zeros((3, 2), F64)), 0), [(3, 2)],
         id="ScatterLike-dynamic"),
    # -- slicing and padding
    Case("Slice", lambda x: cf.slice(x, [1, 0, 2], [2, -1, 1]), [(3, 4, 5)]),
    Case("Slice", lambda x: cf.slice(_dyn(x), [0, 1], [-1, 2]), [(3, 4)], id="Slice-dynamic"),
    Case("StridedSlice", lambda x: x[1:, ::-2, None, 1], [(3, 5, 4)]),
    Case("StridedSlice", lambda x: x[..., 1:3], [(2, 3, 4)], id="StridedSlice-ellipsis"),
    Case("StridedSlice", lambda x: _dyn(x, False)[-1, ::2], [(2, 5)], id="StridedSlice-unknown-rank"),
    Case("StridedSlice", lambda x: x[_idx(1), 1:], [(3, 4)], id="StridedSlice-tensor-index"),
    Case("StridedSliceGrad", lambda g: A.strided_slice_grad(g, cf.zeros((4, 5), F64), (slice(1, 3), slice(None, None, 2))),
         [(2, 3)]),
    Case("StridedSliceGrad", lambda g: A.strided_slice_grad(g, _dyn(cf.zeros((4, 5), F64)), (1, Ellipsis)), [(5,)],
         id="StridedSliceGrad-dynamic"),
    # data-dependent sizes: partition and stitch (each other's adjoint)
    Case("DynamicPartition", lambda x: cf.concat(cf.dynamic_partition(x, cf.constant([1, 0, 1, 2], cf.int32), 3), 0)
         * cf.constant(np.arange(1.0, 5.0).reshape(4, 1)), [(4, 3)]),
    Case("DynamicStitch", lambda a, b: cf.dynamic_stitch([_idx([0, 2]), _idx([1, 3])], [a, b]), [(2, 3), (2, 3)]),
    # slices with run-time bounds (Python's rules: negative from the end, clamped)
    # bounds known only at run time (constant ones fold into a StridedSlice, as TF's)
    Case("SliceAxis", lambda x: x[_run_idx(1):_run_idx(-1), ::2], [(4, 5)]),
    Case("SliceAxis", lambda x: cf.slice(_dyn(x), cf.stack([_idx(1), _idx(0)]), [-1, 2]), [(3, 4)],
         id="SliceAxis-tf.slice-dynamic"),
    Case("SliceAxisGrad", lambda g: single("SliceAxisGrad", [g, _idx(1), _idx(0)],
                                           {"axis": 0, "has_start": True, "has_stop": False, "step": None,
                                            "shape": (4, 5)}), [(3, 5)]),
    Case("PadV2", lambda x: cf.pad(x, [[1, 0], [2, 3]], constant_values=0.7), [(2, 3)]),
    Case("PadV2", lambda x: cf.pad(_dyn(x), [[0, 2], [1, 1]]), [(2, 3)], id="PadV2-dynamic"),
    Case("MirrorPad", lambda x: cf.pad(x, [[1, 2], [2, 0]], "REFLECT"), [(4, 3)]),
    Case("MirrorPad", lambda x: cf.pad(x, [[2, 1], [3, 3]], "SYMMETRIC"), [(2, 3)], id="MirrorPad-symmetric"),
    Case("MirrorPadGrad", lambda g: A.mirror_pad_grad(g, [[1, 2], [0, 1]], "REFLECT"), [(6, 5)]),
    Case("MirrorPadGrad", lambda g: A.mirror_pad_grad(g, [[2, 2], [1, 0]], "SYMMETRIC"), [(6, 3)],
         id="MirrorPadGrad-symmetric"),
]


def _reshape_dynamic(a):
    b = cf.shape(a)[0]
    return cf.reshape(a, [b * 2, -1]) * 3.0


CASES += [Case("ReshapeDynamic", _reshape_dynamic, [(4, 6)], id="reshape-dynamic")]
