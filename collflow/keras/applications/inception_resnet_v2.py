"""tf.keras.applications.inception_resnet_v2: Inception-ResNet v2 (Szegedy et al., AAAI 2017)
with Keras's layer names, so Keras's ImageNet weights load.  Inputs take 'tf' preprocessing.

Keras names most of this net's layers automatically (conv2d_N, batch_normalization_N,
activation_N, custom_scale_layer_N), so the layers are made in Keras's order: each block is a
table of branches, each branch a sequence of steps, built branch by branch."""
from __future__ import annotations

from typing import Any, Dict, Optional, Sequence

from .. import backend as K
from .. import layers as _layers
from ..base_layer import Layer
from ..generic_utils import register_keras_serializable
from . import imagenet_utils as _iu

__all__ = ["InceptionResNetV2", "preprocess_input", "decode_predictions", "CustomScaleLayer"]

BASE_WEIGHT_URL = "https://storage.googleapis.com/tensorflow/keras-applications/inception_resnet_v2/"
_HASHES = ("e693bd0210a403b3192acc6073ad2e96", "d19885ff4a710c122648d3b5c3b684e4")


def _c(filters: int, kernel: Any, stride: int = 1, padding: str = "same") -> tuple:
    """A conv2d_bn step (kernel: an int or [rows, cols])."""
    return ("conv", filters, kernel, stride, padding)


_AVG = ("avg",)          # 3x3/1 'same' average pool
_MAX = ("max",)          # 3x3/2 'valid' max pool
_C2 = dict(stride=2, padding="valid")

_STEM = (_c(32, 3, **_C2), _c(32, 3, padding="valid"), _c(64, 3), _MAX, _c(80, 1, padding="valid"),
         _c(192, 3, padding="valid"), _MAX)
# the reduction (and the first mixing) blocks: (name of the concatenation, branches)
_MIXED_5B = ("mixed_5b", [[_c(96, 1)], [_c(48, 1), _c(64, 5)], [_c(64, 1), _c(96, 3), _c(96, 3)], [_AVG, _c(64, 1)]])
_MIXED_6A = ("mixed_6a", [[_c(384, 3, **_C2)], [_c(256, 1), _c(256, 3), _c(384, 3, **_C2)], [_MAX]])
_MIXED_7A = ("mixed_7a", [[_c(256, 1), _c(384, 3, **_C2)], [_c(256, 1), _c(288, 3, **_C2)],
                          [_c(256, 1), _c(288, 3), _c(320, 3, **_C2)], [_MAX]])
# the residual blocks' branches, by block type (the TF-slim names Keras keeps)
_RESIDUAL = {
    "block35": [[_c(32, 1)], [_c(32, 1), _c(32, 3)], [_c(32, 1), _c(48, 3), _c(64, 3)]],
    "block17": [[_c(192, 1)], [_c(128, 1), _c(160, [1, 7]), _c(192, [7, 1])]],
    "block8": [[_c(192, 1)], [_c(192, 1), _c(224, [1, 3]), _c(256, [3, 1])]],
}
# the body after the stem: a mixing block, or (block type, repeats, residual scale)
_BODY = (_MIXED_5B, ("block35", 10, 0.17), _MIXED_6A, ("block17", 20, 0.1), _MIXED_7A, ("block8", 9, 0.2))


@register_keras_serializable()
class CustomScaleLayer(Layer):
    """inputs[0] + inputs[1] * scale: the scaled residual sum of an Inception-ResNet block."""

    def __init__(self, scale: float, **kwargs: Any):
        super().__init__(**kwargs)
        self.scale = scale

    def get_config(self) -> Dict[str, Any]:
        config = super().get_config()
        config["scale"] = self.scale
        return config

    def call(self, inputs: Any) -> Any:
        return inputs[0] + inputs[1] * self.scale

    def compute_output_shape(self, input_shape: Any) -> Any:
        return input_shape[0]


def conv2d_bn(x: Any, filters: int, kernel_size: Any, strides: Any = 1, padding: str = "same",
              activation: Any = "relu", use_bias: bool = False, name: Optional[str] = None) -> Any:
    """Convolution -> batch norm without scale (only when the convolution has no bias) ->
    activation (named name, name_bn, name_ac when a name is given)."""
    x = _layers.Conv2D(filters, kernel_size, strides=strides, padding=padding, use_bias=use_bias, name=name)(x)
    if not use_bias:
        x = _layers.BatchNormalization(axis=_iu.channel_axis(), scale=False,
                                       name=None if name is None else name + "_bn")(x)
    if activation is not None:
        x = _layers.Activation(activation, name=None if name is None else name + "_ac")(x)
    return x


def _step(x: Any, step: tuple) -> Any:
    kind = step[0]
    if kind == "conv":
        _, filters, kernel, stride, padding = step
        return conv2d_bn(x, filters, kernel, strides=stride, padding=padding)
    if kind == "avg":
        return _layers.AveragePooling2D(3, strides=1, padding="same")(x)
    return _layers.MaxPooling2D(3, strides=2, padding="valid")(x)


def _branches(x: Any, branches: Sequence[Sequence[tuple]], name: str) -> Any:
    outs = []
    for steps in branches:
        y = x
        for step in steps:
            y = _step(y, step)
        outs.append(y)
    return _layers.Concatenate(axis=_iu.channel_axis(), name=name)(outs)


def inception_resnet_block(x: Any, scale: float, block_type: str, block_idx: int, activation: Any = "relu") -> Any:
    """An Inception-ResNet block (A: 'block35', B: 'block17', C: 'block8'): its branches
    concatenated, projected back to the input's width by a 1x1 convolution with bias, added
    to the input times `scale`, then `activation` (none when None)."""
    if block_type not in _RESIDUAL:
        raise ValueError('Unknown Inception-ResNet block type. Expects "block35", "block17" or "block8", '
                         "but got: " + str(block_type))
    name = f"{block_type}_{block_idx}"
    mixed = _branches(x, _RESIDUAL[block_type], name + "_mixed")
    up = conv2d_bn(mixed, K.int_shape(x)[_iu.channel_axis()], 1, activation=None, use_bias=True, name=name + "_conv")
    x = CustomScaleLayer(scale)([x, up])
    if activation is not None:
        x = _layers.Activation(activation, name=name + "_ac")(x)
    return x


def InceptionResNetV2(include_top: bool = True, weights: Any = "imagenet", input_tensor: Any = None,  # noqa: N802
                      input_shape: Any = None, pooling: Optional[str] = None, classes: int = 1000,
                      classifier_activation: Any = "softmax", **kwargs: Any) -> Any:
    """The Inception-ResNet v2 model (default input 299x299, at least 75x75)."""
    if kwargs:
        raise ValueError(f"Unknown argument(s): {kwargs}")
    _iu.check_weights(weights, include_top, classes, "resnet")   # worded as the ResNets' are
    input_shape = _iu.obtain_input_shape(input_shape, default_size=299, min_size=75,
                                         data_format=K.image_data_format(), require_flatten=include_top,
                                         weights=weights)
    img_input = _iu.image_input(input_tensor, input_shape)
    x = img_input
    for step in _STEM:
        x = _step(x, step)
    for part in _BODY:
        if isinstance(part[1], list):
            x = _branches(x, part[1], part[0])
        else:
            block_type, repeats, scale = part
            for idx in range(1, repeats + 1):
                x = inception_resnet_block(x, scale, block_type, idx)
    # the last block8 is neither scaled down nor activated
    x = inception_resnet_block(x, 1.0, "block8", 10, activation=None)
    x = conv2d_bn(x, 1536, 1, name="conv_7b")
    if include_top:
        x = _layers.GlobalAveragePooling2D(name="avg_pool")(x)
        x = _iu.dense_classifier(x, classes, classifier_activation, weights)
    else:
        x = _iu.pooled(x, pooling)

    def imagenet_file() -> tuple:
        fname = f"inception_resnet_v2_weights_tf_dim_ordering_tf_kernels{'' if include_top else '_notop'}.h5"
        return fname, BASE_WEIGHT_URL + fname, _HASHES[0 if include_top else 1]
    return _iu.finish(img_input, input_tensor, x, "inception_resnet_v2", weights, imagenet_file)


preprocess_input, decode_predictions = _iu.model_functions("tf", "InceptionResNetV2")
