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
                                   if n not in ("history_of", "node_of", "register_call", "mask_of", "set_mask")},
                                **{n: getattr(_recurrent_module, n) for n in _recurrent_module.__all__},
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
           "callbacks", "backend", "utils", "preprocessing", "estimator", "Model", "Sequential", "Input"]
