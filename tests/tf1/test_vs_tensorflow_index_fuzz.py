"""Randomised differential checks against TensorFlow of the structural and indexing ops:
slicing (python slices, strided_slice with every mask, slice with -1 sizes), gather /
gather_nd with batch_dims, scatter_nd and tensor_scatter_nd_*, pad, tile, concat / stack /
split, reverse / reverse_sequence / roll / transpose, space <-> batch / depth, one_hot,
segment ops, dynamic_partition / stitch, boolean_mask, where, sequence_mask, band_part,
top_k / in_top_k, searchsorted / histogram / bincount, unique / setdiff1d, broadcast_to,
expand_dims / squeeze / reshape, cumsum / cumprod, sort / argsort, edit_distance: values,
gradients, and errors for bad inputs (0-size dimensions and int64 indices included).
Each generator draws a case from a seeded generator; `CASES` cases per op."""
import os
import zlib

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow.compat.v1")
import collflow.compat.v1 as cf  # noqa: E402

from idxfuzz import diff  # noqa: E402

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
tf.disable_eager_execution()
pytestmark = pytest.mark.timeout(600)
CASES = 30


def _shape(r, lo=0, hi=4, max_dim=4, zero=0.1):
    return tuple(int(0 if r.random() < zero else r.integers(1, max_dim + 1)) for _ in range(r.integers(lo, hi + 1)))


def _f(r, shape, dt=np.float32):
    return r.normal(0, 1, shape).astype(dt)


def _idt(r):
    return np.int64 if r.random() < 0.5 else np.int32


# ---------------------------------------------------------------------------------------- slicing
def g_pyslice(r):
    shape = _shape(r, 1, 4, 5)
    spec, ell = [], False
    for _ in range(r.integers(1, len(shape) + 2)):
        k = r.random()
        if k < 0.5:
            b = None if r.random() < 0.3 else int(r.integers(-7, 8))
            e = None if r.random() < 0.3 else int(r.integers(-7, 8))
            s = [None, 1, 2, -1, -2, 3][r.integers(0, 6)]
            spec.append(slice(b, e, s))
        elif k < 0.7:
            spec.append(int(r.integers(-3, 3)))
        elif k < 0.85 and not ell:
            spec.append(Ellipsis)
            ell = True
        else:
            spec.append(None)
    spec = tuple(spec)
    return f"x{shape}[{spec}]", lambda t, x: x[spec], [_f(r, shape)]


def g_strided_slice(r):
    shape = _shape(r, 1, 4, 5)
    n = int(r.integers(1, len(shape) + 2))
    b = r.integers(-7, 8, n).astype(_idt(r))
    e = r.integers(-7, 8, n).astype(b.dtype)
    s = r.choice([1, 2, -1, -2, 3], n).astype(b.dtype)
    masks = {k: int(r.integers(0, 2 ** n)) if r.random() < 0.5 else 0
             for k in ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")}
    if masks["ellipsis_mask"]:
        masks["ellipsis_mask"] = 1 << int(r.integers(0, n))  # more than one ellipsis is an error
    bl, el, sl = b.tolist(), e.tolist(), s.tolist()
    if r.random() < 0.3:  # begin and end fed at run time (strides stay constants)
        return (f"strided_slice{shape} fed {bl} {el} {sl} {masks}",
                lambda t, x, bb, ee: t.strided_slice(x, bb, ee, t.constant(sl, b.dtype.name), **masks),
                [_f(r, shape), b, e])
    return (f"strided_slice{shape} {bl} {el} {sl} {masks}",
            lambda t, x: t.strided_slice(x, t.constant(bl, b.dtype.name), t.constant(el, b.dtype.name),
                                         t.constant(sl, b.dtype.name), **masks), [_f(r, shape)])


def g_slice(r):
    shape = _shape(r, 1, 4, 5)
    begin = [int(r.integers(0, d + 1)) for d in shape]
    size = [int(r.integers(-1, d - b0 + 1)) for d, b0 in zip(shape, begin)]
    if r.random() < 0.15:
        size[0] += 2  # past the end: an error
    if r.random() < 0.4:  # begin and size known only at run time
        b, z = np.array(begin, _idt(r)), np.array(size)
        return (f"slice{shape} fed {begin} {size}", lambda t, x, bb, zz: t.slice(x, bb, zz),
                [_f(r, shape), b, z.astype(b.dtype)])
    return f"slice{shape} {begin} {size}", lambda t, x: t.slice(x, begin, size), [_f(r, shape)]


def g_fed_bounds(r):
    """x[b:e, i] with b, e, i scalar tensors fed at run time (steps are Python ints)."""
    shape = _shape(r, 2, 3, 5, zero=0)
    b, e = int(r.integers(-7, 8)), int(r.integers(-7, 8))
    step = [None, 1, 2, -1][r.integers(0, 4)]
    i = int(r.integers(-shape[1] - (r.random() < 0.1), shape[1] + (r.random() < 0.1)))
    dt = _idt(r)
    return (f"x{shape}[{b}:{e}:{step}, {i}] fed",
            lambda t, x, bb, ee, ii: x[bb:ee:step, ii], [_f(r, shape), np.array(b, dt), np.array(e, dt),
                                                          np.array(i, dt)])


# --------------------------------------------------------------------------------- gather / scatter
def g_gather(r):
    pshape = _shape(r, 1, 3, 4)
    nd = len(pshape)
    ishape = _shape(r, 0, 3, 3)
    batch_dims = int(r.integers(0, min(nd - 1, len(ishape)) + 1)) if r.random() < 0.5 else 0
    ishape = pshape[:batch_dims] + ishape[batch_dims:]
    axis = int(r.integers(batch_dims, nd))
    if r.random() < 0.4:
        axis -= nd
    bd = batch_dims - len(ishape) if (batch_dims and r.random() < 0.3) else batch_dims
    hi = pshape[axis] + (1 if r.random() < 0.15 else 0)
    if batch_dims and not np.prod(pshape):
        # TF's gather checks no index of an empty result, collflow's batched form (a gather_nd) does
        ishape = ishape[:batch_dims] + (0,) + ishape[batch_dims + 1:]
    idx = r.integers(0, max(hi, 1), ishape).astype(_idt(r))
    return (f"gather{pshape} idx{idx.tolist()} axis={axis} batch_dims={bd}",
            lambda t, p, i: t.gather(p, i, axis=axis, batch_dims=bd), [_f(r, pshape), idx])


def g_gather_nd(r):
    pshape = _shape(r, 1, 4, 4)
    nd = len(pshape)
    batch_dims = int(r.integers(0, nd)) if r.random() < 0.4 else 0
    k = int(r.integers(1, nd - batch_dims + 1))
    outer = _shape(r, 0, 2, 3)
    if not np.prod(pshape):  # TF refuses any index into an empty params ("params is empty"), collflow not
        outer = (0,) + outer
    ishape = pshape[:batch_dims] + outer + (k,)
    hi = np.array(pshape[batch_dims:batch_dims + k])
    idx = (r.random(ishape) * hi).astype(_idt(r))
    if r.random() < 0.15 and idx.size:
        idx.reshape(-1)[0] = hi[0]  # out of range
    return (f"gather_nd{pshape} idx{idx.tolist()} batch_dims={batch_dims}",
            lambda t, p, i: t.gather_nd(p, i, batch_dims=batch_dims), [_f(r, pshape), idx])


def g_gather_mix(r):
    """Sparse gradients meeting: two gathers (int32 and int64 indices), a gather beside a slice,
    a gather of a gather, embedding_lookup over two shards, sparse_segment_sum beside a gather."""
    shape = (int(r.integers(1, 5)),) + _shape(r, 0, 2, 3)
    n = shape[0]
    i1 = r.integers(0, n, int(r.integers(0, 4))).astype(np.int64)
    i2 = r.integers(0, n, int(r.integers(0, 4))).astype(np.int32)
    seg = np.sort(r.integers(0, 3, i1.size)).astype(np.int32)
    strategy = ["mod", "div"][int(r.integers(0, 2))]
    fns = [lambda t, x: [t.gather(x, i1), t.gather(x, i2) * 2.0],
           lambda t, x: [t.gather(x, i2), x[1:]],
           lambda t, x: t.gather(t.gather(x, i1), [0] * 2 if i1.size else []),
           lambda t, x: t.nn.embedding_lookup([x, x * 3.0], i1 % (2 * n), partition_strategy=strategy),
           lambda t, x: [t.sparse.segment_sum(x, i1, seg), t.gather(x, i2)]]
    k = int(r.integers(0, len(fns)))
    # TF's gradient of a sparse segment sum over no indices is uninitialised memory
    return f"gather mix {k} {shape} {i1.tolist()} {i2.tolist()}", fns[k], [_f(r, shape)], k != 4 or bool(i1.size)


def _scatter_parts(r, repeat=True):
    shape = _shape(r, 1, 3, 4, zero=0.05)
    k = int(r.integers(1, len(shape) + 1))
    n = int(r.integers(0, 6))
    idx = (r.random((n, k)) * np.array(shape[:k])).astype(_idt(r))
    if not repeat:
        _, first = np.unique(idx, axis=0, return_index=True)
        idx = idx[np.sort(first)] if n else idx
    bad = r.random() < 0.1 and idx.size
    if bad:
        idx[0, 0] = shape[0] if r.random() < 0.5 else -1
    upd = _f(r, (idx.shape[0],) + shape[k:])
    return shape, idx, upd


def g_scatter_nd(r):
    shape, idx, upd = _scatter_parts(r)
    return (f"scatter_nd idx{idx.tolist()} shape{shape}",
            lambda t, i, u: t.scatter_nd(i, u, t.constant(list(shape), idx.dtype.name)), [idx, upd])


def g_tensor_scatter(r):
    op = ["tensor_scatter_nd_update", "tensor_scatter_nd_add", "tensor_scatter_nd_sub",
          "tensor_scatter_nd_max", "tensor_scatter_nd_min"][r.integers(0, 5)]
    shape, idx, upd = _scatter_parts(r, repeat=op != "tensor_scatter_nd_update")
    return (f"{op} shape{shape} idx{idx.tolist()}",
            lambda t, x, i, u: getattr(t, op)(x, i, u), [_f(r, shape), idx, upd])


# ------------------------------------------------------------------------------------ structure
def g_pad(r):
    shape = _shape(r, 1, 3, 4, zero=0.05)
    mode = ["CONSTANT", "REFLECT", "SYMMETRIC", "constant", "reflect", "symmetric"][r.integers(0, 6)]
    lim = {"REFLECT": 0, "SYMMETRIC": 1}.get(mode.upper(), 3)
    pads = [[int(r.integers(0, max(d - 1 + lim, 0) + 1 + (r.random() < 0.1))) for _ in range(2)] for d in shape]
    pads = np.array(pads).astype(_idt(r))
    cv = float(r.normal()) if mode.upper() == "CONSTANT" and r.random() < 0.5 else 0
    pl = pads.tolist()
    return (f"pad{shape} {pl} {mode} cv={cv}",
            lambda t, x: t.pad(x, t.constant(pl, pads.dtype.name), mode=mode, constant_values=cv), [_f(r, shape)])


def g_tile(r):
    shape = _shape(r, 1, 3, 3)
    mult = r.integers(0, 4, len(shape)).astype(_idt(r))
    ml = mult.tolist()
    return f"tile{shape} {ml}", lambda t, x: t.tile(x, t.constant(ml, mult.dtype.name)), [_f(r, shape)]


def g_concat_stack(r):
    shape = _shape(r, 1, 3, 3)
    nd = len(shape)
    axis = int(r.integers(-nd, nd))
    parts = []
    for _ in range(r.integers(1, 4)):
        s = list(shape)
        s[axis] = int(r.integers(0, 3))
        parts.append(_f(r, tuple(s)))
    which = r.integers(0, 3)
    if which == 0:
        return f"concat {[p.shape for p in parts]} axis={axis}", lambda t, *xs: t.concat(list(xs), axis), parts
    same = [_f(r, shape) for _ in parts]
    saxis = int(r.integers(-nd - 1, nd + 1))
    if which == 1:
        return f"stack {shape}x{len(same)} axis={saxis}", lambda t, *xs: t.stack(list(xs), axis=saxis), same
    uaxis = int(r.integers(-nd, nd))
    return (f"unstack {shape} axis={uaxis}",
            lambda t, x: t.unstack(x, axis=uaxis) if shape[uaxis] else t.stack(t.unstack(x, axis=uaxis, num=0)),
            [same[0]]) if shape[uaxis] else (f"stack {shape} axis={saxis}", lambda t, *xs: t.stack(list(xs), saxis), same)


def g_split(r):
    shape = _shape(r, 1, 3, 5, zero=0.05)
    nd = len(shape)
    axis = int(r.integers(-nd, nd))
    d = shape[axis]
    if r.random() < 0.4 and d:
        divs = [k for k in range(1, d + 1) if d % k == 0]
        nos = int(r.choice(divs))
        return f"split{shape} {nos} axis={axis}", lambda t, x: t.split(x, nos, axis=axis), [_f(r, shape)]
    n = int(r.integers(1, 4))
    cuts = np.sort(r.integers(0, d + 1, n - 1))
    sizes = np.diff(np.concatenate([[0], cuts, [d]])).tolist()
    if r.random() < 0.5:
        sizes[int(r.integers(0, n))] = -1
    if r.random() < 0.1:
        sizes[0] += 1  # do not add up: an error
    which = "split" if r.random() < 0.5 else "split_v"
    if which == "split":
        return f"split{shape} {sizes} axis={axis}", lambda t, x: t.split(x, sizes, axis=axis), [_f(r, shape)]
    return (f"split_v{shape} {sizes} axis={axis}",
            lambda t, x: t.split_v(x, sizes, axis=axis) if hasattr(t, "split_v") else t.split(x, sizes, axis=axis),
            [_f(r, shape)])


def g_reverse(r):
    shape = _shape(r, 1, 4, 4)
    nd = len(shape)
    axes = sorted(set(int(a) for a in r.integers(-nd, nd, r.integers(0, nd + 1))))
    axes = [a for i, a in enumerate(axes) if (a % nd) not in [b % nd for b in axes[:i]]]
    ax = np.array(axes, dtype=_idt(r))
    return f"reverse{shape} {axes}", lambda t, x: t.reverse(x, t.constant(axes, ax.dtype.name)), [_f(r, shape)]


def g_reverse_sequence(r):
    shape = _shape(r, 2, 4, 4, zero=0.05)
    nd = len(shape)
    seq_axis, batch_axis = [int(a) for a in r.choice(nd, 2, replace=False)]
    lens = r.integers(0, shape[seq_axis] + 1 + (r.random() < 0.1), shape[batch_axis]).astype(_idt(r))
    return (f"reverse_sequence{shape} seq={seq_axis} batch={batch_axis} lens={lens.tolist()}",
            lambda t, x, s: t.reverse_sequence(x, s, seq_axis=seq_axis, batch_axis=batch_axis),
            [_f(r, shape), lens])


def g_transpose(r):
    shape = _shape(r, 0, 4, 4)
    perm = r.permutation(len(shape)).tolist()
    conj = bool(r.random() < 0.5)
    x = (_f(r, shape) + 1j * _f(r, shape)).astype(np.complex64) if r.random() < 0.5 else _f(r, shape)
    p = None if r.random() < 0.2 else perm
    return f"transpose{shape} {p} conj={conj}", lambda t, v: t.transpose(v, p, conjugate=conj), [x]


def g_roll(r):
    shape = _shape(r, 1, 3, 5)
    nd = len(shape)
    k = int(r.integers(1, 4))
    shift = r.integers(-7, 8, k).astype(_idt(r))
    axis = r.integers(-nd, nd, k).astype(_idt(r))
    sl, al = shift.tolist(), axis.tolist()
    return (f"roll{shape} {sl} {al}",
            lambda t, x: t.roll(x, t.constant(sl, shift.dtype.name), t.constant(al, axis.dtype.name)), [_f(r, shape)])


def g_space_batch(r):
    m = int(r.integers(1, 3))
    block = r.integers(1, 4, m)
    rest = _shape(r, 0, 1, 3, zero=0)
    if r.random() < 0.5:  # space_to_batch_nd
        pads = r.integers(0, 3, (m, 2))
        spatial = [int(b * (-(-p.sum() // b) + r.integers(0, 3)) - p.sum()) for b, p in zip(block, pads)]
        if r.random() < 0.1:
            spatial[0] += 1  # not divisible: an error
        shape = (int(r.integers(1, 3)),) + tuple(spatial) + rest
        bl, pl = block.tolist(), pads.tolist()
        return (f"space_to_batch_nd{shape} {bl} {pl}",
                lambda t, x: t.space_to_batch_nd(x, bl, pl), [_f(r, shape)])
    crops = r.integers(0, 2, (m, 2))
    spatial = [int(r.integers(1, 3)) for _ in range(m)]
    batch = int(np.prod(block)) * int(r.integers(1, 3)) + (1 if r.random() < 0.1 else 0)
    shape = (batch,) + tuple(spatial) + rest
    bl, cl = block.tolist(), crops.tolist()
    return (f"batch_to_space_nd{shape} {bl} {cl}",
            lambda t, x: t.batch_to_space_nd(x, bl, cl), [_f(r, shape)])


def g_space_depth(r):
    b = int(r.integers(2, 4))
    if r.random() < 0.5:
        shape = (int(r.integers(1, 3)), b * int(r.integers(1, 3)), b * int(r.integers(1, 3)), int(r.integers(1, 3)))
        if r.random() < 0.1:
            shape = (shape[0], shape[1] + 1) + shape[2:]
        return f"space_to_depth{shape} {b}", lambda t, x: t.space_to_depth(x, b), [_f(r, shape)]
    shape = (int(r.integers(1, 3)), int(r.integers(1, 3)), int(r.integers(1, 3)), b * b * int(r.integers(1, 3)))
    if r.random() < 0.1:
        shape = shape[:3] + (shape[3] + 1,)
    return f"depth_to_space{shape} {b}", lambda t, x: t.depth_to_space(x, b), [_f(r, shape)]


def g_one_hot(r):
    ishape = _shape(r, 0, 2, 3)
    depth = int(r.integers(0, 5))
    idx = r.integers(-2, depth + 2, ishape).astype([np.int32, np.int64, np.uint8][r.integers(0, 3)]
                                                   if True else np.int32)
    if idx.dtype == np.uint8:
        idx = np.abs(idx).astype(np.uint8)
    axis = int(r.integers(-1, len(ishape) + 1))
    on, off = (float(r.normal()), float(r.normal())) if r.random() < 0.5 else (None, None)
    dt = [None, "float32", "int32", "float64"][r.integers(0, 4)]
    if dt == "int32" and on is not None:
        on, off = int(on * 3), int(off * 3)
    return (f"one_hot idx{idx.tolist()} depth={depth} axis={axis} on={on} off={off} dtype={dt}",
            lambda t, i: t.one_hot(i, depth, on_value=on, off_value=off, axis=axis,
                                   dtype=None if dt is None else getattr(t, dt)), [idx])


# -------------------------------------------------------------------------------------- segments
def g_segment(r):
    op = ["sum", "mean", "max", "min", "prod"][r.integers(0, 5)]
    n = int(r.integers(0, 7))
    rest = _shape(r, 0, 2, 3)
    ids = np.sort(r.integers(0, 4, n)).astype(_idt(r))
    if r.random() < 0.1 and n > 1:
        ids = ids[::-1].copy()  # not sorted: an error on CPU
    return (f"segment_{op} ids{ids.tolist()} rest{rest}",
            lambda t, x, i: getattr(t.math, f"segment_{op}")(x, i), [_f(r, (n,) + rest), ids])


def g_unsorted_segment(r):
    op = ["sum", "mean", "max", "min", "prod", "sqrt_n"][r.integers(0, 6)]
    ishape = _shape(r, 1, 2, 4)
    rest = _shape(r, 0, 2, 3)
    ns = int(r.integers(0, 6))
    # TF's sum/max/min/prod check no id when the data is empty, collflow does: bad ids only
    # with data
    bad = r.random() < 0.1 and np.prod(ishape + rest) > 0
    ids = r.integers(-1, ns + (1 if bad else 0), ishape).astype(_idt(r))
    return (f"unsorted_segment_{op} ids{ids.tolist()} n={ns} rest{rest}",
            lambda t, x, i: getattr(t.math, f"unsorted_segment_{op}")(x, i, ns),
            [_f(r, ishape + rest), ids])


def g_sparse_segment(r):
    op = ["sum", "mean", "sqrt_n"][r.integers(0, 3)]
    rows = int(r.integers(1, 5))
    rest = _shape(r, 0, 2, 3)
    n = int(r.integers(0, 6))
    # an index past the rows: TF's kernel refuses it even for empty rows, collflow's gather of
    # an empty result does not look: only with data
    idx = r.integers(0, rows + (1 if r.random() < 0.1 and np.prod(rest) else 0), n).astype(_idt(r))
    seg = np.sort(r.integers(0, 4, n)).astype(np.int32 if r.random() < 0.5 else idx.dtype)
    ns = None if r.random() < 0.5 else int((seg.max() + 1 if n else 0) + r.integers(0, 3))
    return (f"sparse_segment_{op} idx{idx.tolist()} seg{seg.tolist()} ns={ns}",
            lambda t, x, i, s: getattr(t.sparse, f"segment_{op}")(x, i, s, num_segments=ns),
            [_f(r, (rows,) + rest), idx, seg], bool(n))  # TF's gradient of no segments is garbage


def g_partition_stitch(r):
    n = int(r.integers(0, 6))
    rest = _shape(r, 0, 2, 3)
    np_ = int(r.integers(1, 4))
    parts = r.integers(0, np_ + (1 if r.random() < 0.1 else 0), n).astype(np.int32)
    if r.random() < 0.5:
        return (f"dynamic_partition parts{parts.tolist()} n={np_} rest{rest}",
                lambda t, x, p: t.dynamic_partition(x, p, np_), [_f(r, (n,) + rest), parts])
    k = int(r.integers(1, 3))
    idxs = [r.integers(0, 6, int(r.integers(0, 4))).astype(np.int32) for _ in range(k)]
    datas = [_f(r, i.shape + rest) for i in idxs]
    allidx = np.concatenate(idxs) if idxs else np.zeros(0, np.int32)
    if allidx.size and len(set(allidx.tolist())) != allidx.size:
        pass  # duplicate indices: the later one wins in both
    if allidx.size and set(range(allidx.max() + 1)) - set(allidx.tolist()):
        # gaps are left uninitialised in TF: fill them
        miss = np.array(sorted(set(range(allidx.max() + 1)) - set(allidx.tolist())), np.int32)
        idxs.append(miss)
        datas.append(_f(r, miss.shape + rest))
    k = len(idxs)
    return (f"dynamic_stitch {[i.tolist() for i in idxs]} rest{rest}",
            lambda t, *a: t.dynamic_stitch(list(a[:k]), list(a[k:])), idxs + datas)


def g_boolean_mask(r):
    shape = _shape(r, 1, 3, 4)
    nd = len(shape)
    axis = int(r.integers(0, nd))
    k = int(r.integers(1, nd - axis + 1))
    mask = r.random(shape[axis:axis + k]) < 0.5
    ax = axis if r.random() < 0.5 or axis == 0 else axis - nd if False else axis
    return (f"boolean_mask{shape} mask{mask.tolist()} axis={ax}",
            lambda t, x, m: t.boolean_mask(x, m, axis=ax), [_f(r, shape), mask])


def g_where(r):
    if r.random() < 0.3:
        shape = _shape(r, 0, 3, 3)
        c = r.random(shape) < 0.5
        return f"where(c){shape}", lambda t, m: t.where(m), [c]
    s1, s2, s3 = _shape(r, 0, 2, 3), _shape(r, 0, 2, 3), _shape(r, 0, 2, 3)
    s2 = tuple(1 if (r.random() < 0.5) else d for d in s2)
    v2 = r.random() < 0.7
    cs = s1
    if not v2:  # TF1's where: x and y of one shape, the condition that shape or its first dimension
        s2 = s3 = s1
        cs = s1 if r.random() < 0.6 else s1[:1]
    c = r.random(cs) < 0.5
    return (f"where{'_v2' if v2 else ''} c{cs} x{s2} y{s3}",
            lambda t, m, x, y: (t.where_v2 if v2 else t.where)(m, x, y), [c, _f(r, s2), _f(r, s3)])


def g_sequence_mask(r):
    ishape = _shape(r, 0, 2, 3)
    lens = r.integers(-1 if r.random() < 0.1 else 0, 5, ishape).astype(_idt(r))
    ml = None if r.random() < 0.4 else int(r.integers(0, 6))
    dt = [None, "float32", "int32"][r.integers(0, 3)]
    return (f"sequence_mask {lens.tolist()} maxlen={ml} dtype={dt}",
            lambda t, l: t.sequence_mask(l, ml, dtype=t.bool if dt is None else getattr(t, dt)), [lens])


def g_band_part(r):
    shape = _shape(r, 2, 4, 4)
    lo, hi = int(r.integers(-1, 4)), int(r.integers(-1, 4))
    return (f"matrix_band_part{shape} {lo} {hi}",
            lambda t, x: t.matrix_band_part(x, t.constant(lo, t.int64), t.constant(hi, t.int64)), [_f(r, shape)])


def g_top_k(r):
    shape = _shape(r, 1, 3, 5)
    k = int(r.integers(0, shape[-1] + 1 + (r.random() < 0.1)))
    x = r.integers(-3, 3, shape).astype(np.float32)  # ties
    srt = bool(r.random() < 0.7)
    grad = bool(k and x.size)  # TF's TopKV2 gradient fails on empty outputs
    if srt:
        return f"top_k{x.tolist()} k={k}", lambda t, v: list(t.nn.top_k(v, k, sorted=srt)), [x], grad
    return (f"top_k{x.tolist()} k={k} unsorted", lambda t, v: t.sort(t.nn.top_k(v, k, sorted=False).values), [x],
            grad)


def g_in_top_k(r):
    b, c = int(r.integers(0, 4)), int(r.integers(1, 5))
    x = r.integers(-2, 2, (b, c)).astype(np.float32)
    if r.random() < 0.2 and x.size:
        x.reshape(-1)[0] = np.inf if r.random() < 0.5 else np.nan
    tgt = r.integers(0, c + (1 if r.random() < 0.15 else 0), b).astype(_idt(r))
    k = int(r.integers(0, c + 2))
    return f"in_top_k{x.tolist()} {tgt.tolist()} k={k}", lambda t, p, y: t.nn.in_top_k(p, y, k), [x, tgt]


def g_search(r):
    which = r.integers(0, 3)
    if which == 0:
        b = int(r.integers(1, 3))
        seq = np.sort(r.integers(-3, 4, (b, int(r.integers(0, 5)))), axis=-1).astype(np.float32)
        vals = r.integers(-4, 5, (b, int(r.integers(0, 5)))).astype(np.float32)
        side = ["left", "right"][r.integers(0, 2)]
        ot = ["int32", "int64"][r.integers(0, 2)]
        return (f"searchsorted {seq.tolist()} {vals.tolist()} {side} {ot}",
                lambda t, s, v: t.searchsorted(s, v, side=side, out_type=getattr(t, ot)), [seq, vals])
    if which == 1:
        x = r.normal(0, 3, int(r.integers(0, 10))).astype(np.float32)
        lo, hi = sorted(r.normal(0, 2, 2).tolist())
        nb = int(r.integers(1, 6))
        return (f"histogram_fixed_width {x.tolist()} [{lo},{hi}] {nb}",
                lambda t, v: t.histogram_fixed_width(v, [lo, hi], nbins=nb), [x])
    arr = r.integers(0, 6, _shape(r, 1, 2, 5)).astype(np.int32)
    w = r.random(arr.shape).astype(np.float32) if r.random() < 0.5 else None
    ml = None if r.random() < 0.5 else int(r.integers(0, 8))
    mn = None if r.random() < 0.5 else int(r.integers(0, 8))
    if w is None:
        return (f"bincount {arr.tolist()} minlength={ml} maxlength={mn}",
                lambda t, a: t.math.bincount(a, minlength=ml, maxlength=mn), [arr])
    return (f"bincount {arr.tolist()} w minlength={ml} maxlength={mn}",
            lambda t, a, ww: t.math.bincount(a, weights=ww, minlength=ml, maxlength=mn), [arr, w], False)


def g_unique_setdiff(r):
    x = r.integers(-3, 4, int(r.integers(0, 9))).astype(_idt(r))
    if r.random() < 0.5:
        ot = ["int32", "int64"][r.integers(0, 2)]
        return (f"unique_with_counts {x.tolist()} {ot}",
                lambda t, v: list(t.unique_with_counts(v, out_idx=getattr(t, ot))), [x])
    y = r.integers(-3, 4, int(r.integers(0, 6))).astype(x.dtype)
    return f"setdiff1d {x.tolist()} {y.tolist()}", lambda t, a, b: list(t.setdiff1d(a, b)), [x, y]


def g_reshape_dims(r):
    which = r.integers(0, 4)
    shape = _shape(r, 0, 3, 4)
    x = _f(r, shape)
    nd = len(shape)
    if which == 0:
        target = list(r.permutation(list(shape) + [1] * int(r.integers(0, 2))))
        if target and 0 not in shape and r.random() < 0.6:
            target[int(r.integers(0, len(target)))] = -1
        if r.random() < 0.1:
            target = target + [2]
        return f"reshape{shape} {target}", lambda t, v: t.reshape(v, target), [x]
    if which == 1:
        ax = int(r.integers(-nd - 1, nd + 1 + (r.random() < 0.1)))
        return f"expand_dims{shape} {ax}", lambda t, v: t.expand_dims(v, ax), [x]
    if which == 2:
        s = tuple(1 if r.random() < 0.4 else d for d in shape)
        x = _f(r, s)
        ones = [i for i, d in enumerate(s) if d == 1]
        ax = None if r.random() < 0.3 else [i - (len(s) if r.random() < 0.5 else 0)
                                            for i in ones if r.random() < 0.6]
        if r.random() < 0.1 and s and s[0] != 1:
            ax = [0]
        return f"squeeze{s} {ax}", lambda t, v: t.squeeze(v, ax), [x]
    target = tuple(int(r.integers(1, 3)) for _ in range(int(r.integers(0, 2)))) + tuple(
        (d if r.random() < 0.5 else (int(r.integers(1, 3)) if d == 1 else d)) for d in shape)
    return f"broadcast_to{shape} {target}", lambda t, v: t.broadcast_to(v, list(target)), [x]


def g_scan(r):
    op = ["cumsum", "cumprod"][r.integers(0, 2)]
    shape = _shape(r, 1, 3, 4)
    nd = len(shape)
    axis = int(r.integers(-nd, nd))
    ex, rev = bool(r.random() < 0.5), bool(r.random() < 0.5)
    x = _f(r, shape) if r.random() < 0.8 else r.integers(-3, 4, shape).astype(_idt(r))
    grad = True
    if op == "cumprod" and x.dtype.kind == "f" and x.size and r.random() < 0.3:
        # TF 2.x's gradient at a zero is div_no_nan's 0, TF 1.15's (and collflow's) out / 0
        x.reshape(-1)[0], grad = 0.0, False
    return (f"{op}{x.tolist()} axis={axis} exclusive={ex} reverse={rev}",
            lambda t, v: getattr(t.math, op)(v, axis=t.constant(axis, t.int64), exclusive=ex, reverse=rev), [x], grad)


def g_sort(r):
    shape = _shape(r, 1, 3, 5)
    nd = len(shape)
    axis = int(r.integers(-nd, nd))
    x = r.integers(-2, 3, shape).astype([np.float32, np.int32, np.int64, np.float64][r.integers(0, 4)])
    if x.dtype.kind == "f" and x.size and r.random() < 0.3:  # infinities and -0.0 among the ties
        x.reshape(-1)[r.integers(0, x.size, 2)] = r.choice([np.inf, -np.inf, -0.0], 2)
    d = ["ASCENDING", "DESCENDING"][r.integers(0, 2)]
    if r.random() < 0.5:
        return (f"sort{x.tolist()} axis={axis} {d}", lambda t, v: t.sort(v, axis=axis, direction=d), [x],
                bool(x.size))  # TF's TopKV2 gradient fails on empty outputs
    return (f"argsort{x.tolist()} axis={axis} {d} stable",
            lambda t, v: t.argsort(v, axis=axis, direction=d, stable=True), [x])


def g_edit_distance(r):
    def sp(b, maxlen):
        idx, val = [], []
        for i in range(b):
            for j in range(int(r.integers(0, maxlen + 1))):
                idx.append([i, 0, j])
                val.append(int(r.integers(0, 3)))
        return (np.array(idx, np.int64).reshape(-1, 3), np.array(val, np.int64), [b, 1, maxlen])
    b = int(r.integers(1, 3))
    h, tr = sp(b, 4), sp(b, 4)
    norm = bool(r.random() < 0.5)

    def fn(t, hi, hv, ti, tv):
        return t.edit_distance(t.SparseTensor(hi, hv, h[2]), t.SparseTensor(ti, tv, tr[2]), normalize=norm)
    return f"edit_distance h{h[0].tolist()},{h[1].tolist()} t{tr[0].tolist()},{tr[1].tolist()} {norm}", fn, [
        h[0], h[1], tr[0], tr[1]]


def g_dtypes(r):
    """The structural ops on other dtypes: integers, half, complex, bool."""
    dt = [np.int32, np.int64, np.float16, np.float64, np.complex64, np.complex128, np.bool_, np.uint8,
          np.int8][r.integers(0, 9)]
    shape = _shape(r, 1, 3, 4)
    v = r.normal(0, 3, shape)
    x = (v + 1j * r.normal(0, 3, shape)).astype(dt) if np.dtype(dt).kind == "c" else \
        (v > 0) if dt == np.bool_ else np.abs(v).astype(dt) if dt == np.uint8 else v.astype(dt)
    nd = len(shape)
    ax = int(r.integers(-nd, nd))
    ops = {
        "gather": lambda t, a: t.gather(a, [0, 0] if shape[ax] else [], axis=ax),
        "concat": lambda t, a: t.concat([a, a], ax),
        "stack": lambda t, a: t.stack([a, a], ax),
        "tile": lambda t, a: t.tile(a, [2] * nd),
        "pad": lambda t, a: t.pad(a, [[1, 0]] * nd),
        "reverse": lambda t, a: t.reverse(a, [ax]),
        "transpose": lambda t, a: t.transpose(a),
        "roll": lambda t, a: t.roll(a, 1, ax),
        "slice": lambda t, a: a[::-1, ..., :2],
        "reshape": lambda t, a: t.reshape(a, [-1]) if 0 not in shape else t.reshape(a, [0]),
        "where": lambda t, a: t.where_v2(t.ones_like(a, dtype=t.bool), a, a),
        "boolean_mask": lambda t, a: t.boolean_mask(a, np.arange(shape[0]) % 2 == 0),
        "expand_dims": lambda t, a: t.expand_dims(a, ax),
        "broadcast_to": lambda t, a: t.broadcast_to(a, (2,) + shape),
        "split": lambda t, a: t.split(a, [1, shape[ax] - 1], axis=ax) if shape[ax] else t.split(a, [0], axis=ax),
        "reverse_sequence": lambda t, a: t.reverse_sequence(a, [1] * shape[0], seq_axis=nd - 1, batch_axis=0)
        if nd > 1 else t.identity(a),
        "dynamic_partition": lambda t, a: t.dynamic_partition(a, np.arange(shape[0]) % 2, 2),
        "unstack": lambda t, a: t.stack(t.unstack(a, num=shape[0])) if shape[0] else t.identity(a),
    }
    name = sorted(ops)[r.integers(0, len(ops))]
    return f"{name} {np.dtype(dt).name}{shape} axis={ax}", ops[name], [x], np.dtype(dt).kind in "fc"


GENS = {k[2:]: v for k, v in list(globals().items()) if k.startswith("g_")}


def check(name, seed, n):
    r = np.random.default_rng(seed)
    bad = []
    for _ in range(n):
        label, fn, inputs, *grad = GENS[name](r)
        d = diff(tf, cf, fn, inputs, grad=grad[0] if grad else True)
        if d is not None:
            bad.append(f"{label}: {d}")
    return bad


@pytest.mark.parametrize("name", sorted(GENS))
def test_index_fuzz(name):
    bad = check(name, zlib.crc32(name.encode()), CASES)
    assert not bad, "\n".join(bad)


# bad inputs: TF refuses each (at build or run time; the few it runs say so) and collflow must
# refuse with a clear error
X34 = np.arange(12, dtype=np.float32).reshape(3, 4)
I32 = np.int32
BAD = [
    ("gather index -1", lambda t, x: t.gather(x, [0, -1]), [X34]),
    ("gather index 3", lambda t, x: t.gather(x, np.array([3], np.int64)), [X34]),
    ("gather axis 2", lambda t, x: t.gather(x, [0], axis=2), [X34]),
    ("gather axis 0 drops batch_dims (TF runs it)", lambda t, x: t.gather(x, [[0], [1], [2]], axis=0, batch_dims=1), [X34]),
    ("gather_nd index depth 3", lambda t, x: t.gather_nd(x, [[0, 0, 0]]), [X34]),
    ("gather_nd index 4", lambda t, x: t.gather_nd(x, [[0, 4]]), [X34]),
    ("gather_nd batch_dims 2", lambda t, x: t.gather_nd(x, [[0], [1], [2]], batch_dims=2), [X34]),
    ("scatter_nd index 5", lambda t, u: t.scatter_nd([[5]], u, [4]), [np.ones(1, np.float32)]),
    ("scatter_nd updates shape", lambda t, u: t.scatter_nd([[1]], u, [4]), [np.ones(2, np.float32)]),
    ("tensor_scatter_nd_add index -1", lambda t, x: t.tensor_scatter_nd_add(x, [[-1]], np.ones((1, 4), np.float32)),
     [X34]),
    ("tensor_scatter_nd_update index 3", lambda t, x: t.tensor_scatter_nd_update(x, [[3, 0]], [1.0]), [X34]),
    ("slice past the end", lambda t, x: t.slice(x, [1, 1], [3, 1]), [X34]),
    ("slice negative begin", lambda t, x: t.slice(x, [-1, 0], [1, 1]), [X34]),
    ("strided_slice shrink out of range", lambda t, x: x[3], [X34]),
    ("strided_slice shrink -5", lambda t, x: x[:, -5], [X34]),
    ("strided_slice two ellipses", lambda t, x: t.strided_slice(x, [0, 0], [1, 1], [1, 1], ellipsis_mask=3), [X34]),
    ("strided_slice stride 0", lambda t, x: x[::0], [X34]),
    ("reshape 12 to 5", lambda t, x: t.reshape(x, [5, -1]), [X34]),
    ("reshape two -1", lambda t, x: t.reshape(x, [-1, -1]), [X34]),
    ("expand_dims axis 3", lambda t, x: t.expand_dims(x, 3), [X34]),
    ("squeeze a 4", lambda t, x: t.squeeze(x, [1]), [X34]),
    ("transpose bad perm", lambda t, x: t.transpose(x, [0, 0]), [X34]),
    ("transpose short perm", lambda t, x: t.transpose(x, [0]), [X34]),
    ("concat shapes", lambda t, x: t.concat([x, x[:, :2]], 0), [X34]),
    ("concat axis 2", lambda t, x: t.concat([x, x], 2), [X34]),
    ("stack shapes", lambda t, x: t.stack([x, x[:2]]), [X34]),
    ("unstack num", lambda t, x: t.unstack(x, num=2), [X34]),
    ("split 3 ways of 4", lambda t, x: t.split(x, 3, axis=1), [X34]),
    ("split sizes sum", lambda t, x: t.split(x, [1, 2], axis=1), [X34]),
    ("split two -1", lambda t, x: t.split(x, [-1, -1], axis=1), [X34]),
    ("tile rank", lambda t, x: t.tile(x, [2]), [X34]),
    ("tile negative", lambda t, x: t.tile(x, [1, -1]), [X34]),
    ("pad negative", lambda t, x: t.pad(x, [[-1, 0], [0, 0]]), [X34]),
    ("pad reflect too wide", lambda t, x: t.pad(x, [[3, 0], [0, 0]], mode="REFLECT"), [X34]),
    ("pad symmetric too wide", lambda t, x: t.pad(x, [[4, 0], [0, 0]], mode="SYMMETRIC"), [X34]),
    ("pad rank", lambda t, x: t.pad(x, [[1, 1]]), [X34]),
    ("pad mode", lambda t, x: t.pad(x, [[1, 1], [0, 0]], mode="WRAP"), [X34]),
    ("reverse axis 2", lambda t, x: t.reverse(x, [2]), [X34]),
    ("reverse axis twice", lambda t, x: t.reverse(x, [1, -1]), [X34]),
    ("reverse_sequence too long", lambda t, x: t.reverse_sequence(x, [5, 1, 1], seq_axis=1, batch_axis=0), [X34]),
    ("reverse_sequence lengths", lambda t, x: t.reverse_sequence(x, [1, 1], seq_axis=1, batch_axis=0), [X34]),
    ("reverse_sequence same axes", lambda t, x: t.reverse_sequence(x, [1, 1, 1], seq_axis=0, batch_axis=0), [X34]),
    ("roll axis 2", lambda t, x: t.roll(x, 1, 2), [X34]),
    ("roll shift/axis lengths", lambda t, x: t.roll(x, [1, 2], [0]), [X34]),
    ("space_to_depth not divisible", lambda t, x: t.space_to_depth(t.reshape(x, [1, 3, 4, 1]), 2), [X34]),
    ("depth_to_space not divisible", lambda t, x: t.depth_to_space(t.reshape(x, [1, 1, 4, 3]), 2), [X34]),
    ("batch_to_space_nd batch", lambda t, x: t.batch_to_space_nd(t.reshape(x, [3, 4, 1]), [2], [[0, 0]]), [X34]),
    ("space_to_batch_nd padding", lambda t, x: t.space_to_batch_nd(t.reshape(x, [1, 12, 1]), [5], [[0, 0]]), [X34]),
    ("batch_to_space_nd crops", lambda t, x: t.batch_to_space_nd(t.reshape(x, [2, 6, 1]), [2], [[7, 7]]), [X34]),
    ("one_hot axis -2", lambda t: t.one_hot([1, 2], 3, axis=-2), []),
    ("segment_sum unsorted", lambda t, x: t.math.segment_sum(x, [1, 0, 0]), [X34]),
    ("segment_sum negative", lambda t, x: t.math.segment_sum(x, [-1, 0, 0]), [X34]),
    ("segment_sum ids length", lambda t, x: t.math.segment_sum(x, [0, 0]), [X34]),
    ("unsorted_segment_sum id 3", lambda t, x: t.math.unsorted_segment_sum(x, [0, 3, 1], 3), [X34]),
    ("unsorted_segment_max ids shape", lambda t, x: t.math.unsorted_segment_max(x, [0, 1], 3), [X34]),
    ("sparse_segment_sum index 3", lambda t, x: t.sparse.segment_sum(x, [0, 3], [0, 1]), [X34]),
    ("sparse_segment_mean unsorted ids", lambda t, x: t.sparse.segment_mean(x, [0, 1], [1, 0]), [X34]),
    ("sparse_segment_sum num_segments small", lambda t, x: t.sparse.segment_sum(x, [0, 1], [0, 4],
                                                                                 num_segments=3), [X34]),
    ("dynamic_partition id 2", lambda t, x: t.dynamic_partition(x, [0, 2, 1], 2), [X34]),
    ("dynamic_partition shape", lambda t, x: t.dynamic_partition(x, [0, 1], 2), [X34]),
    ("dynamic_stitch data shape", lambda t, x: t.dynamic_stitch([[0, 1]], [x]), [X34]),
    ("boolean_mask shape", lambda t, x: t.boolean_mask(x, [True, False]), [X34]),
    ("boolean_mask scalar", lambda t, x: t.boolean_mask(x, True), [X34]),
    ("where shapes", lambda t, x: t.where_v2([True, False], x, x), [X34]),
    ("where v1 shapes", lambda t, x: t.where([True, False], x, x), [X34]),
    ("sequence_mask float lengths (TF runs it)", lambda t, x: t.sequence_mask(x), [X34]),
    ("matrix_band_part vector", lambda t, x: t.matrix_band_part(x[0], 0, 0), [X34]),
    ("top_k k too big", lambda t, x: t.nn.top_k(x, 5).values, [X34]),
    ("top_k k negative", lambda t, x: t.nn.top_k(x, -1).values, [X34]),
    ("top_k scalar", lambda t, x: t.nn.top_k(x[0, 0], 1).values, [X34]),
    ("in_top_k target out of range", lambda t, x: t.nn.in_top_k(x, [0, 4, 1], 1), [X34]),
    ("in_top_k targets length", lambda t, x: t.nn.in_top_k(x, [0, 1], 1), [X34]),
    ("searchsorted batch", lambda t, x: t.searchsorted(x, x[:2]), [X34]),
    ("histogram range", lambda t, x: t.histogram_fixed_width(x, [2.0, 1.0]), [X34]),
    ("histogram nbins", lambda t, x: t.histogram_fixed_width(x, [0.0, 1.0], nbins=0), [X34]),
    ("bincount negative", lambda t: t.math.bincount(np.array([1, -1], np.int32)), []),
    ("unique 2-D", lambda t, x: t.unique_with_counts(x)[0], [X34]),
    ("setdiff1d 2-D", lambda t, x: t.setdiff1d(x, x[0])[0], [X34]),
    ("broadcast_to incompatible", lambda t, x: t.broadcast_to(x, [3, 5]), [X34]),
    ("broadcast_to fewer dims", lambda t, x: t.broadcast_to(x, [4]), [X34]),
    ("cumsum axis 2", lambda t, x: t.math.cumsum(x, axis=2), [X34]),
    ("sort axis 2", lambda t, x: t.sort(x, axis=2), [X34]),
    ("argsort direction", lambda t, x: t.argsort(x, direction="UP"), [X34]),
    ("edit_distance ranks", lambda t: t.edit_distance(t.SparseTensor([[0, 0]], [1], [1, 1]),
                                                     t.SparseTensor([[0, 0, 0]], [1], [1, 1, 1])), []),
]


@pytest.mark.parametrize("case", BAD, ids=[c[0] for c in BAD])
def test_bad_input(case):
    label, fn, inputs = case
    d = diff(tf, cf, fn, inputs, grad=False)
    assert d is None, f"{label}: {d}"
