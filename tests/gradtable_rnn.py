"""Gradient-check cases for TensorArray ops, dynamic_rnn (collflow/nn/rnn.py) and the reversals the
bidirectional runners use (collflow/graph/ops/reverse_ops.py)."""
import collflow as cf
from collflow.nn import rnn
from gradcheck import Case


def _write_stack(a):
    # element 1 is never written: it stacks as zeros and gets no gradient
    ta = rnn.TensorArray(cf.float64, 4)
    ta = ta.write(0, a[0]).write(2, cf.sin(a[1]) * a[2]).write(3, a[1])
    return ta.stack()


def _unstack_read(a):
    ta = rnn.TensorArray(cf.float64, 3).unstack(a)
    # element 2 read twice: its gradient array adds the two contributions
    return ta.read(2) * ta.read(0) + cf.exp(ta.read(2))


def _split_read(a):
    ta = rnn.TensorArray(cf.float64, 3).split(a)
    return ta.read(1) * ta.read(2)


def _ta_loop(a):
    # a [4, 3]: running product over rows, written per step, stacked after the loop
    ta_in = rnn.TensorArray(cf.float64, 4).unstack(a)
    ta_out = rnn.TensorArray(cf.float64, 4)

    def body(t, acc, flow):
        acc = acc * ta_in.read(t) + 0.5
        return t + 1, acc, ta_out.with_flow(flow).write(t, cf.sin(acc)).flow
    _, acc, flow = cf.while_loop(lambda t, acc, flow: t < 4, body,
                                 (cf.constant(0), cf.ones_like(a[0]), ta_out.flow))
    return [ta_out.with_flow(flow).stack(), acc]


def _inject(cell, depth, kernel, bias):
    """Uses graph tensors (the checked inputs) as the cell's weights."""
    cell.built, cell.input_depth, cell.dtype = True, depth, cf.float64
    cell._kernel, cell._bias = kernel, bias
    return cell


def _lstm(x, c0, h0, kernel, bias, fused=False):
    cell = _inject(rnn.LSTMCell(3), 2, kernel, bias)
    if not fused:
        cell.fused_sequence = lambda: None  # the per-step loop
    lengths = cf.constant([4, 2, 0])
    out, st = rnn.dynamic_rnn(cell, x, sequence_length=lengths, initial_state=rnn.LSTMStateTuple(c0, h0))
    return [out, st.c, st.h]


def _basic_rnn_generic(x, h0, kernel, bias):
    class Plain(rnn.BasicRNNCell):  # no input projection: dynamic_rnn calls the cell per step
        def input_projection(self):
            return None
    cell = _inject(Plain(3), 2, kernel, bias)
    out, st = rnn.dynamic_rnn(cell, x, initial_state=h0, time_major=True)
    return [out, st]


def _rnn_in_while_and_cond(x, kernel, bias):
    # a dynamic_rnn inside an outer while loop (nested loops) and inside a cond branch
    cell = _inject(rnn.BasicRNNCell(2), 2, kernel, bias)

    def body(i, acc):
        out, _ = rnn.dynamic_rnn(cell, x * cf.cast(i + 1, cf.float64), scope="inner")
        return i + 1, acc + out
    looped = cf.while_loop(lambda i, acc: i < 2, body, [cf.constant(0), cf.zeros_like(x)])[1]
    branch = cf.cond(cf.reduce_sum(x) > -100.0, lambda: rnn.dynamic_rnn(cell, x, time_major=True)[0], lambda: x)
    return [looped, branch]


def _reverse_sequence(x):
    # lengths 3, 0, 1 of 3 steps: a full reversal, an untouched row, a one-step "reversal"
    return cf.reverse_sequence(cf.sin(x), cf.constant([3, 0, 1]), seq_axis=1, batch_axis=0)


def _reverse_sequence_time_major(x):
    return cf.reverse_sequence(x * x, cf.constant([2, 4]), seq_axis=0, batch_axis=1)


CASES = [
    Case("TensorArrayWriteV3", _write_stack, [(3, 2)], id="ta-write-stack"),
    Case("TensorArrayStackV3", _write_stack, [(3, 2)], id="ta-stack"),
    Case("TensorArrayUnstackV3", _unstack_read, [(3, 2, 2)], id="ta-unstack-read"),
    Case("TensorArrayReadV3", _unstack_read, [(3, 2, 2)], id="ta-read-twice"),
    Case("TensorArraySplitV3", _split_read, [(6, 2)], id="ta-split"),
    Case("TensorArrayReadV3", _ta_loop, [(4, 3)], low=0.5, high=1.5, id="ta-in-while"),
    Case("TensorArraySplitV3", _lstm, [(3, 4, 2), (3, 3), (3, 3), (5, 12), (12,)], low=-1.0, high=1.0,
         id="dynamic_rnn-lstm-seqlen"),
    Case("BlockLSTM", lambda *a: _lstm(*a, fused=True), [(3, 4, 2), (3, 3), (3, 3), (5, 12), (12,)], low=-1.0,
         high=1.0, id="dynamic_rnn-lstm-seqlen-fused"),
    Case("TensorArrayUnstackV3", _basic_rnn_generic, [(4, 2, 2), (2, 3), (5, 3), (3,)], low=-1.0, high=1.0,
         id="dynamic_rnn-basic-generic"),
    Case("TensorArrayReadV3", _rnn_in_while_and_cond, [(2, 3, 2), (4, 2), (2,)], low=-1.0, high=1.0,
         id="dynamic_rnn-nested-in-while-and-cond"),
    Case("ReverseV2", lambda x: cf.reverse(cf.sin(x), [0, 2]), [(2, 3, 2)]),
    Case("ReverseSequence", _reverse_sequence, [(3, 3, 2)], id="ReverseSequence-batch-major"),
    Case("ReverseSequence", _reverse_sequence_time_major, [(4, 2, 3)], id="ReverseSequence-time-major"),
]


def _lstm_block(g, c):
    c2, h2 = cf.graph.ops.rnn_ops.lstm_block_cell(g, c, forget_bias=1.0)
    return [c2, h2]


def _lstm_block_act(g, c):
    # the activated gates (third output) used directly: their gradient is added in
    op = cf.graph.ops.rnn_ops.lstm_block_cell(g, c)[0].op
    return [op.outputs[0] * 0.5, op.outputs[2]]


CASES += [
    Case("LSTMBlockCell", _lstm_block, [(3, 8), (3, 2)], id="lstm-block-cell"),
    Case("LSTMBlockCell", _lstm_block_act, [(2, 12), (2, 3)], id="lstm-block-cell-act"),
]


def _block_lstm(x, h0, c0, w, b):
    hs, cs = cf.graph.ops.rnn_ops.block_lstm(x, h0, c0, w, b, forget_bias=0.5)
    return [hs, cs[-1]]


def _block_lstm_h_only(x, h0, c0, w, b):
    # only h differentiated: the c sequence's and the gates' gradients are the filled-in zeros
    return cf.graph.ops.rnn_ops.block_lstm(x, h0, c0, w, b)[0] * 1.5


def _block_lstm_lengths(x, h0, c0, w, b):
    # rows of lengths 4, 1 and 0: states repeat past them, gradients pass straight through
    hs, cs = cf.graph.ops.rnn_ops.block_lstm(x, h0, c0, w, b, forget_bias=1.0, sequence_length=cf.constant([4, 1, 0]))
    return [hs, cs]


def _block_lstm_act(x, h0, c0, w, b):
    # the workspace (third output: per step the activated gates, c and [x; h_prev; 1],
    # unit-major) used directly: its gradient is added in, with lengths so rows past them get none
    hs, _ = cf.graph.ops.rnn_ops.block_lstm(x, h0, c0, w, b, forget_bias=1.0, sequence_length=cf.constant([3, 1]))
    return [hs * 0.5, hs.op.outputs[2]]


def _block_lstm_peep_clip(x, h0, c0, w, b, wi, wf, wo):
    # peepholes and a cell clip that bites for some elements (c0 spans [-1, 1])
    hs, cs = cf.graph.ops.rnn_ops.block_lstm(x, h0, c0, w, b, forget_bias=1.0, peepholes=(wi, wf, wo),
                                             cell_clip=0.6)
    return [hs, cs[-1]]


def _block_lstm_peep_act_lengths(x, h0, c0, w, b, wi, wf, wo):
    # the gates used directly with peepholes (o's gradient reaches c through w_o) and lengths
    hs, _ = cf.graph.ops.rnn_ops.block_lstm(x, h0, c0, w, b, peepholes=(wi, wf, wo),
                                            sequence_length=cf.constant([3, 1, 0]))
    return [hs * 0.5, hs.op.outputs[2]]


def _block_lstm_projection(x, h0, c0, w, b, wi, wf, wo, proj):
    # LSTMCell's num_proj (3 units projected to 2) with a projection clip that bites, peepholes
    # and lengths
    hs, cs = cf.graph.ops.rnn_ops.block_lstm(x, h0, c0, w, b, forget_bias=0.5, peepholes=(wi, wf, wo),
                                             projection=proj, proj_clip=0.25, sequence_length=cf.constant([3, 2]))
    return [hs, cs[-1]]


_PEEP = [(3, 3, 2), (3, 2), (3, 2), (4, 8), (8,), (2,), (2,), (2,)]
CASES += [Case("BlockLSTM", _block_lstm_projection, [(3, 2, 2), (2, 2), (2, 3), (4, 12), (12,), (3,), (3,), (3,),
                                                     (3, 2)], low=-1.0, high=1.0, id="block-lstm-projection")]
CASES += [Case("BlockLSTM", _block_lstm_peep_clip, _PEEP, low=-1.0, high=1.0, id="block-lstm-peephole-clip"),
          Case("BlockLSTM", _block_lstm_peep_act_lengths, _PEEP, low=-1.0, high=1.0, id="block-lstm-peephole-act"),
          Case("BlockLSTM", _block_lstm_act, [(3, 2, 2), (2, 2), (2, 2), (4, 8), (8,)], id="block-lstm-act"),
          Case("BlockLSTM", _block_lstm, [(4, 2, 3), (2, 2), (2, 2), (5, 8), (8,)], id="block-lstm"),
          Case("BlockLSTM", _block_lstm_lengths, [(4, 3, 2), (3, 2), (3, 2), (4, 8), (8,)], id="block-lstm-lengths"),
          Case("BlockLSTM", _block_lstm_h_only, [(3, 2, 2), (2, 3), (2, 3), (5, 12), (12,)], id="block-lstm-h-only"),
          Case("BlockLSTM", _block_lstm, [(1, 3, 2), (3, 2), (3, 2), (4, 8), (8,)], id="block-lstm-one-step")]


def _block_gru(p, h0, w_g, w_c):
    return cf.graph.ops.rnn_ops.block_gru(p, h0, w_g, w_c)


def _block_gru_lengths(p, h0, w_g, w_c):
    return cf.graph.ops.rnn_ops.block_gru(p, h0, w_g, w_c, sequence_length=cf.constant([3, 0, 1]))


CASES += [Case("BlockGRU", _block_gru, [(4, 2, 9), (2, 3), (3, 6), (3, 3)], id="block-gru"),
          Case("BlockGRU", _block_gru_lengths, [(4, 3, 6), (3, 2), (2, 4), (2, 2)], id="block-gru-lengths"),
          Case("BlockGRU", _block_gru, [(1, 3, 6), (3, 2), (2, 4), (2, 2)], id="block-gru-one-step")]
