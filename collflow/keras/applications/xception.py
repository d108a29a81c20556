"""tf.keras.applications.xception: Xception (Chollet, CVPR 2017) with Keras's layer names, so
Keras's ImageNet weights load.  Inputs take 'tf' preprocessing.

The residual projections and the adds are named automatically by Keras (conv2d_N,
batch_normalization_N, add_N), so they are made in Keras's order: each downsampling block's
projection before its separable convolutions."""
from __future__ import annotations

from typing import Any, Optional

from .. import backend as K
from .. import layers as _layers
from ..layers_more import SeparableConv2D
from . import imagenet_utils as _iu

__all__ = ["Xception", "preprocess_input", "decode_predictions"]

_BASE = "https://storage.googleapis.com/tensorflow/keras-applications/xception/"
_HASHES = ("0a58e3b7378bc2990ea3b43d5981f1f6", "b0042744bf5b25fce3cb969f33bebb97")
# downsampling blocks: (block number, filters of the first and second separable convolutions)
_ENTRY = ((2, 128, 128), (3, 256, 256), (4, 728, 728))
_EXIT = (13, 728, 1024)
_MIDDLE = range(5, 13)   # the eight 728-wide residual blocks


def _bn(x: Any, name: Optional[str] = None) -> Any:
    return _layers.BatchNormalization(axis=_iu.channel_axis(), name=name)(x)


def _sep_bn(x: Any, filters: int, name: str) -> Any:
    x = SeparableConv2D(filters, (3, 3), padding="same", use_bias=False, name=name)(x)
    return _bn(x, name + "_bn")


def _relu(x: Any, name: str) -> Any:
    return _layers.Activation("relu", name=name)(x)


def _down_block(x: Any, block: int, filters1: int, filters2: int, first_act: bool) -> Any:
    """Two separable convolutions and a strided max pool, plus a strided 1x1 projection of the
    input (block 2 opens without a ReLU: its input was just activated)."""
    p = f"block{block}"
    residual = _bn(_layers.Conv2D(filters2, (1, 1), strides=(2, 2), padding="same", use_bias=False)(x))
    if first_act:
        x = _relu(x, p + "_sepconv1_act")
    x = _sep_bn(x, filters1, p + "_sepconv1")
    x = _sep_bn(_relu(x, p + "_sepconv2_act"), filters2, p + "_sepconv2")
    x = _layers.MaxPooling2D((3, 3), strides=(2, 2), padding="same", name=p + "_pool")(x)
    return _layers.add([x, residual])


def _middle_block(x: Any, block: int) -> Any:
    """Three ReLU + separable convolution steps added to the identity."""
    residual = x
    for i in (1, 2, 3):
        x = _sep_bn(_relu(x, f"block{block}_sepconv{i}_act"), 728, f"block{block}_sepconv{i}")
    return _layers.add([x, residual])


def Xception(include_top: bool = True, weights: Any = "imagenet", input_tensor: Any = None,  # noqa: N802
             input_shape: Any = None, pooling: Optional[str] = None, classes: int = 1000,
             classifier_activation: Any = "softmax") -> Any:
    """The Xception model (default input 299x299, at least 71x71)."""
    _iu.check_weights(weights, include_top, classes, "resnet")   # worded as the ResNets' are
    input_shape = _iu.obtain_input_shape(input_shape, default_size=299, min_size=71,
                                         data_format=K.image_data_format(), require_flatten=include_top,
                                         weights=weights)
    img_input = _iu.image_input(input_tensor, input_shape)
    x = _layers.Conv2D(32, (3, 3), strides=(2, 2), use_bias=False, name="block1_conv1")(img_input)
    x = _relu(_bn(x, "block1_conv1_bn"), "block1_conv1_act")
    x = _layers.Conv2D(64, (3, 3), use_bias=False, name="block1_conv2")(x)
    x = _relu(_bn(x, "block1_conv2_bn"), "block1_conv2_act")
    for block, f1, f2 in _ENTRY:
        x = _down_block(x, block, f1, f2, first_act=block != 2)
    for block in _MIDDLE:
        x = _middle_block(x, block)
    x = _down_block(x, *_EXIT, first_act=True)
    x = _relu(_sep_bn(x, 1536, "block14_sepconv1"), "block14_sepconv1_act")
    x = _relu(_sep_bn(x, 2048, "block14_sepconv2"), "block14_sepconv2_act")
    if include_top:
        x = _layers.GlobalAveragePooling2D(name="avg_pool")(x)
        x = _iu.dense_classifier(x, classes, classifier_activation, weights)
    else:
        x = _iu.pooled(x, pooling)

    def imagenet_file() -> tuple:
        fname = f"xception_weights_tf_dim_ordering_tf_kernels{'' if include_top else '_notop'}.h5"
        return fname, _BASE + fname, _HASHES[0 if include_top else 1]
    return _iu.finish(img_input, input_tensor, x, "xception", weights, imagenet_file)


preprocess_input, decode_predictions = _iu.model_functions("tf", "Xception")
