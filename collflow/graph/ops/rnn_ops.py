"""A fused LSTM cell step (TensorFlow's LSTMBlockCell): the gate nonlinearities and the state
update of one step as one op, its gradient as one op.

    c, h = lstm_block_cell(gates, c_prev, forget_bias)

`gates` [batch, 4 units] are the pre-activations in TensorFlow's order i, j, f, o (the
matrix product [x, h] . kernel + bias, computed by the caller: one GEMM, or the per-step part
of it when the input projection is hoisted out of the loop).  Then, in one kernel,

    i, j, f, o = sigmoid(g_i), tanh(g_j), sigmoid(g_f + forget_bias), sigmoid(g_o)
    c = c_prev * f + i * j,   h = o * tanh(c)

instead of a split, four activations and five elementwise ops (each a pass over memory and
an op dispatch).  The op also outputs the activated gates, which its gradient reads.

`block_lstm` runs a whole sequence the same way (TensorFlow's LSTMBlockFusedCell): given the
inputs x [time, batch, depth], h0, c0 and the cell's kernel and bias, one kernel projects the
inputs of every step at once (one GEMM, the bias as the weights of a column of ones), then
runs the steps (h . W_h, then the cell); its gradient runs the steps backwards and computes
the whole kernel's and the bias's gradients as one product over all steps ([x, h_prev, 1]^T
. dgates) and the inputs' as another.  No while loop, no per-step op dispatch, and none of
the split, bias-add, sum and concat ops around a separate projection.  LSTMCell's peepholes
(i and f see c_prev through w_i_diag and w_f_diag, o the new c through w_o_diag) and its
cell_clip run inside it too.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

from ...errors import InvalidArgumentError
from .. import graph as _g
from ..registry import not_differentiable, register_gradient, register_op
from ..shape import TensorShape
from .op_util import make_op

__all__ = ["lstm_block_cell", "block_lstm", "block_gru"]


def _cell_spec(op: _g.Operation) -> list:
    gates, c = op.inputs
    if not gates.dtype.is_floating or gates.dtype != c.dtype:
        raise ValueError(f"LSTMBlockCell needs floating gates and state of one dtype, got {gates.dtype.name} "
                         f"and {c.dtype.name}")
    if gates.shape.rank not in (None, 2) or c.shape.rank not in (None, 2):
        raise ValueError(f"LSTMBlockCell needs gates [batch, 4 units] and c [batch, units], got {gates.shape} "
                         f"and {c.shape}")
    units = c.shape.dims[1] if c.shape.rank == 2 else None
    g4 = gates.shape.dims[1] if gates.shape.rank == 2 else None
    if units is not None and g4 is not None and g4 != 4 * units:
        raise ValueError(f"LSTMBlockCell: gates have {g4} columns, 4 x units = {4 * units}")
    batch = c.shape.dims[0] if c.shape.rank == 2 else (gates.shape.dims[0] if gates.shape.rank == 2 else None)
    if units is None and g4 is not None:
        units = g4 // 4
    st = TensorShape([batch, units])
    return [(c.dtype, st), (c.dtype, st), (c.dtype, TensorShape([batch, None if units is None else 4 * units]))]


def _grad_spec(op: _g.Operation) -> list:
    act, c_prev = op.inputs[0], op.inputs[1]
    return [(act.dtype, act.shape), (c_prev.dtype, c_prev.shape)]


# LSTMBlockCell(gates, c_prev) -> (c, h, act): act are the activated gates [i, j, f, o]
register_op("LSTMBlockCell", _cell_spec, doc="one LSTM step's gates and state update, fused")
# LSTMBlockCellGrad(act, c_prev, c, dc, dh, dact) -> (d_gates, d_c_prev)
register_op("LSTMBlockCellGrad", _grad_spec, doc="the gradient of LSTMBlockCell")
# second-order gradients through a fused cell are not built (nor through while loops)
# LSTMBlockCellGrad: no gradient registered (a second derivative raises LookupError, as TF)


def lstm_block_cell(gates: Any, c_prev: Any, forget_bias: float = 0.0,
                    name: Optional[str] = None) -> Tuple[_g.Tensor, _g.Tensor]:
    """(c, h) of one LSTM step from the gate pre-activations (order i, j, f, o) and c_prev."""
    op = make_op("LSTMBlockCell", [gates, c_prev], {"forget_bias": float(forget_bias)}, name=name or "LSTMBlockCell")
    return op.outputs[0], op.outputs[1]


@register_gradient("LSTMBlockCell")
def _lstm_block_cell_grad(op: _g.Operation, dc: Any, dh: Any, dact: Any) -> list:
    from ..gradients import used_gradient
    from .array_ops import zeros_like
    c = op.outputs[0]
    dc = zeros_like(c) if dc is None else _g.convert_to_tensor(dc)
    dh = zeros_like(c) if dh is None else _g.convert_to_tensor(dh)
    ins = [op.outputs[2], op.inputs[1], c, dc, dh]
    dact = used_gradient(dact, op.outputs[2])
    if dact is not None:
        ins.append(dact)
    g = make_op("LSTMBlockCellGrad", ins, {"forget_bias": op.attrs["forget_bias"]}, name="LSTMBlockCellGrad")
    return [g.outputs[0], g.outputs[1]]



def _check_lengths(op: _g.Operation, seq: Optional[_g.Tensor]) -> None:
    if seq is not None and (not seq.dtype.is_integer or seq.shape.rank not in (None, 1)):
        raise ValueError(f"{op.type}: sequence_length must be an int vector [batch], got {seq.dtype.name} "
                         f"{seq.shape}")


def _block_seq(op: _g.Operation) -> Optional[_g.Tensor]:
    """BlockLSTM's sequence_length input, or None (after the peephole weights, if any)."""
    k = 5 + 3 * bool(op.attrs.get("use_peephole")) + bool(op.attrs.get("with_proj"))
    return op.inputs[k] if len(op.inputs) > k else None


def _block_spec(op: _g.Operation) -> list:
    x, h0, c0, w, b = op.inputs[:5]
    _check_lengths(op, _block_seq(op))
    peep = list(op.inputs[5:8]) if op.attrs.get("use_peephole") else []
    proj = op.inputs[5 + len(peep)] if op.attrs.get("with_proj") else None
    floats = [h0, c0, w, b] + peep + ([proj] if proj is not None else [])
    if not x.dtype.is_floating or any(t.dtype != x.dtype for t in floats):
        raise ValueError("BlockLSTM needs floating inputs of one dtype, got "
                         + ", ".join(t.dtype.name for t in op.inputs))
    if x.shape.rank not in (None, 3) or w.shape.rank not in (None, 2) or b.shape.rank not in (None, 1):
        raise ValueError(f"BlockLSTM needs x [time, batch, depth], a kernel [depth + units, 4 units] and a bias "
                         f"[4 units], got {x.shape}, {w.shape} and {b.shape}")
    t, batch = (x.shape.dims[0], x.shape.dims[1]) if x.shape.rank == 3 else (None, None)
    g4 = w.shape.dims[1] if w.shape.rank == 2 else None
    units = g4 // 4 if g4 is not None else None
    if g4 is not None and g4 % 4:
        raise ValueError(f"BlockLSTM: the kernel has {g4} columns, not 4 x units")
    depth = x.shape.dims[2] if x.shape.rank == 3 else None
    hd = units  # h's depth: num_proj with a projection, else units
    if proj is not None:
        if proj.shape.rank not in (None, 2) or (proj.shape.rank == 2 and units is not None
                                                and proj.shape.dims[0] not in (None, units)):
            raise ValueError(f"BlockLSTM: the projection kernel must be [units = {units}, num_proj], got {proj.shape}")
        hd = proj.shape.dims[1] if proj.shape.rank == 2 else None
    if hd is not None and depth is not None and w.shape.dims[0] not in (None, depth + hd):
        raise ValueError(f"BlockLSTM: the kernel has {w.shape.dims[0]} rows, expected depth {depth} + "
                         f"{'num_proj' if proj is not None else 'units'} {hd}")
    if g4 is not None and b.shape.rank == 1 and b.shape.dims[0] not in (None, g4):
        raise ValueError(f"BlockLSTM: the bias has {b.shape.dims[0]} entries, expected {g4}")
    for p in peep:
        if p.shape.rank not in (None, 1) or (units is not None and p.shape.rank == 1
                                             and p.shape.dims[0] not in (None, units)):
            raise ValueError(f"BlockLSTM: a peephole weight must be [units] = [{units}], got {p.shape}")
    # the workspace the gradient reads: per step (and one more) the activated gates, c and
    # [x; h_prev; 1], unit-major [time + 1, 5 units + depth + h depth + 1, batch]
    # (kernels/rnn_kernels.py)
    rows = None if None in (units, depth, hd) else 5 * units + depth + hd + 1
    return [(x.dtype, TensorShape([t, batch, hd])), (x.dtype, TensorShape([t, batch, units])),
            (x.dtype, TensorShape([None if t is None else t + 1, rows, batch]))]


def _block_grad_spec(op: _g.Operation) -> list:
    x, h0, c0, w = op.inputs[:4]
    g4 = w.shape.dims[1] if w.shape.rank == 2 else None
    peep = [(w.dtype, TensorShape([g4 // 4 if g4 is not None else None]))] * 3 if op.attrs.get("use_peephole") else []
    extra = 1 + int(bool(op.attrs.get("with_dact"))) + len(peep)
    proj = [(w.dtype, op.inputs[8 + extra].shape)] if op.attrs.get("with_proj") else []
    return [(x.dtype, x.shape), (h0.dtype, h0.shape), (c0.dtype, c0.shape), (w.dtype, w.shape),
            (w.dtype, TensorShape([g4]))] + peep + proj


# BlockLSTM(x, h0, c0, kernel, bias[, w_i, w_f, w_o][, projection][, sequence_length])
#   -> (h [T, B, P or H], c [T, B, H], workspace [T + 1, 5 H + D + P + 1, B]); attrs
#   forget_bias, use_peephole, cell_clip, with_proj, proj_clip
register_op("BlockLSTM", _block_spec, doc="an LSTM over a whole sequence, fused")
# BlockLSTMGrad(x, h0, c0, kernel, h, c, ws, dh, dc[, dws][, w_i, w_f, w_o][, projection]
#   [, sequence_length]) -> (dx, dh0, dc0, dkernel, dbias[, dw_i, dw_f, dw_o][, dprojection])
register_op("BlockLSTMGrad", _block_grad_spec, doc="the gradient of BlockLSTM")
# BlockLSTMGrad: no gradient registered (a second derivative raises LookupError, as TF)


def block_lstm(x: Any, h0: Any, c0: Any, kernel: Any, bias: Any, forget_bias: float = 0.0,
               sequence_length: Any = None, peepholes: Optional[Sequence[Any]] = None,
               cell_clip: Optional[float] = None, projection: Any = None, proj_clip: Optional[float] = None,
               name: Optional[str] = None) -> Tuple[_g.Tensor, _g.Tensor]:
    """(h [time, batch, num_proj or units], c [time, batch, units]) of every step of TF1's
    LSTMCell (tanh) for time-major inputs x [time, batch, depth], the cell's kernel
    [depth + h depth, 4 units] (rows for x, then for h; gates i, j, f, o) and bias [4 units].
    peepholes: (w_i_diag, w_f_diag, w_o_diag), each [units], for LSTMCell's use_peepholes;
    cell_clip: c clipped to [-cell_clip, cell_clip] after each update (None: no clipping);
    projection: LSTMCell's num_proj kernel [units, num_proj] (h = (o * tanh(c)) . projection,
    clipped to [-proj_clip, proj_clip] when proj_clip is given).  With sequence_length
    [batch], a row past its length keeps its state (h and c repeat)."""
    peep = list(peepholes) if peepholes is not None else []
    if peep and len(peep) != 3:
        raise ValueError(f"block_lstm: peepholes must be (w_i_diag, w_f_diag, w_o_diag), got {len(peep)} tensors")
    for what, v in (("cell_clip", cell_clip), ("proj_clip", proj_clip)):
        if v is not None and float(v) < 0:
            raise ValueError(f"block_lstm: {what} must be >= 0 or None, got {v}")
    if proj_clip is not None and projection is None:
        raise ValueError("block_lstm: proj_clip needs a projection")
    ins = ([x, h0, c0, kernel, bias] + peep + ([projection] if projection is not None else [])
           + ([sequence_length] if sequence_length is not None else []))
    attrs = {"forget_bias": float(forget_bias), "use_peephole": bool(peep),
             "cell_clip": -1.0 if cell_clip is None else float(cell_clip), "with_proj": projection is not None,
             "proj_clip": -1.0 if proj_clip is None else float(proj_clip)}
    op = make_op("BlockLSTM", ins, attrs, name=name or "BlockLSTM")
    return op.outputs[0], op.outputs[1]


@register_gradient("BlockLSTM")
def _block_lstm_grad(op: _g.Operation, dh: Any, dc: Any, dact: Any) -> list:
    from ..gradients import used_gradient
    from .array_ops import zeros_like
    h, c, act = op.outputs
    # what nothing differentiated (usually the c sequence and the gates: only h is used) the
    # kernel skips rather than adding zeros in every step
    dh, dc, dact = used_gradient(dh, h), used_gradient(dc, c), used_gradient(dact, act)
    dc_zero = dc is None
    dh = zeros_like(h) if dh is None else dh
    dc = zeros_like(c) if dc is None else dc
    ins = list(op.inputs[:4]) + [h, c, act, dh, dc]
    if dact is not None:
        ins.append(dact)
    peephole, with_proj = bool(op.attrs.get("use_peephole")), bool(op.attrs.get("with_proj"))
    ins.extend(op.inputs[5:5 + 3 * peephole + with_proj])   # the peephole weights, the projection
    seq = _block_seq(op)
    if seq is not None:
        ins.append(seq)
    g = make_op("BlockLSTMGrad", ins, {"forget_bias": op.attrs["forget_bias"], "dc_zero": dc_zero,
                                       "with_dact": dact is not None, "with_seq": seq is not None,
                                       "use_peephole": peephole, "cell_clip": op.attrs.get("cell_clip", -1.0),
                                       "with_proj": with_proj, "proj_clip": op.attrs.get("proj_clip", -1.0)},
                name="BlockLSTMGrad")
    return list(g.outputs) + ([None] if seq is not None else [])


# -- GRU over a whole sequence ----------------------------------------------------------------
# TF1's GRUCell: r, u = sigmoid([x, h] . W_g + b_g); c = tanh([x, r * h] . W_c + b_c);
# h' = u * h + (1 - u) * c.  With the input halves projected for all steps at once
# (p = x . [W_gx, W_cx] + [b_g, b_c], [time, batch, 3 units]), BlockGRU runs every step as
# two GEMMs (h . W_gh, (r * h) . W_ch) and one kernel's elementwise passes; its gradient runs
# the steps backwards and computes both recurrent kernels' gradients as one product each over
# all steps.  Besides h it outputs, for its gradient only, a workspace (every step's
# activations [r, u, c] and h_prev, unit-major) and r * h of every step.


def _gru_spec(op: _g.Operation) -> list:
    p, h0, w_g, w_c = op.inputs[:4]
    _check_lengths(op, op.inputs[4] if len(op.inputs) > 4 else None)
    if not p.dtype.is_floating or any(t.dtype != p.dtype for t in (h0, w_g, w_c)):
        raise ValueError("BlockGRU needs floating inputs of one dtype, got "
                         + ", ".join(t.dtype.name for t in op.inputs[:4]))
    if p.shape.rank not in (None, 3) or w_g.shape.rank not in (None, 2) or w_c.shape.rank not in (None, 2):
        raise ValueError(f"BlockGRU needs p [time, batch, 3 units], w_g [units, 2 units] and w_c [units, units], "
                         f"got {p.shape}, {w_g.shape} and {w_c.shape}")
    t, b = (p.shape.dims[0], p.shape.dims[1]) if p.shape.rank == 3 else (None, None)
    units = w_c.shape.dims[0] if w_c.shape.rank == 2 else None
    if units is not None:
        want = {"p": (p, 2, 3 * units), "w_g": (w_g, 1, 2 * units), "w_c": (w_c, 1, units)}
        for name, (x, axis, size) in want.items():
            if x.shape.rank is not None and x.shape.dims[axis] not in (None, size):
                raise ValueError(f"BlockGRU: {name} has {x.shape.dims[axis]} in dimension {axis}, expected {size} "
                                 f"for {units} units (shapes p {p.shape}, w_g {w_g.shape}, w_c {w_c.shape})")
    seq = TensorShape([t, b, units])
    # the workspace: per step (and one more) [r; u; c] and h_prev, unit-major (kernels/rnn_kernels.py)
    ws = TensorShape([None if t is None else t + 1, None if units is None else 4 * units, b])
    return [(p.dtype, seq), (p.dtype, ws), (p.dtype, seq)]


def _gru_grad_spec(op: _g.Operation) -> list:
    h0, w_g, w_c, hs = op.inputs[0], op.inputs[1], op.inputs[2], op.inputs[3]
    dims = hs.shape.dims if hs.shape.rank == 3 else [None] * 3
    dp = TensorShape([dims[0], dims[1], None if dims[2] is None else 3 * dims[2]])  # p's shape
    return [(hs.dtype, dp), (h0.dtype, h0.shape), (w_g.dtype, w_g.shape), (w_c.dtype, w_c.shape)]


# BlockGRU(p, h0, w_g, w_c[, sequence_length]) -> (h [T, B, H], ws [T + 1, 4H, B], rh [T, B, H])
register_op("BlockGRU", _gru_spec, doc="a GRU over a whole sequence, fused")
# BlockGRUGrad(h0, w_g, w_c, h, ws, rh, dh[, sequence_length]) -> (dp, dh0, dw_g, dw_c)
register_op("BlockGRUGrad", _gru_grad_spec, doc="the gradient of BlockGRU")
not_differentiable("BlockGRUGrad")


def block_gru(p: Any, h0: Any, w_g: Any, w_c: Any, sequence_length: Any = None,
              name: Optional[str] = None) -> _g.Tensor:
    """h of every step [time, batch, units] of TF1's GRU cell, for input projections p
    [time, batch, 3 units] (gates r, u, then the candidate), h0 and the recurrent kernels
    w_g [units, 2 units] (gates) and w_c [units, units] (candidate).  With sequence_length
    [batch], a row past its length keeps its state (h repeats)."""
    ins = [p, h0, w_g, w_c] + ([sequence_length] if sequence_length is not None else [])
    return make_op("BlockGRU", ins, name=name or "BlockGRU").outputs[0]


@register_gradient("BlockGRU")
def _block_gru_grad(op: _g.Operation, dh: Any, dact: Any, drh: Any) -> list:
    from ..gradients import used_gradient
    from .array_ops import zeros_like
    if used_gradient(dact, op.outputs[1]) is not None or used_gradient(drh, op.outputs[2]) is not None:
        raise InvalidArgumentError(f"{op.name}: only its first output (h) is differentiable; the others are "
                                      "saved values its gradient reads", op)
    h, act, rh = op.outputs
    dh = zeros_like(h) if dh is None else _g.convert_to_tensor(dh)
    seq = op.inputs[4] if len(op.inputs) > 4 else None
    ins = [op.inputs[1], op.inputs[2], op.inputs[3], h, act, rh, dh] + ([seq] if seq is not None else [])
    g = make_op("BlockGRUGrad", ins, name="BlockGRUGrad")
    return list(g.outputs) + ([None] if seq is not None else [])
