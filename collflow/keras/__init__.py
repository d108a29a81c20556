"""tf.keras as TensorFlow 1.x's graph mode has it: layers called on tensors build the graph,
Model / Sequential compile, fit, evaluate and predict in Keras's session.

    model = tf.keras.Sequential([tf.keras.layers.Dense(64, activation="relu", input_shape=(32,)),
                                 tf.keras.layers.Dense(10, activation="softmax")])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(x, y, epochs=5, batch_size=32)

What is here (docs/tf1_compat.md has the list): the common layers (Dense, Conv1D/2D, the
pooling layers, Flatten, Dropout, BatchNormalization, Activation, Embedding, Reshape, Lambda,
Concatenate, Add, global pooling, Input, SimpleRNN, LSTM, GRU, ...), Sequential, functional and subclassed models,
the Keras optimizers, losses, metrics, activations, regularizers and callbacks (History,
EarlyStopping, LambdaCallback, ModelCheckpoint of weights), backend's session helpers, and
weights and whole models (model.save / load_model, the optimizer's state included) in Keras's
HDF5 layout, masks through the recurrent layers, and estimator.model_to_estimator.
Recurrent dropout and stateful RNNs are not.
"""
import types as _types

import numpy as _np

from . import backend, callbacks  # noqa: F401
from . import layers as _layers_module
from . import losses as _losses_module
from . import optimizers as _optimizers_module
from . import recurrent as _recurrent_module
from . import layers_more as _layers_more_module
from . import base_layer as _base_layer_module
from . import data_adapter as _data_adapter
from . import saving as _saving
from . import preprocessing as _preprocessing
from . import initializers as _keras_initializers
from .engine import Model, Sequential  # noqa: F401
from .layers import Input  # noqa: F401

layers = _types.SimpleNamespace(**{n: getattr(_layers_module, n) for n in _layers_module.__all__
                                   if n not in ("history_of", "node_of", "register_call", "mask_of", "set_mask",
                                                "input_layer_of")},
                                **{n: getattr(_recurrent_module, n) for n in _recurrent_module.__all__
                                   if n != "reset_model_states"},
                                **{n: getattr(_layers_more_module, n) for n in _layers_more_module.__all__},
                                Layer=_base_layer_module.Layer)
models = _types.SimpleNamespace(Model=Model, Sequential=Sequential, load_model=_saving.load_model,
                                save_model=_saving.save_model, model_from_json=_saving.model_from_json,
                                model_from_config=_saving.model_from_config)
optimizers = _types.SimpleNamespace(**{n: getattr(_optimizers_module, n) for n in _optimizers_module.__all__})
_LOSS_NAMES = ("mean_squared_error", "mean_absolute_error", "mean_absolute_percentage_error",
               "mean_squared_logarithmic_error", "categorical_crossentropy", "sparse_categorical_crossentropy",
               "binary_crossentropy", "hinge", "squared_hinge", "kullback_leibler_divergence", "poisson", "logcosh")
losses = _types.SimpleNamespace(**{n: getattr(_losses_module, n) for n in _LOSS_NAMES}, get=_losses_module.get,
                                mse=_losses_module.mean_squared_error, mae=_losses_module.mean_absolute_error)
metrics = _types.SimpleNamespace(**{n: getattr(_losses_module, n) for n in _LOSS_NAMES + (
    "categorical_accuracy", "sparse_categorical_accuracy", "binary_accuracy")})
activations = _types.SimpleNamespace(get=_losses_module.activation, **dict(_losses_module._ACTIVATIONS))
regularizers = _types.SimpleNamespace(l1=_losses_module.l1, l2=_losses_module.l2, l1_l2=_losses_module.l1_l2)
initializers = _keras_initializers
from . import constraints  # noqa: E402,F401  (tf.keras.constraints)
from . import datasets  # noqa: E402,F401  (tf.keras.datasets: mnist, cifar10, imdb, ...)
from . import applications  # noqa: E402,F401  (tf.keras.applications: VGG16, ResNet50, MobileNet, ...)


def _to_categorical(y, num_classes=None, dtype="float32"):
    """One-hot rows of integer labels (tf.keras.utils.to_categorical)."""
    y = _np.asarray(y, dtype=int)
    shape = y.shape
    if shape and shape[-1] == 1 and len(shape) > 1:
        shape = shape[:-1]
    y = y.ravel()
    n = int(num_classes or (y.max() + 1 if y.size else 0))
    out = _np.zeros((y.size, n), dtype=dtype)
    out[_np.arange(y.size), y] = 1
    return out.reshape(shape + (n,))


def _model_to_estimator(keras_model=None, keras_model_path=None, custom_objects=None, model_dir=None, config=None,
                        checkpoint_format="saver"):
    """tf.keras.estimator.model_to_estimator (keras/to_estimator.py; imported on use: it brings tf.estimator)."""
    from .to_estimator import model_to_estimator as _impl
    return _impl(keras_model, keras_model_path, custom_objects, model_dir, config, checkpoint_format)


_model_to_estimator.__name__ = "model_to_estimator"
estimator = _types.SimpleNamespace(model_to_estimator=_model_to_estimator)

utils = _types.SimpleNamespace(to_categorical=_to_categorical, Sequence=_data_adapter.Sequence)
preprocessing = _types.SimpleNamespace(
    sequence=_types.SimpleNamespace(pad_sequences=_preprocessing.pad_sequences),
    text=_types.SimpleNamespace(**{n: getattr(_preprocessing, n) for n in (
        "Tokenizer", "text_to_word_sequence", "one_hot", "tokenizer_from_json")}))

__all__ = ["layers", "models", "optimizers", "losses", "metrics", "activations", "regularizers", "initializers",
           "constraints",
           "callbacks", "backend", "utils", "preprocessing", "estimator", "Model", "Sequential", "Input",
           "datasets", "applications", "saving"]

# Recurrent layers and cells: RNN, the cells, StackedRNNCells, AbstractRNNCell, ConvLSTM2D, CuDNNLSTM/GRU
# (keras/rnn_layer.py, rnn_cells.py, conv_recurrent.py)
from . import rnn_cells as _rnn_cells_module  # noqa: E402
from . import rnn_layer as _rnn_layer_module  # noqa: E402
from . import conv_recurrent as _conv_recurrent_module  # noqa: E402
for _rnn_mod in (_rnn_cells_module, _rnn_layer_module, _conv_recurrent_module):
    for _n in _rnn_mod.__all__:
        setattr(layers, _n, getattr(_rnn_mod, _n))

# Utilities, callbacks, preprocessing: utils, callbacks, models, preprocessing, saving (keras/generic_utils.py,
# data_utils.py, callbacks_more.py, models_utils.py, sequence_utils.py, image_preprocessing.py)
from . import generic_utils as _generic_utils  # noqa: E402
from . import data_utils as _data_utils  # noqa: E402
from . import callbacks_more as _callbacks_more  # noqa: E402
from . import models_utils as _models_utils  # noqa: E402
from . import sequence_utils as _sequence_utils  # noqa: E402
from . import image_preprocessing as _image_preprocessing  # noqa: E402
for _n in _generic_utils.__all__:
    setattr(utils, _n, getattr(_generic_utils, _n))
    setattr(_saving, _n, getattr(_generic_utils, _n))  # tf.keras.saving's (tf_keras 2.x) names
for _n in ("get_file", "SequenceEnqueuer", "OrderedEnqueuer", "GeneratorEnqueuer", "plot_model", "model_to_dot"):
    setattr(utils, _n, getattr(_data_utils, _n))
for _n in ("array_to_img", "img_to_array", "load_img", "save_img"):
    setattr(utils, _n, getattr(_image_preprocessing, _n))
utils.pad_sequences = _preprocessing.pad_sequences
utils.convert_all_kernels_in_model = _models_utils.convert_all_kernels_in_model
utils.multi_gpu_model = _models_utils.multi_gpu_model
utils.legacy = _types.SimpleNamespace(serialize_keras_object=_generic_utils.serialize_keras_object,
                                      deserialize_keras_object=_generic_utils.deserialize_keras_object)
for _n in _callbacks_more.__all__:
    setattr(callbacks, _n, getattr(_callbacks_more, _n))
models.clone_model = _models_utils.clone_model
models.model_from_yaml = _models_utils.model_from_yaml
for _n in ("TimeseriesGenerator", "make_sampling_table", "skipgrams"):
    setattr(preprocessing.sequence, _n, getattr(_sequence_utils, _n))
preprocessing.text.hashing_trick = _sequence_utils.hashing_trick
preprocessing.image = _types.SimpleNamespace(**{n: getattr(_image_preprocessing, n)
                                                for n in _image_preprocessing.__all__})

# optimizers, schedules, regularizers, backend additions (optimizers_more.py, schedules.py, regularizer_classes.py,
# backend_more.py, serialization_more.py)
from . import optimizers_more as _optimizers_more  # noqa: E402
from . import schedules as _schedules  # noqa: E402
from . import regularizer_classes as _regularizers_module  # noqa: E402
from . import backend_more as _backend_more  # noqa: E402
from . import serialization_more as _serialization_more  # noqa: E402
for _n in _optimizers_more.__all__:
    setattr(optimizers, _n, getattr(_optimizers_more, _n))
optimizers.schedules = _types.SimpleNamespace(**{_n: getattr(_schedules, _n) for _n in _schedules.__all__})
optimizers.legacy = _types.SimpleNamespace(**{_n: getattr(optimizers, _n) for _n in (  # tf_keras 2.x's name
    "Optimizer", "SGD", "Adam", "RMSprop", "Adagrad", "Adadelta", "Adamax", "Nadam", "Ftrl")})
for _n in _regularizers_module.__all__:
    setattr(regularizers, _n, getattr(_regularizers_module, _n))
for _n in _backend_more.__all__:
    setattr(backend, _n, getattr(_backend_more, _n))
activations.serialize = _serialization_more.serialize_activation
activations.swish, activations.mish = _serialization_more.swish, _serialization_more.mish
activations.deserialize = _serialization_more.deserialize_activation
initializers.serialize = _serialization_more.serialize_initializer
initializers.deserialize = _serialization_more.deserialize_initializer
from . import radial_constraint as _radial_constraint  # noqa: E402
for _n in _radial_constraint.__all__:
    setattr(constraints, _n, getattr(_radial_constraint, _n))

# Losses and metrics: Loss / Metric classes, more functions, get/serialize/deserialize (keras/loss_classes.py,
# metric_classes.py, metric_confusion.py)
from . import loss_classes as _loss_classes  # noqa: E402
from . import metric_classes as _metric_classes  # noqa: E402
from . import metric_confusion as _metric_confusion  # noqa: E402
for _n in _loss_classes.__all__:
    if _n not in ("squeeze_or_expand_dimensions", "compute_weighted_loss", "reduce_weighted_loss",
                  "LossFunctionWrapper"):
        setattr(losses, _n, getattr(_loss_classes, _n))
for _n in ("binary_crossentropy", "categorical_crossentropy"):  # with label_smoothing (TF 1.15)
    setattr(losses, _n, getattr(_loss_classes, _n))
    setattr(metrics, _n, getattr(_loss_classes, _n))
for _n in [n for n in _metric_classes.__all__ if n not in ("cosine_proximity_metric", "div_no_nan",
                                                            "broadcast_or_reduce", "accuracy")] + \
        [n for n in _metric_confusion.__all__ if n != "update_confusion_matrix_variables"]:
    setattr(metrics, _n, getattr(_metric_classes, _n, None) or getattr(_metric_confusion, _n))
for _n in ("kld", "KLD", "kl_divergence", "MSE", "MAE", "MAPE", "MSLE", "mape", "msle", "log_cosh", "cosine",
           "cosine_proximity"):  # TF 1.15's v1 tf.keras.metrics.cosine* are the loss (minus the cosine)
    setattr(metrics, _n, getattr(_loss_classes, _n))
metrics.mse, metrics.mae = _losses_module.mean_squared_error, _losses_module.mean_absolute_error
metrics.get, metrics.serialize, metrics.deserialize = (_metric_classes.get, _metric_classes.serialize,
                                                       _metric_classes.deserialize)
from . import focal_losses as _focal_losses  # noqa: E402  (tf_keras 2.x's focal cross-entropies)
for _n in _focal_losses.__all__:
    setattr(losses, _n, getattr(_focal_losses, _n))
metrics.binary_focal_crossentropy = _focal_losses.binary_focal_crossentropy
metrics.categorical_focal_crossentropy = _focal_losses.categorical_focal_crossentropy
from . import iou_metrics as _iou_metrics  # noqa: E402  (tf_keras 2.x's IoU, BinaryIoU, OneHot(Mean)IoU)
from . import score_metrics as _score_metrics  # noqa: E402  (tf_keras 2.x's R2Score, FBetaScore, F1Score)
for _n in _iou_metrics.__all__ + _score_metrics.__all__:
    setattr(metrics, _n, getattr(_iou_metrics, _n, None) or getattr(_score_metrics, _n))

# Other layers: Attention, Dot, 3-D layers, LocallyConnected, SeparableConv1D, aliases, Wrapper, InputSpec,
# DenseFeatures, serialize/deserialize (keras/layers_attention.py, layers_other.py, layers_local.py, layers_wrap.py)
from . import layers_attention as _layers_attention  # noqa: E402
from . import layers_other as _layers_other  # noqa: E402
from . import layers_local as _layers_local  # noqa: E402
from . import layers_wrap as _layers_wrap  # noqa: E402
from . import layers_v2 as _layers_v2  # noqa: E402  (tf_keras 2.x-only names)
from . import layers_v2_more as _layers_v2_more  # noqa: E402
for _other_mod in (_layers_attention, _layers_other, _layers_local, _layers_wrap, _layers_v2, _layers_v2_more):
    for _n in _other_mod.__all__:
        setattr(layers, _n, getattr(_other_mod, _n))
layers.experimental = _types.SimpleNamespace(preprocessing=_types.SimpleNamespace(
    **{_n: getattr(_layers_v2, _n) for _n in ("Rescaling", "CenterCrop", "Resizing", "CategoryEncoding", "Hashing",
                                              "Discretization", "Normalization")}), EinsumDense=_layers_v2_more.EinsumDense)

# tf.keras.experimental (TF 1.15): SequenceFeatures (keras/sequence_features.py) and the cosine
# learning-rate schedules TF 1.15 had there
from .sequence_features import SequenceFeatures as _SequenceFeatures  # noqa: E402
experimental = _types.SimpleNamespace(SequenceFeatures=_SequenceFeatures, CosineDecay=_schedules.CosineDecay,
                                      CosineDecayRestarts=_schedules.CosineDecayRestarts)
experimental.__doc__ = "tf.keras.experimental: SequenceFeatures, CosineDecay, CosineDecayRestarts."
__all__.append("experimental")

# tf.keras.mixed_precision.experimental (TF 1.15): Policy, set_policy, LossScaleOptimizer (keras/mixed_precision.py)
from . import mixed_precision  # noqa: E402,F401
__all__ += ["mixed_precision"]
