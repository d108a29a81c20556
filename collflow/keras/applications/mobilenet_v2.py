"""tf.keras.applications.mobilenet_v2: MobileNetV2 (Sandler et al., CVPR 2018) with Keras's
layer names, so Keras's ImageNet weights load; width multiplier `alpha`.  Inputs take 'tf'
preprocessing (scaled to [-1, 1])."""
from __future__ import annotations

import logging
from typing import Any, Optional

from .. import backend as K
from .. import layers as _layers
from ..layers_more import DepthwiseConv2D, ReLU, ZeroPadding2D
from . import imagenet_utils as _iu

__all__ = ["MobileNetV2", "preprocess_input", "decode_predictions"]

BASE_WEIGHT_PATH = "https://storage.googleapis.com/tensorflow/keras-applications/mobilenet_v2/"
_SIZES = (96, 128, 160, 192, 224)       # input sizes ImageNet weights exist for
_ALPHAS = (0.35, 0.50, 0.75, 1.0, 1.3, 1.4)
# (output filters, first stride, expansion, repeats) of the inverted-residual stages; the
# blocks are numbered 0.. across stages
_STAGES = ((16, 1, 1, 1), (24, 2, 6, 2), (32, 2, 6, 3), (64, 2, 6, 4), (96, 1, 6, 3), (160, 2, 6, 3),
           (320, 1, 6, 1))


def _make_divisible(v: float, divisor: int, min_value: Optional[int] = None) -> int:
    """v rounded to the nearest multiple of divisor, at least min_value (divisor) and never
    more than 10% below v."""
    min_value = divisor if min_value is None else min_value
    out = max(min_value, int(v + divisor / 2) // divisor * divisor)
    return out + divisor if out < 0.9 * v else out


def _bn(x: Any, name: str) -> Any:
    return _layers.BatchNormalization(axis=_iu.channel_axis(), epsilon=1e-3, momentum=0.999, name=name)(x)


def _inverted_residual(inputs: Any, expansion: int, stride: int, alpha: float, filters: int, block_id: int) -> Any:
    """1x1 expansion (not in block 0) -> 3x3 depthwise (strided ones padded by correct_pad,
    then 'valid') -> linear 1x1 projection, added to the input when shapes allow."""
    in_channels = K.int_shape(inputs)[_iu.channel_axis()]
    out_channels = _make_divisible(int(filters * alpha), 8)
    prefix = f"block_{block_id}_" if block_id else "expanded_conv_"
    x = inputs
    if block_id:
        x = _layers.Conv2D(expansion * in_channels, kernel_size=1, padding="same", use_bias=False, activation=None,
                           name=prefix + "expand")(x)
        x = ReLU(6.0, name=prefix + "expand_relu")(_bn(x, prefix + "expand_BN"))
    if stride == 2:
        x = ZeroPadding2D(padding=_iu.correct_pad(x, 3), name=prefix + "pad")(x)
    x = DepthwiseConv2D(kernel_size=3, strides=stride, activation=None, use_bias=False,
                        padding="same" if stride == 1 else "valid", name=prefix + "depthwise")(x)
    x = ReLU(6.0, name=prefix + "depthwise_relu")(_bn(x, prefix + "depthwise_BN"))
    x = _layers.Conv2D(out_channels, kernel_size=1, padding="same", use_bias=False, activation=None,
                       name=prefix + "project")(x)
    x = _bn(x, prefix + "project_BN")
    if in_channels == out_channels and stride == 1:
        return _layers.Add(name=prefix + "add")([inputs, x])
    return x


def _rows_cols(shape: Any, batch: bool) -> tuple:
    """The spatial sizes of a shape (with or without its batch axis)."""
    i = (2 if K.image_data_format() == "channels_first" else 1) - (0 if batch else 1)
    return shape[i], shape[i + 1]


def _default_size(input_shape: Any, input_tensor: Any) -> int:
    """224, or the square input size (given or the Keras input tensor's) weights exist for;
    and Keras's checks that input_shape and input_tensor agree."""
    if input_tensor is not None:
        try:
            keras_tensor = K.is_keras_tensor(input_tensor)
        except ValueError:
            raise ValueError(f"input_tensor must be a valid TF-Keras tensor type; Received {input_tensor} of "
                             f"type {type(input_tensor)}") from None
        if input_shape is not None:
            if not keras_tensor:
                raise ValueError(f"input_tensor is not a TF-Keras tensor; Received `input_tensor={input_tensor}`")
            if K.image_data_format() == "channels_first":
                if K.int_shape(input_tensor)[1] != input_shape[1]:
                    raise ValueError("input_shape[1] must equal shape(input_tensor)[1] when `image_data_format` "
                                     f"is `channels_first`; Received `input_tensor.shape={input_tensor.shape}`, "
                                     f"`input_shape={input_shape}`")
            elif K.int_shape(input_tensor)[2] != input_shape[1]:
                raise ValueError("input_tensor.shape[2] must equal input_shape[1]; Received "
                                 f"`input_tensor.shape={input_tensor.shape}`, `input_shape={input_shape}`")
        elif not keras_tensor:
            return 224
        else:
            rows, cols = _rows_cols(K.int_shape(input_tensor), True)
            return rows if rows == cols and rows in _SIZES else 224
    if input_shape is None:
        return 224
    rows, cols = _rows_cols(input_shape, False)
    return rows if rows == cols and rows in _SIZES else 224


def MobileNetV2(input_shape: Any = None, alpha: float = 1.0, include_top: bool = True,  # noqa: N802
                weights: Any = "imagenet", input_tensor: Any = None, pooling: Optional[str] = None,
                classes: int = 1000, classifier_activation: Any = "softmax", **kwargs: Any) -> Any:
    """The MobileNetV2 model: a strided 3x3 convolution, 17 inverted-residual blocks, a 1x1
    convolution to 1280 (more when alpha > 1) channels, then the classifier or the pooling."""
    if kwargs:
        raise ValueError(f"Unknown argument(s): {kwargs}")
    _iu.check_weights(weights, include_top, classes, "mobilenet_v2")
    input_shape = _iu.obtain_input_shape(input_shape, default_size=_default_size(input_shape, input_tensor),
                                         min_size=32, data_format=K.image_data_format(),
                                         require_flatten=include_top, weights=weights)
    rows, cols = _rows_cols(input_shape, False)
    if weights == "imagenet":
        if alpha not in _ALPHAS:
            raise ValueError("If imagenet weights are being loaded, alpha must be one of `0.35`, `0.50`, `0.75`, "
                             f"`1.0`, `1.3` or `1.4` only; Received `alpha={alpha}`")
        if rows != cols or rows not in _SIZES:
            rows = 224
            logging.warning("`input_shape` is undefined or non-square, or `rows` is not in [96, 128, 160, 192, "
                            "224]. Weights for input shape (224, 224) will be loaded as the default.")
    img_input = _iu.image_input(input_tensor, input_shape)
    x = _layers.Conv2D(_make_divisible(32 * alpha, 8), kernel_size=3, strides=(2, 2), padding="same",
                       use_bias=False, name="Conv1")(img_input)
    x = ReLU(6.0, name="Conv1_relu")(_bn(x, "bn_Conv1"))
    block_id = 0
    for filters, stride, expansion, repeats in _STAGES:
        for r in range(repeats):
            x = _inverted_residual(x, expansion, stride if r == 0 else 1, alpha, filters, block_id)
            block_id += 1
    last = _make_divisible(1280 * alpha, 8) if alpha > 1.0 else 1280
    x = _layers.Conv2D(last, kernel_size=1, use_bias=False, name="Conv_1")(x)
    x = ReLU(6.0, name="out_relu")(_bn(x, "Conv_1_bn"))
    if include_top:
        x = _layers.GlobalAveragePooling2D()(x)
        x = _iu.dense_classifier(x, classes, classifier_activation, weights)
    else:
        x = _iu.pooled(x, pooling)

    def imagenet_file() -> tuple:
        fname = (f"mobilenet_v2_weights_tf_dim_ordering_tf_kernels_{float(alpha)}_{rows}"
                 f"{'' if include_top else '_no_top'}.h5")
        return fname, BASE_WEIGHT_PATH + fname, None   # Keras gives no hash for these files
    return _iu.finish(img_input, input_tensor, x, f"mobilenetv2_{alpha:0.2f}_{rows}", weights, imagenet_file)


preprocess_input, decode_predictions = _iu.model_functions("tf", "MobileNetV2")
