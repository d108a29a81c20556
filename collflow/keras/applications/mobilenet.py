"""tf.keras.applications.mobilenet: MobileNet (Howard et al., 2017) with Keras's layer names,
so Keras's ImageNet weights load; width multiplier `alpha`, `depth_multiplier` of the
depthwise convolutions.  Inputs take 'tf' preprocessing (scaled to [-1, 1])."""
from __future__ import annotations

import logging
from typing import Any, Optional

from .. import backend as K
from .. import layers as _layers
from ..layers_more import DepthwiseConv2D, ReLU, ZeroPadding2D
from . import imagenet_utils as _iu

__all__ = ["MobileNet", "preprocess_input", "decode_predictions"]

BASE_WEIGHT_PATH = "https://storage.googleapis.com/tensorflow/keras-applications/mobilenet/"
_SIZES = (128, 160, 192, 224)            # input sizes ImageNet weights exist for
_ALPHA_TEXT = {1.0: "1_0", 0.75: "7_5", 0.5: "5_0", 0.25: "2_5"}
# (pointwise filters, stride) of depthwise-separable blocks 1..13
_BLOCKS = ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1), (512, 1), (512, 1), (512, 1),
           (512, 1), (1024, 2), (1024, 1))


def _separable_block(x: Any, filters: int, alpha: float, depth_multiplier: int, stride: int, block_id: int) -> Any:
    """3x3 depthwise (a strided one padded bottom/right, then 'valid', as Keras) -> BN ->
    ReLU6 -> 1x1 pointwise to filters*alpha -> BN -> ReLU6."""
    axis = _iu.channel_axis()
    if stride != 1:
        x = ZeroPadding2D(((0, 1), (0, 1)), name=f"conv_pad_{block_id}")(x)
    x = DepthwiseConv2D((3, 3), padding="same" if stride == 1 else "valid", depth_multiplier=depth_multiplier,
                        strides=(stride, stride), use_bias=False, name=f"conv_dw_{block_id}")(x)
    x = _layers.BatchNormalization(axis=axis, name=f"conv_dw_{block_id}_bn")(x)
    x = ReLU(6.0, name=f"conv_dw_{block_id}_relu")(x)
    x = _layers.Conv2D(int(filters * alpha), (1, 1), padding="same", use_bias=False, strides=(1, 1),
                       name=f"conv_pw_{block_id}")(x)
    x = _layers.BatchNormalization(axis=axis, name=f"conv_pw_{block_id}_bn")(x)
    return ReLU(6.0, name=f"conv_pw_{block_id}_relu")(x)


def _spatial(shape: Any) -> tuple:
    return (shape[1], shape[2]) if K.image_data_format() == "channels_first" else (shape[0], shape[1])


def MobileNet(input_shape: Any = None, alpha: float = 1.0, depth_multiplier: int = 1,  # noqa: N802
              dropout: float = 1e-3, include_top: bool = True, weights: Any = "imagenet", input_tensor: Any = None,
              pooling: Optional[str] = None, classes: int = 1000, classifier_activation: Any = "softmax",
              **kwargs: Any) -> Any:
    """The MobileNet model: a strided 3x3 convolution, 13 depthwise-separable blocks, and a
    1x1-convolution classifier (after dropout) or the optional pooling."""
    if kwargs:
        raise ValueError(f"Unknown argument(s): {(kwargs,)}")
    _iu.check_weights(weights, include_top, classes, "mobilenet")
    default_size = 224
    if input_shape is not None:
        rows, cols = _spatial(input_shape)
        if rows == cols and rows in _SIZES:
            default_size = rows
    input_shape = _iu.obtain_input_shape(input_shape, default_size=default_size, min_size=32,
                                         data_format=K.image_data_format(), require_flatten=include_top,
                                         weights=weights)
    rows, cols = _spatial(input_shape)
    if weights == "imagenet":
        if depth_multiplier != 1:
            raise ValueError("If imagenet weights are being loaded, depth multiplier must be 1.  "
                             f"Received depth_multiplier={depth_multiplier}")
        if alpha not in _ALPHA_TEXT:
            raise ValueError("If imagenet weights are being loaded, alpha can be one of`0.25`, `0.50`, `0.75` or "
                             f"`1.0` only.  Received alpha={alpha}")
        if rows != cols or rows not in _SIZES:
            rows = 224
            logging.warning("`input_shape` is undefined or non-square, or `rows` is not in [128, 160, 192, 224]. "
                            "Weights for input shape (224, 224) will be loaded as the default.")
    img_input = _iu.image_input(input_tensor, input_shape)
    axis = _iu.channel_axis()
    x = _layers.Conv2D(int(32 * alpha), (3, 3), padding="same", use_bias=False, strides=(2, 2),
                       name="conv1")(img_input)
    x = ReLU(6.0, name="conv1_relu")(_layers.BatchNormalization(axis=axis, name="conv1_bn")(x))
    for block_id, (filters, stride) in enumerate(_BLOCKS, start=1):
        x = _separable_block(x, filters, alpha, depth_multiplier, stride, block_id)
    if include_top:
        x = _layers.GlobalAveragePooling2D(keepdims=True)(x)
        x = _layers.Dropout(dropout, name="dropout")(x)
        x = _layers.Conv2D(classes, (1, 1), padding="same", name="conv_preds")(x)
        x = _layers.Reshape((classes,), name="reshape_2")(x)
        _iu.validate_activation(classifier_activation, weights)
        x = _layers.Activation(classifier_activation, name="predictions")(x)
    else:
        x = _iu.pooled(x, pooling)

    def imagenet_file() -> tuple:
        fname = f"mobilenet_{_ALPHA_TEXT[alpha]}_{rows}_tf{'' if include_top else '_no_top'}.h5"
        return fname, BASE_WEIGHT_PATH + fname, None   # Keras gives no hash for these files
    return _iu.finish(img_input, input_tensor, x, f"mobilenet_{alpha:0.2f}_{rows}", weights, imagenet_file)


preprocess_input, decode_predictions = _iu.model_functions("tf", "MobileNet")
