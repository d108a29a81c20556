"""tf.keras.applications.inception_v3: InceptionV3 (Szegedy et al., CVPR 2016) with Keras's
layer names, so Keras's ImageNet weights load.  Inputs take 'tf' preprocessing.

Keras names most of this net's layers automatically (conv2d_N, batch_normalization_N, ...), so
the layers must be made in Keras's order: the blocks below are tables of branches, each a
sequence of steps, built branch by branch."""
from __future__ import annotations

from typing import Any, Optional, Sequence

from .. import backend as K
from .. import layers as _layers
from . import imagenet_utils as _iu

__all__ = ["InceptionV3", "preprocess_input", "decode_predictions"]

_BASE = "https://storage.googleapis.com/tensorflow/keras-applications/inception_v3/"
_HASHES = ("9a0d58056eeedaa3f26cb7ebd46da564", "bcbd6486424b2319ff4ef7d526e38f63")


def _c(filters: int, rows: int, cols: int, stride: int = 1, padding: str = "same") -> tuple:
    """A conv2d_bn step."""
    return ("conv", filters, rows, cols, stride, padding)


_AVG = ("avg",)          # 3x3/1 'same' average pool
_MAX = ("max",)          # 3x3/2 'valid' max pool


def _split(name: Optional[str]) -> tuple:
    """1x3 and 3x1 convolutions of the same input, concatenated (the 8x8 blocks' fan-out)."""
    return ("split", name)


def _block_a(pool_filters: int) -> list:
    return [[_c(64, 1, 1)], [_c(48, 1, 1), _c(64, 5, 5)], [_c(64, 1, 1), _c(96, 3, 3), _c(96, 3, 3)],
            [_AVG, _c(pool_filters, 1, 1)]]


def _block_c(c7: int) -> list:
    return [[_c(192, 1, 1)], [_c(c7, 1, 1), _c(c7, 1, 7), _c(192, 7, 1)],
            [_c(c7, 1, 1), _c(c7, 7, 1), _c(c7, 1, 7), _c(c7, 7, 1), _c(192, 1, 7)], [_AVG, _c(192, 1, 1)]]


def _block_e(i: int) -> list:
    return [[_c(320, 1, 1)], [_c(384, 1, 1), _split(f"mixed9_{i}")],
            [_c(448, 1, 1), _c(384, 3, 3), _split(None)], [_AVG, _c(192, 1, 1)]]


# (name of the block's concatenation, branches)
_BLOCKS = [("mixed0", _block_a(32)), ("mixed1", _block_a(64)), ("mixed2", _block_a(64)),
           ("mixed3", [[_c(384, 3, 3, 2, "valid")], [_c(64, 1, 1), _c(96, 3, 3), _c(96, 3, 3, 2, "valid")], [_MAX]]),
           ("mixed4", _block_c(128)), ("mixed5", _block_c(160)), ("mixed6", _block_c(160)), ("mixed7", _block_c(192)),
           ("mixed8", [[_c(192, 1, 1), _c(320, 3, 3, 2, "valid")],
                       [_c(192, 1, 1), _c(192, 1, 7), _c(192, 7, 1), _c(192, 3, 3, 2, "valid")], [_MAX]]),
           ("mixed9", _block_e(0)), ("mixed10", _block_e(1))]


def conv2d_bn(x: Any, filters: int, num_row: int, num_col: int, padding: str = "same", strides: Any = (1, 1),
              name: Optional[str] = None) -> Any:
    """Convolution without bias -> batch norm without scale -> ReLU (named name_conv,
    name_bn, name when a name is given)."""
    x = _layers.Conv2D(filters, (num_row, num_col), strides=strides, padding=padding, use_bias=False,
                       name=None if name is None else name + "_conv")(x)
    x = _layers.BatchNormalization(axis=_iu.channel_axis(), scale=False,
                                   name=None if name is None else name + "_bn")(x)
    return _layers.Activation("relu", name=name)(x)


def _step(x: Any, step: tuple) -> Any:
    kind = step[0]
    if kind == "conv":
        _, filters, rows, cols, stride, padding = step
        return conv2d_bn(x, filters, rows, cols, padding=padding, strides=(stride, stride))
    if kind == "avg":
        return _layers.AveragePooling2D((3, 3), strides=(1, 1), padding="same")(x)
    if kind == "max":
        return _layers.MaxPooling2D((3, 3), strides=(2, 2))(x)
    a, b = conv2d_bn(x, 384, 1, 3), conv2d_bn(x, 384, 3, 1)
    return _layers.concatenate([a, b], axis=_iu.channel_axis(), name=step[1])


def _branches(x: Any, branches: Sequence[Sequence[tuple]], name: str) -> Any:
    outs = []
    for steps in branches:
        y = x
        for step in steps:
            y = _step(y, step)
        outs.append(y)
    return _layers.concatenate(outs, axis=_iu.channel_axis(), name=name)


def InceptionV3(include_top: bool = True, weights: Any = "imagenet", input_tensor: Any = None,  # noqa: N802
                input_shape: Any = None, pooling: Optional[str] = None, classes: int = 1000,
                classifier_activation: Any = "softmax") -> Any:
    """The InceptionV3 model (default input 299x299, at least 75x75)."""
    _iu.check_weights(weights, include_top, classes, "inception_v3")
    input_shape = _iu.obtain_input_shape(input_shape, default_size=299, min_size=75,
                                         data_format=K.image_data_format(), require_flatten=include_top,
                                         weights=weights)
    img_input = _iu.image_input(input_tensor, input_shape)
    x = img_input
    for step in (_c(32, 3, 3, 2, "valid"), _c(32, 3, 3, 1, "valid"), _c(64, 3, 3), _MAX, _c(80, 1, 1, 1, "valid"),
                 _c(192, 3, 3, 1, "valid"), _MAX):
        x = _step(x, step)
    for name, branches in _BLOCKS:
        x = _branches(x, branches, name)
    if include_top:
        x = _layers.GlobalAveragePooling2D(name="avg_pool")(x)
        x = _iu.dense_classifier(x, classes, classifier_activation, weights)
    else:
        x = _iu.pooled(x, pooling)

    def imagenet_file() -> tuple:
        fname = f"inception_v3_weights_tf_dim_ordering_tf_kernels{'' if include_top else '_notop'}.h5"
        return fname, _BASE + fname, _HASHES[0 if include_top else 1]
    return _iu.finish(img_input, input_tensor, x, "inception_v3", weights, imagenet_file)


preprocess_input, decode_predictions = _iu.model_functions("tf", "InceptionV3")
