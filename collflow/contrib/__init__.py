"""tf.contrib: the parts TF 1.x programs use, each under TF 1.15's names and argument orders:
`rnn` (the core cells, the block/fused LSTM and GRU cells, stacked bidirectional RNNs, the
projection wrappers, ConvLSTM cells), `opt` (LazyAdam, AdamW, MomentumW, AdaMax, Nadam,
AddSign, PowerSign, MovingAverage, VariableClipping), `layers` and `slim`
(the layer functions with contrib's defaults, arg_scope, the variable helpers, `slim.learning`,
`slim.evaluation`, `slim.nets`), `framework`, `losses` and `metrics` (predictions first),
`training`, `seq2seq`, `legacy_seq2seq`, `crf`, `image`, `distributions`, `data`, `lookup`,
`signal`, `estimator` (heads), `learn.datasets` (the MNIST reader), `mixed_precision`,
`tensorboard.plugins.projector`, `predictor`, `stateless` and `cudnn_rnn` (the cuDNN RNN layers, run
on collflow's kernels, and their compatible cells)
(`tf.contrib.keras` and `util` are set by collflow.compat.v1, above this package).

    cell = cf.contrib.rnn.BasicLSTMCell(128)
    outputs, state = cf.contrib.rnn.static_rnn(cell, inputs, dtype=cf.float32)

What is not here (quantize, tpu, gan, the rest of learn, ...) is listed in
docs/tf1_compat.md; `tf.contrib.<name>` of a missing module raises an AttributeError naming it.
"""
import types as _types

from . import framework, layers
from ..nn import rnn as _rnn
from ..nn import rnn_block_cells as _rnn_block_cells
from ..train import optimizers as _optimizers
from . import losses  # tf.contrib.losses (= slim.losses): predictions/logits first, contrib's reduction
from . import metrics  # tf.contrib.metrics (= slim.metrics): predictions first, the streaming_* names
from .. import initializers as _initializers

__all__ = ["rnn", "opt", "layers", "framework", "slim", "losses", "metrics"]

rnn = _types.SimpleNamespace(
    RNNCell=_rnn.RNNCell, BasicRNNCell=_rnn.BasicRNNCell, BasicLSTMCell=_rnn.BasicLSTMCell,
    LSTMCell=_rnn.LSTMCell, GRUCell=_rnn.GRUCell, MultiRNNCell=_rnn.MultiRNNCell,
    LSTMBlockCell=_rnn.LSTMBlockCell, LSTMBlockFusedCell=_rnn.LSTMBlockFusedCell,
    GRUBlockCell=_rnn_block_cells.GRUBlockCell, GRUBlockCellV2=_rnn_block_cells.GRUBlockCellV2,
    DropoutWrapper=_rnn.DropoutWrapper, ResidualWrapper=_rnn.ResidualWrapper, DeviceWrapper=_rnn.DeviceWrapper,
    LSTMStateTuple=_rnn.LSTMStateTuple,
    static_rnn=_rnn.static_rnn, static_bidirectional_rnn=_rnn.static_bidirectional_rnn,
    static_state_saving_rnn=_rnn.static_state_saving_rnn)
rnn.__doc__ = ("tf.contrib.rnn: the core RNN cells, LSTMBlockCell, LSTMBlockFusedCell (a whole time-major "
               "sequence as one op), GRUBlockCell, GRUBlockCellV2, static_rnn, static_bidirectional_rnn and "
               "static_state_saving_rnn.")

from . import opt  # noqa: E402  (tf.contrib.opt: LazyAdamOptimizer, AdamWOptimizer, MomentumWOptimizer, ...)
from . import mixed_precision  # noqa: E402  (tf.contrib.mixed_precision: LossScaleOptimizer, the managers)

_SLIM_LAYERS = ("fully_connected", "conv2d", "convolution2d", "max_pool2d", "avg_pool2d", "flatten", "dropout",
                "batch_norm", "layer_norm", "one_hot_encoding", "repeat", "stack", "conv2d_transpose",
                "convolution2d_transpose", "separable_conv2d", "separable_convolution2d", "bias_add", "softmax",
                "xavier_initializer", "xavier_initializer_conv2d", "variance_scaling_initializer", "l1_regularizer",
                "l2_regularizer", "l1_l2_regularizer", "sum_regularizer", "apply_regularization",
                *layers._extra.__all__, *layers._gdn.SLIM_NAMES)
# a module object, so `import collflow.contrib.slim` and tf.contrib.slim are one thing
slim = _types.ModuleType(__name__ + ".slim")
slim.__dict__.update(dict(
    **{n: getattr(layers, n) for n in _SLIM_LAYERS},
    **{n: getattr(framework, n) for n in framework.__all__},
    layers=layers, framework=framework, losses=losses, metrics=metrics, initializers=_initializers,
    regularizers=layers))
slim.__doc__ = ("tf.contrib.slim: the contrib layers (arg_scope-able), arg_scope, model_variable/variable, "
                "get_variables_to_restore and the other variable helpers, losses; slim.learning and slim.nets "
                "are not provided.")

from ..graph.ops import lookup_ops as _lookup_ops  # noqa: E402
from ..graph.ops import mutable_lookup_ops as _mutable_lookup_ops  # noqa: E402
lookup = _types.SimpleNamespace(**{n: getattr(_lookup_ops, n) for n in _lookup_ops.__all__},
                                MutableHashTable=_mutable_lookup_ops.MutableHashTable,
                                MutableDenseHashTable=_mutable_lookup_ops.MutableDenseHashTable)
lookup.__doc__ = ("tf.contrib.lookup: HashTable, KeyValueTensorInitializer, TextFileInitializer, "
                  "IdTableWithHashBuckets, the index_table_from_* / index_to_string_table_from_* helpers, "
                  "MutableHashTable and MutableDenseHashTable.")
__all__.append("lookup")

from . import seq2seq  # noqa: E402  (tf.contrib.seq2seq: sequence_loss, decoders, helpers, attention)
__all__.append("seq2seq")

from . import training  # noqa: E402  (tf.contrib.training: HParams, parse_values)
__all__ += ["training"]

# tf.contrib.estimator: TF 1.x's head factories (binary_classification_head, multi_head, ...)
from ..estimator import contrib_estimator as estimator  # noqa: E402
__all__.append("estimator")

# tf.contrib.signal (TF 1.15's names) and tf.contrib.framework.python.ops.audio_ops (the speech
# tutorial's `contrib_audio`), importable under that dotted path too
from ..graph.ops import signal_ops as _signal_ops, signal_mel_ops as _signal_mel_ops  # noqa: E402
signal = _types.SimpleNamespace(**{n: getattr(_signal_ops, n) for n in _signal_ops.__all__ if "shift" not in n},
                                **{n: getattr(_signal_mel_ops, n) for n in ("linear_to_mel_weight_matrix",
                                                                            "mfccs_from_log_mel_spectrograms")})
signal.__doc__ = ("tf.contrib.signal: frame, overlap_and_add, hann_window, hamming_window, stft, inverse_stft, "
                  "inverse_stft_window_fn, linear_to_mel_weight_matrix, mfccs_from_log_mel_spectrograms.")
__all__.append("signal")
from . import audio_ops as _audio_ops  # noqa: E402
import sys as _sys  # noqa: E402
_fw_python = _types.ModuleType(__name__ + ".framework.python", "tf.contrib.framework.python")
_fw_python.ops = _types.ModuleType(__name__ + ".framework.python.ops", "tf.contrib.framework.python.ops")
_fw_python.ops.audio_ops = _audio_ops
framework.python = _fw_python
_sys.modules.setdefault(_fw_python.__name__, _fw_python)
_sys.modules.setdefault(_fw_python.ops.__name__, _fw_python.ops)
_sys.modules.setdefault(_fw_python.ops.__name__ + ".audio_ops", _audio_ops)

from . import crf  # noqa: E402  (tf.contrib.crf: the linear-chain CRF of sequence taggers)
__all__.append("crf")

# tf.contrib.rnn beyond the core cells: stacked bidirectional RNNs, LayerNormBasicLSTMCell,
# the projection wrappers
from . import rnn_extra as _rnn_extra  # noqa: E402
for _rnn_name in _rnn_extra.__all__:
    setattr(rnn, _rnn_name, getattr(_rnn_extra, _rnn_name))
del _rnn_name
rnn.__doc__ += (" Also stack_bidirectional_rnn, stack_bidirectional_dynamic_rnn, LayerNormBasicLSTMCell, "
                "OutputProjectionWrapper and InputProjectionWrapper.")

from . import legacy_seq2seq  # noqa: E402  (tf.contrib.legacy_seq2seq: TF 1.x's unrolled seq2seq models)
__all__.append("legacy_seq2seq")
rnn.EmbeddingWrapper = _rnn_extra.EmbeddingWrapper

from . import image  # noqa: E402  (tf.contrib.image: transform, rotate, translate)
__all__.append("image")

# tf.contrib.training's create_train_op/train and slim.learning (contrib/train_ops.py)
from . import train_ops as _train_ops  # noqa: E402
for _train_name in ("create_train_op", "train", "add_gradients_summaries", "clip_gradient_norms",
                    "clip_gradient_norms_fn", "multiply_gradients"):
    setattr(training, _train_name, getattr(_train_ops, _train_name))
    training.__all__.append(_train_name)
del _train_name
slim.learning = _train_ops.learning
slim.__doc__ = slim.__doc__.replace("slim.learning and slim.nets are not provided", "slim.nets is not provided")


# tf.contrib.distributions: tf.distributions plus the vector distributions TF1 programs use
from ..nn import distributions as _dists  # noqa: E402
from ..nn.distributions import multivariate as _mv  # noqa: E402
distributions = _types.SimpleNamespace(**{n: getattr(_dists, n) for n in _dists.__all__},
                                       **{n: getattr(_mv, n) for n in _mv.__all__})
distributions.__doc__ = ("tf.contrib.distributions: tf.distributions' families and kl_divergence, plus "
                         "MultivariateNormalDiag/TriL/FullCovariance, OneHotCategorical, "
                         "RelaxedOneHotCategorical and ExpRelaxedOneHotCategorical.")
__all__.append("distributions")

# tf.contrib.data: tf.data.experimental under TF 1.x's contrib names, plus the deprecated helpers
from . import data as _contrib_data  # noqa: E402
data = _contrib_data.namespace
__all__.append("data")

# tf.contrib.training's evaluation loops and slim.evaluation (contrib/evaluation.py)
from . import evaluation as _evaluation  # noqa: E402
for _eval_name in ("get_or_create_eval_step", "StopAfterNEvalsHook", "SummaryAtEndHook", "wait_for_new_checkpoint",
                   "checkpoints_iterator", "evaluate_once", "evaluate_repeatedly"):
    setattr(training, _eval_name, getattr(_evaluation, _eval_name))
    training.__all__.append(_eval_name)
del _eval_name
slim.evaluation = _types.SimpleNamespace(evaluate_once=_evaluation.slim_evaluate_once,
                                         evaluation_loop=_evaluation.slim_evaluation_loop,
                                         wait_for_new_checkpoint=_evaluation.wait_for_new_checkpoint,
                                         checkpoints_iterator=_evaluation.checkpoints_iterator)
slim.evaluation.__doc__ = "tf.contrib.slim.evaluation: evaluate_once, evaluation_loop and the checkpoint waiters."

# tf.contrib.slim.nets (TF 1.x's reference networks) and slim.utils; also importable by the
# dotted names TF1 programs use (`from <tf>.contrib.slim.nets import resnet_v1`)
from . import nets as _nets  # noqa: E402
slim.nets = _nets
slim.utils = layers.utils
slim.__doc__ = slim.__doc__.replace("; slim.nets is not provided", "; slim.nets: alexnet, overfeat, vgg, resnet "
                                    "v1/v2 and inception v1-v3")
_slim_module = slim
_sys.modules.setdefault(_slim_module.__name__, _slim_module)
_sys.modules.setdefault(_slim_module.__name__ + ".nets", _nets)
for _net_name in _nets.__all__:
    if _net_name != "inception":
        _sys.modules.setdefault(f"{_slim_module.__name__}.nets.{_net_name}", getattr(_nets, _net_name))
del _net_name

# tf.contrib.learn: its datasets only (the MNIST reader of TF 1.x's tutorials), also under the
# dotted path `contrib.learn.python.learn.datasets`
from ..data import mnist_input as _mnist_input  # noqa: E402
_learn_datasets = _types.ModuleType(__name__ + ".learn.datasets", "tf.contrib.learn.datasets: mnist, base, "
                                    "load_dataset('mnist')")
_learn_datasets.mnist = _mnist_input
from . import learn_datasets as _learn_base  # noqa: E402  (datasets.base: the CSV loaders)
from . import learn_text as _learn_text  # noqa: E402  (preprocessing: VocabularyProcessor)
_learn_datasets.base = _learn_base
_learn_datasets.load_dataset = _mnist_input.load_dataset
learn = _types.ModuleType(__name__ + ".learn", "tf.contrib.learn: `datasets` (MNIST, the CSV loaders of "
                          "datasets.base), `preprocessing` (VocabularyProcessor), ModeKeys and TF 1.x's "
                          "Estimators (Estimator, DNN/Linear/DNNLinearCombined Classifier/Regressor, SKCompat, "
                          "RunConfig, Experiment, learn_runner, monitors, io, MetricSpec, ModelFnOps)")
learn.datasets = _learn_datasets
learn.preprocessing = _learn_text
learn.ModeKeys = _types.SimpleNamespace(TRAIN="train", EVAL="eval", INFER="infer")


def _learn_missing(name: str):
    raise AttributeError(f"tf.contrib.learn.{name} is not provided by collflow: it has datasets, preprocessing, "
                         f"ModeKeys and the Estimators (Estimator, the canned DNN/Linear/DNNLinearCombined "
                         f"models, SKCompat, Experiment, learn_runner, monitors, io); see dir(tf.contrib.learn)")


learn.__getattr__ = _learn_missing
# tf.contrib.learn's Estimators, Experiment, learn_runner, ... (contrib/learn_estimators.py)
from . import learn_estimators as _learn_estimators  # noqa: E402
for _learn_name in _learn_estimators.__all__:
    setattr(learn, _learn_name, getattr(_learn_estimators, _learn_name))
learn.python = _types.ModuleType(__name__ + ".learn.python")
learn.python.learn = _types.ModuleType(__name__ + ".learn.python.learn")
learn.python.learn.datasets = _learn_datasets
learn.python.learn.preprocessing = _learn_text
learn.python.learn.estimators = _learn_estimators
learn.python.learn.learn_io = learn.io

for _m in (learn, _learn_datasets, learn.python, learn.python.learn):
    _sys.modules.setdefault(_m.__name__, _m)
_sys.modules.setdefault(__name__ + ".learn.python.learn.datasets", _learn_datasets)
_sys.modules.setdefault(__name__ + ".learn.python.learn.datasets.mnist", _mnist_input)
_sys.modules.setdefault(__name__ + ".learn.datasets.mnist", _mnist_input)
for _m in (".learn.preprocessing", ".learn.python.learn.preprocessing"):
    _sys.modules.setdefault(__name__ + _m, _learn_text)
for _m in (".learn.datasets.base", ".learn.python.learn.datasets.base"):
    _sys.modules.setdefault(__name__ + _m, _learn_base)
del _m
__all__.append("learn")

# tf.contrib.tensorboard.plugins.projector: the embedding projector's config (word2vec tutorial)
from ..summary import projector as _projector  # noqa: E402
tensorboard = _types.ModuleType(__name__ + ".tensorboard", "tf.contrib.tensorboard: plugins.projector")
tensorboard.plugins = _types.ModuleType(__name__ + ".tensorboard.plugins", "tf.contrib.tensorboard.plugins")
tensorboard.plugins.projector = _projector
for _m in (tensorboard, tensorboard.plugins):
    _sys.modules.setdefault(_m.__name__, _m)
_sys.modules.setdefault(__name__ + ".tensorboard.plugins.projector", _projector)
del _m
__all__.append("tensorboard")

from . import predictor  # noqa: E402  (tf.contrib.predictor: from_saved_model, from_estimator)
__all__.append("predictor")

from . import distribute  # noqa: E402  (tf.contrib.distribute: the strategies, replicas = MPI ranks)
__all__.append("distribute")

# tf.contrib.stateless (TF 1.15's names of the stateless random ops) and contrib.framework's
# sort/argsort (tf.sort, tf.argsort before they moved to the core)
from ..graph.ops import stateless_random_ops as _stateless  # noqa: E402
from ..graph.ops.rearrange_ops import argsort as _argsort, sort as _sort  # noqa: E402
stateless = _types.SimpleNamespace(stateless_random_uniform=_stateless.stateless_uniform,
                                   stateless_random_normal=_stateless.stateless_normal,
                                   stateless_truncated_normal=_stateless.stateless_truncated_normal,
                                   stateless_multinomial=_stateless.stateless_multinomial)
stateless.__doc__ = ("tf.contrib.stateless: stateless_random_uniform, stateless_random_normal, "
                     "stateless_truncated_normal, stateless_multinomial (tf.random.stateless_*).")
__all__.append("stateless")
framework.sort, framework.argsort = _sort, _argsort
framework.__all__ += ["sort", "argsort"]

# tf.contrib.rnn's rarer cells (contrib/rnn_cells_more.py, rnn_cells_more2.py): HighwayWrapper,
# AttentionCellWrapper, CoupledInputForgetGateLSTMCell, LayerNormLSTMCell, NASCell, GLSTMCell,
# UGRNNCell, IntersectionRNNCell, IndRNNCell, IndyGRUCell, IndyLSTMCell, SRUCell, MinimalRNNCell,
# CFNCell, PhasedLSTMCell, TimeFreqLSTMCell, GridLSTMCell
from . import rnn_cells_more as _rnn_more, rnn_cells_more2 as _rnn_more2  # noqa: E402
for _rnn_more_mod in (_rnn_more, _rnn_more2):
    for _rnn_more_name in _rnn_more_mod.__all__:
        setattr(rnn, _rnn_more_name, getattr(_rnn_more_mod, _rnn_more_name))
del _rnn_more_mod, _rnn_more_name
rnn.__doc__ += (" Also TF 1.15's rarer cells: " + ", ".join(_rnn_more.__all__ + _rnn_more2.__all__) + ".")

# tf.contrib.feature_column (TF 1.15): the sequence feature columns and sequence_input_layer
from ..nn.feature_column import sequence_columns as _seq_fc  # noqa: E402
feature_column = _types.ModuleType(__name__ + ".feature_column",
                                   "tf.contrib.feature_column: " + ", ".join(_seq_fc.__all__) + ".")
for _seq_fc_name in _seq_fc.__all__:
    setattr(feature_column, _seq_fc_name, getattr(_seq_fc, _seq_fc_name))
feature_column.__all__ = list(_seq_fc.__all__)
_sys.modules.setdefault(feature_column.__name__, feature_column)
del _seq_fc_name
__all__.append("feature_column")

# tf.contrib.cudnn_rnn: CudnnLSTM/GRU/RNNTanh/RNNRelu on collflow's kernels, the compatible cells,
# checkpoints in TF's canonical layout; also under TF's dotted paths python.layers / python.ops.cudnn_rnn_ops
from . import cudnn_rnn  # noqa: E402
__all__.append("cudnn_rnn")
cudnn_rnn.python = _types.ModuleType(__name__ + ".cudnn_rnn.python", "tf.contrib.cudnn_rnn.python")
cudnn_rnn.python.layers = cudnn_rnn.python.ops = _types.ModuleType(
    __name__ + ".cudnn_rnn.python.ops", "tf.contrib.cudnn_rnn.python.ops")
cudnn_rnn.python.ops.cudnn_rnn_ops = cudnn_rnn.python.layers.cudnn_rnn = cudnn_rnn
for _m in (cudnn_rnn.python, cudnn_rnn.python.ops):
    _sys.modules.setdefault(_m.__name__, _m)
_sys.modules.setdefault(__name__ + ".cudnn_rnn.python.layers", cudnn_rnn.python.layers)
for _m in (".cudnn_rnn.python.ops.cudnn_rnn_ops", ".cudnn_rnn.python.layers.cudnn_rnn"):
    _sys.modules.setdefault(__name__ + _m, cudnn_rnn)
del _m
