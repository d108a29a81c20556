"""tf.contrib: `tf.contrib.rnn`, TensorFlow 1.x's alias of the core RNN cells and static_rnn,
`tf.contrib.opt.LazyAdamOptimizer`, and `tf.contrib.layers` (contrib/layers.py: the layer
functions, initializers and regularizers TF1 programs use, with contrib's defaults).

    cell = cf.contrib.rnn.BasicLSTMCell(128)
    outputs, state = cf.contrib.rnn.static_rnn(cell, inputs, dtype=cf.float32)

The rest of tf.contrib is not provided.
"""
import types as _types

from . import layers
from ..nn import rnn as _rnn
from ..train import optimizers as _optimizers

__all__ = ["rnn", "opt", "layers"]

rnn = _types.SimpleNamespace(
    RNNCell=_rnn.RNNCell, BasicRNNCell=_rnn.BasicRNNCell, BasicLSTMCell=_rnn.BasicLSTMCell,
    LSTMCell=_rnn.LSTMCell, GRUCell=_rnn.GRUCell, MultiRNNCell=_rnn.MultiRNNCell,
    LSTMBlockCell=_rnn.LSTMBlockCell, LSTMBlockFusedCell=_rnn.LSTMBlockFusedCell,
    DropoutWrapper=_rnn.DropoutWrapper, ResidualWrapper=_rnn.ResidualWrapper, DeviceWrapper=_rnn.DeviceWrapper,
    LSTMStateTuple=_rnn.LSTMStateTuple,
    static_rnn=_rnn.static_rnn, static_bidirectional_rnn=_rnn.static_bidirectional_rnn)
rnn.__doc__ = ("tf.contrib.rnn: the core RNN cells, LSTMBlockCell, LSTMBlockFusedCell (a whole time-major "
               "sequence as one op), static_rnn and static_bidirectional_rnn.")

opt = _types.SimpleNamespace(LazyAdamOptimizer=_optimizers.LazyAdamOptimizer)
opt.__doc__ = "tf.contrib.opt: LazyAdamOptimizer (Adam updating only an embedding's touched rows)."
