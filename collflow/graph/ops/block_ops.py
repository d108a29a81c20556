"""Spatial blocks moved to and from the batch, and image patches, as TF 1.15 defines them:
tf.space_to_batch_nd / batch_to_space_nd (and TF1's 2-D space_to_batch / batch_to_space) and
tf.extract_image_patches.  Composed from pad, reshape, transpose and strided slices, so the
gradients come from the parts.  Block shapes, paddings, crops and kernel sizes must be known
when the graph is built, and so must the spatial sizes of the input.
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from ...errors import InvalidArgumentError
from .. import graph as _g
from . import array_ops as _a
from .array_util import _const_value
from .constant_op import constant

__all__ = ["space_to_batch_nd", "batch_to_space_nd", "space_to_batch", "batch_to_space", "extract_image_patches",
           "required_space_to_batch_paddings", "with_space_to_batch"]


def _static(v: Any, what: str, fn: str) -> np.ndarray:
    if isinstance(v, _g.Tensor):
        c = _const_value(v)
        if c is None:
            raise InvalidArgumentError(f"{fn}: {what} must be known when the graph is built (a list or a constant)")
        v = c
    return np.asarray(v, dtype=np.int64)


def _spatial(x: _g.Tensor, m: int, fn: str) -> List[int]:
    if x.shape.rank is None or x.shape.rank < m + 1:
        raise InvalidArgumentError(f"{fn}: the input needs a batch and {m} spatial dimensions, got shape {x.shape}")
    dims = x.shape.dims[1:m + 1]
    if any(d is None for d in dims):
        raise InvalidArgumentError(f"{fn}: the spatial sizes must be known when the graph is built, got shape "
                                   f"{x.shape}")
    return [int(d) for d in dims]


def _blocks(block_shape: Any, pairs: Any, what: str, fn: str) -> Any:
    """(block sizes [M], per-dimension (start, end) pairs [M, 2]), checked: blocks positive,
    pairs non-negative, one pair per block dimension."""
    block = _static(block_shape, "block_shape", fn).reshape(-1)
    pair = _static(pairs, what, fn).reshape(-1, 2)
    if pair.shape[0] != len(block) or np.any(block < 1) or np.any(pair < 0):
        raise InvalidArgumentError(f"{fn}: block_shape {block.tolist()} and {what} {pair.tolist()} must be positive "
                                   f"and non-negative, one pair of {what} per block dimension")
    return block, pair


def _lead(d: Optional[int]) -> int:
    return -1 if d is None else int(d)


def space_to_batch_nd(input: Any, block_shape: Any, paddings: Any, name: Optional[str] = None) -> _g.Tensor:  # noqa: A002
    """Zero-pads the M spatial dimensions, splits each into blocks of block_shape and moves
    the offsets within a block into the batch: [b, s1.., rest] -> [b * prod(block), (s_i + pads) / block_i.., rest]."""
    x = _g.convert_to_tensor(input)
    block, pads = _blocks(block_shape, paddings, "paddings", "space_to_batch_nd")
    m = len(block)
    sizes = _spatial(x, m, "space_to_batch_nd")
    padded = [s + int(p[0]) + int(p[1]) for s, p in zip(sizes, pads)]
    for k, (p, b) in enumerate(zip(padded, block)):
        if p % b:
            raise InvalidArgumentError(f"space_to_batch_nd: padded spatial dimension {k} ({p}) is not divisible by "
                                       f"block_shape[{k}] = {b}")
    rest = [_lead(d) for d in x.shape.dims[m + 1:]]
    with x.graph.as_default(), x.graph.name_scope(name or "SpaceToBatchND"):
        y = _a.pad(x, [[0, 0]] + pads.tolist() + [[0, 0]] * len(rest)) if pads.any() else x
        # the batch spelled out where known: -1 is ambiguous when another dimension is 0
        b0 = _lead(x.shape.dims[0])
        split: List[int] = [b0]
        for p, b in zip(padded, block):
            split += [p // int(b), int(b)]
        y = _a.reshape(y, split + rest)
        perm = [2 + 2 * k for k in range(m)] + [0] + [1 + 2 * k for k in range(m)] + \
            [1 + 2 * m + k for k in range(len(rest))]
        y = _a.transpose(y, perm)
        nb = b0 * int(np.prod(block)) if b0 >= 0 else -1
        return _a.reshape(y, [nb] + [p // int(b) for p, b in zip(padded, block)] + rest)


def batch_to_space_nd(input: Any, block_shape: Any, crops: Any, name: Optional[str] = None) -> _g.Tensor:  # noqa: A002
    """The inverse of space_to_batch_nd: blocks of the batch back into space, then `crops`
    removed from the start and end of each spatial dimension."""
    x = _g.convert_to_tensor(input)
    block, crop = _blocks(block_shape, crops, "crops", "batch_to_space_nd")
    m = len(block)
    sizes = _spatial(x, m, "batch_to_space_nd")
    nb = int(np.prod(block))
    if x.shape.dims[0] is not None and x.shape.dims[0] % nb:
        raise InvalidArgumentError(f"batch_to_space_nd: the batch {x.shape.dims[0]} is not divisible by the product "
                                   f"of block_shape ({nb})")
    full = [s * int(b) for s, b in zip(sizes, block)]
    for k, (f, c) in enumerate(zip(full, crop)):
        if c[0] + c[1] > f:
            raise InvalidArgumentError(f"batch_to_space_nd: crops {c.tolist()} exceed spatial dimension {k} ({f})")
    rest = [_lead(d) for d in x.shape.dims[m + 1:]]
    with x.graph.as_default(), x.graph.name_scope(name or "BatchToSpaceND"):
        # the batch spelled out where known: -1 is ambiguous when another dimension is 0
        b0 = x.shape.dims[0] // nb if x.shape.dims[0] is not None else -1
        y = _a.reshape(x, [int(b) for b in block] + [b0] + sizes + rest)
        perm = [m]
        for k in range(m):
            perm += [m + 1 + k, k]
        perm += [2 * m + 1 + k for k in range(len(rest))]
        y = _a.reshape(_a.transpose(y, perm), [b0] + full + rest)
        if crop.any():
            key = [slice(None)] + [slice(int(c[0]), f - int(c[1])) for c, f in zip(crop, full)]
            y = y[tuple(key)]
        return y


def space_to_batch(input: Any, paddings: Any, block_size: int, name: Optional[str] = None) -> _g.Tensor:  # noqa: A002
    """TF1's 2-D form: space_to_batch_nd with a square block over height and width."""
    return space_to_batch_nd(input, [int(block_size)] * 2, paddings, name=name or "SpaceToBatch")


def batch_to_space(input: Any, crops: Any, block_size: int, name: Optional[str] = None) -> _g.Tensor:  # noqa: A002
    """TF1's 2-D form: batch_to_space_nd with a square block over height and width."""
    return batch_to_space_nd(input, [int(block_size)] * 2, crops, name=name or "BatchToSpace")


def _four(v: Sequence[int], what: str) -> List[int]:
    v = [int(a) for a in v]
    if len(v) != 4 or v[0] != 1 or v[3] != 1:
        raise InvalidArgumentError(f"extract_image_patches: {what} must be [1, rows, cols, 1], got {v}")
    return v


def extract_image_patches(images: Any, ksizes: Sequence[int], strides: Sequence[int], rates: Sequence[int],
                          padding: str, name: Optional[str] = None) -> _g.Tensor:
    """[b, rows, cols, depth] -> [b, out_rows, out_cols, kr * kc * depth]: each output pixel the
    ksizes patch (dilated by rates) at its stride, flattened row, column, depth; padding
    "VALID" or "SAME" (TF's convolution padding)."""
    x = _g.convert_to_tensor(images)
    if x.shape.rank != 4:
        raise InvalidArgumentError(f"extract_image_patches needs [batch, rows, cols, depth], got shape {x.shape}")
    _, kr, kc, _ = _four(ksizes, "ksizes")
    _, sr, sc, _ = _four(strides, "strides")
    _, rr, rc, _ = _four(rates, "rates")
    rows, cols = _spatial(x, 2, "extract_image_patches")
    depth = x.shape.dims[3]
    if depth is None:
        raise InvalidArgumentError(f"extract_image_patches: the depth must be known, got shape {x.shape}")
    padding = padding.upper()
    if padding not in ("VALID", "SAME"):
        raise InvalidArgumentError(f"extract_image_patches: padding must be VALID or SAME, got {padding!r}")
    ekr, ekc = (kr - 1) * rr + 1, (kc - 1) * rc + 1     # the dilated kernel's extent
    if padding == "VALID":
        out_r, out_c = (rows - ekr) // sr + 1, (cols - ekc) // sc + 1
        pr = pc = (0, 0)
    else:
        out_r, out_c = -(-rows // sr), -(-cols // sc)
        tr, tc = max((out_r - 1) * sr + ekr - rows, 0), max((out_c - 1) * sc + ekc - cols, 0)
        pr, pc = (tr // 2, tr - tr // 2), (tc // 2, tc - tc // 2)
    if out_r <= 0 or out_c <= 0:
        raise InvalidArgumentError(f"extract_image_patches: the patch {kr}x{kc} (rates {rr}, {rc}) does not fit a "
                                   f"{rows}x{cols} image with VALID padding")
    with x.graph.as_default(), x.graph.name_scope(name or "ExtractImagePatches"):
        y = _a.pad(x, [[0, 0], list(pr), list(pc), [0, 0]]) if any(pr + pc) else x
        taps = []
        for i in range(kr):
            for j in range(kc):
                r0, c0 = i * rr, j * rc
                taps.append(y[:, r0:r0 + (out_r - 1) * sr + 1:sr, c0:c0 + (out_c - 1) * sc + 1:sc, :])
        patches = _a.stack(taps, axis=3)                   # [b, out_r, out_c, kr * kc, depth]
        return _a.reshape(patches, [-1, out_r, out_c, kr * kc * int(depth)])


def required_space_to_batch_paddings(input_shape: Any, block_shape: Any, base_paddings: Any = None,
                                     name: Optional[str] = None) -> Tuple[np.ndarray, np.ndarray]:
    """(paddings, crops) making the spatial input_shape plus base_paddings divisible by
    block_shape: the extra padding goes at the end and is cropped off again (TF's
    tf.required_space_to_batch_paddings; static shapes here, returned as constants)."""
    shape = _static(input_shape, "input_shape", "required_space_to_batch_paddings").reshape(-1)
    block = _static(block_shape, "block_shape", "required_space_to_batch_paddings").reshape(-1)
    base = (np.zeros((len(block), 2), np.int64) if base_paddings is None
            else _static(base_paddings, "base_paddings", "required_space_to_batch_paddings").reshape(-1, 2))
    if not len(shape) == len(block) == len(base):
        raise InvalidArgumentError(f"required_space_to_batch_paddings: input_shape {shape.tolist()}, block_shape "
                                   f"{block.tolist()} and base_paddings {base.tolist()} must have one length")
    full = shape + base[:, 0] + base[:, 1]
    extra = (block - full % block) % block
    paddings = np.stack([base[:, 0], base[:, 1] + extra], axis=1).astype(np.int32)
    crops = np.stack([np.zeros_like(extra), extra], axis=1).astype(np.int32)
    return constant(paddings, name="paddings"), constant(crops, name="crops")


def with_space_to_batch(input: Any, dilation_rate: Any, padding: str, op: Any,  # noqa: A002 - TF's names
                        filter_shape: Any = None, spatial_dims: Any = None, data_format: Optional[str] = None) -> Any:
    """op(x, num_spatial_dims, padding) applied to the space-to-batch form of `input` for a
    dilation (TF's tf.nn.with_space_to_batch): a dilated convolution or pooling as the
    undilated op on the blocks, then back with batch_to_space_nd.  Spatial dimensions are
    those after the batch (channels last); their sizes must be known."""
    if data_format not in (None, "NWC", "NHWC", "NDHWC"):
        raise InvalidArgumentError(f"with_space_to_batch supports channels-last data formats, got {data_format!r}")
    x = _g.convert_to_tensor(input)
    rate = _static(dilation_rate, "dilation_rate", "with_space_to_batch").reshape(-1).astype(np.int64)
    m = len(rate)
    dims = list(range(1, m + 1)) if spatial_dims is None else [int(d) for d in spatial_dims]
    if dims != list(range(1, m + 1)):
        raise InvalidArgumentError(f"with_space_to_batch: spatial_dims must be 1..{m} (channels last), got {dims}")
    pad = padding.upper()
    if pad not in ("SAME", "VALID"):
        raise ValueError(f"padding must be either 'SAME' or 'VALID', got {padding!r}")
    if np.all(rate == 1):
        return op(x, m, pad)
    if np.any(rate < 1):
        raise ValueError(f"dilation_rate must be positive, got {rate.tolist()}")
    if pad == "SAME":
        if filter_shape is None:
            raise ValueError("filter_shape must be specified for SAME padding")
        fs = _static(filter_shape, "filter_shape", "with_space_to_batch").reshape(-1)[:m].astype(np.int64)
        extra = (fs - 1) * rate
        base = np.stack([extra // 2, extra - extra // 2], axis=1)
    else:
        base = np.zeros((m, 2), np.int64)
    sizes = _spatial(x, m, "with_space_to_batch")
    with x.graph.as_default(), x.graph.name_scope("with_space_to_batch"):
        paddings, crops = required_space_to_batch_paddings(sizes, rate, base)
        y = space_to_batch_nd(x, rate, paddings)
        y = op(y, m, "VALID")
        return batch_to_space_nd(y, rate, crops)
