"""tf.keras.applications.nasnet: NASNet-A (Zoph et al., CVPR 2018) Mobile and Large with
Keras's layer and weight names, so Keras's ImageNet weights load.  Inputs take 'tf'
preprocessing.  The models are built channels_last whatever the data format (as Keras's).

Each cell combines its input h (the current block's output, projected) and p (the previous
block's output, adjusted to h's size and width) in five pairs of operations, each pair summed;
the tables below list them.  Keras builds the cells under name scopes that prefix the weights'
names (normal_A_block_3/block_1/...); the same prefixes come here from variable scopes."""
from __future__ import annotations

import logging
from typing import Any, Dict, Optional, Sequence

from ...graph.variable_scope import variable_scope
from .. import backend as K
from .. import layers as _layers
from ..backend_more import set_image_data_format
from ..layers_more import Cropping2D, SeparableConv2D, ZeroPadding2D
from . import imagenet_utils as _iu

__all__ = ["NASNetMobile", "NASNetLarge", "preprocess_input", "decode_predictions"]

BASE_WEIGHTS_PATH = "https://storage.googleapis.com/tensorflow/keras-applications/nasnet/"
NASNET_MOBILE_WEIGHT_PATH = BASE_WEIGHTS_PATH + "NASNet-mobile.h5"
NASNET_MOBILE_WEIGHT_PATH_NO_TOP = BASE_WEIGHTS_PATH + "NASNet-mobile-no-top.h5"
NASNET_LARGE_WEIGHT_PATH = BASE_WEIGHTS_PATH + "NASNet-large.h5"
NASNET_LARGE_WEIGHT_PATH_NO_TOP = BASE_WEIGHTS_PATH + "NASNet-large-no-top.h5"
# (default size, include_top) -> (file name, URL, md5) of Keras's ImageNet weights
_IMAGENET_FILES = {
    (224, True): ("nasnet_mobile.h5", NASNET_MOBILE_WEIGHT_PATH, "020fb642bf7360b370c678b08e0adf61"),
    (224, False): ("nasnet_mobile_no_top.h5", NASNET_MOBILE_WEIGHT_PATH_NO_TOP, "1ed92395b5b598bdda52abe5c0dbfd63"),
    (331, True): ("nasnet_large.h5", NASNET_LARGE_WEIGHT_PATH, "11577c9a518f0070763c2b964a382f17"),
    (331, False): ("nasnet_large_no_top.h5", NASNET_LARGE_WEIGHT_PATH_NO_TOP, "d81d89dc07e6e56530c4e77faddd61b5"),
}

_AXIS = -1          # channels_last throughout (see the module doc)
_MOMENTUM, _EPS = 0.9997, 1e-3

# A cell's operations: ("sep", input, kernel, stride, tag) a separable-convolution block;
# ("avg" | "max", input, stride, padding, tag) a 3x3 pool; ("id", input) the input itself.
# Inputs: "h", "p", "h3" (h zero-padded for the strided 'valid' pools), "x1".."x5" (earlier sums).
# A pair is (left, right, the sum's name, less the block id; None: Keras leaves that add unnamed).
_NORMAL = (
    (("sep", "h", 5, 1, "left1"), ("sep", "p", 3, 1, "right1"), "normal_add_1"),
    (("sep", "p", 5, 1, "left2"), ("sep", "p", 3, 1, "right2"), "normal_add_2"),
    (("avg", "h", 1, "same", "left3"), ("id", "p"), "normal_add_3"),
    (("avg", "p", 1, "same", "left4"), ("avg", "p", 1, "same", "right4"), "normal_add_4"),
    (("sep", "h", 3, 1, "left5"), ("id", "h"), "normal_add_5"),
)
_NORMAL_CONCAT = ("p", "x1", "x2", "x3", "x4", "x5")
# Keras's reduction cell adds its fourth pair as (x2, pool of x1), unnamed, and names two of its
# sums and one block without an underscore or with the previous block's number; kept as is
_REDUCTION = (
    (("sep", "h", 5, 2, "left1"), ("sep", "p", 7, 2, "right1"), "reduction_add_1"),
    (("max", "h3", 2, "valid", "left2"), ("sep", "p", 7, 2, "right2"), "reduction_add_2"),
    (("avg", "h3", 2, "valid", "left3"), ("sep", "p", 5, 2, "right3"), "reduction_add3"),
    (("id", "x2"), ("avg", "x1", 1, "same", "left4"), None),
    (("sep", "x1", 3, 1, "left4"), ("max", "h3", 2, "valid", "right5"), "reduction_add4"),
)
_REDUCTION_CONCAT = ("x2", "x3", "x4", "x5")


def _bn(x: Any, name: str) -> Any:
    return _layers.BatchNormalization(axis=_AXIS, momentum=_MOMENTUM, epsilon=_EPS, name=name)(x)


def _conv1x1(x: Any, filters: int, name: str) -> Any:
    return _layers.Conv2D(filters, (1, 1), strides=(1, 1), padding="same", use_bias=False, name=name,
                          kernel_initializer="he_normal")(x)


def _separable_conv_block(x: Any, filters: int, kernel: int, stride: int, block_id: str) -> Any:
    """ReLU -> separable convolution (strided ones pad first, as a 'same' one would on an even
    size) -> BN -> ReLU -> separable convolution -> BN.  (Keras passes kernel_initializer to
    these, which its SeparableConv2D ignores: their kernels are depthwise and pointwise.)"""
    with variable_scope(f"separable_conv_block_{block_id}"):
        for i in (1, 2):
            x = _layers.Activation("relu")(x)
            padding = "same"
            if i == 1 and stride == 2:
                x = ZeroPadding2D(padding=_iu.correct_pad(x, kernel), name=f"separable_conv_1_pad_{block_id}")(x)
                padding = "valid"
            x = SeparableConv2D(filters, kernel, strides=(stride, stride) if i == 1 else (1, 1),
                                name=f"separable_conv_{i}_{block_id}", padding=padding, use_bias=False)(x)
            x = _bn(x, f"separable_conv_{i}_bn_{block_id}")
    return x


def _adjust_block(p: Any, ip: Any, filters: int, block_id: str) -> Any:
    """p brought to ip's size (two offset strided 1x1 paths, concatenated) or to `filters`
    channels (a 1x1 projection); ip itself when there is no previous block."""
    if p is None:
        return ip
    p_shape, ip_shape = K.int_shape(p), K.int_shape(ip)
    with variable_scope("adjust_block"):
        if p_shape[-2] != ip_shape[-2]:
            with variable_scope(f"adjust_reduction_block_{block_id}"):
                p = _layers.Activation("relu", name=f"adjust_relu_1_{block_id}")(p)
                p1 = _layers.AveragePooling2D((1, 1), strides=(2, 2), padding="valid",
                                              name=f"adjust_avg_pool_1_{block_id}")(p)
                p1 = _conv1x1(p1, filters // 2, f"adjust_conv_1_{block_id}")
                # the second path samples the odd pixels: shift by one, then the same strided pool
                p2 = ZeroPadding2D(padding=((0, 1), (0, 1)))(p)
                p2 = Cropping2D(cropping=((1, 0), (1, 0)))(p2)
                p2 = _layers.AveragePooling2D((1, 1), strides=(2, 2), padding="valid",
                                              name=f"adjust_avg_pool_2_{block_id}")(p2)
                p2 = _conv1x1(p2, filters // 2, f"adjust_conv_2_{block_id}")
                p = _layers.concatenate([p1, p2], axis=_AXIS)
                p = _bn(p, f"adjust_bn_{block_id}")
        elif p_shape[_AXIS] != filters:
            with variable_scope(f"adjust_projection_block_{block_id}"):
                p = _layers.Activation("relu")(p)
                p = _conv1x1(p, filters, f"adjust_conv_projection_{block_id}")
                p = _bn(p, f"adjust_bn_{block_id}")
    return p


def _operation(op: tuple, values: Dict[str, Any], filters: int, kind: str, block_id: str) -> Any:
    if op[0] == "id":
        return values[op[1]]
    if op[0] == "sep":
        _, src, kernel, stride, tag = op
        return _separable_conv_block(values[src], filters, kernel, stride, f"{kind}_{tag}_{block_id}")
    pool, src, stride, padding, tag = op
    cls = _layers.AveragePooling2D if pool == "avg" else _layers.MaxPooling2D
    return cls((3, 3), strides=(stride, stride), padding=padding, name=f"{kind}_{tag}_{block_id}")(values[src])


def _cell(ip: Any, p: Any, filters: int, block_id: str, kind: str) -> tuple:
    """A normal or reduction cell: (its output, its input ip, the next cell's p)."""
    pairs, concat = (_NORMAL, _NORMAL_CONCAT) if kind == "normal" else (_REDUCTION, _REDUCTION_CONCAT)
    with variable_scope(f"{kind}_A_block_{block_id}"):
        p = _adjust_block(p, ip, filters, block_id)
        h = _layers.Activation("relu")(ip)
        h = _conv1x1(h, filters, f"{kind}_conv_1_{block_id}")
        h = _bn(h, f"{kind}_bn_1_{block_id}")
        values = {"h": h, "p": p}
        if kind == "reduction":
            values["h3"] = ZeroPadding2D(padding=_iu.correct_pad(h, 3), name=f"reduction_pad_1_{block_id}")(h)
        for i, (left, right, add_name) in enumerate(pairs, start=1):
            with variable_scope(f"block_{i}"):
                a = _operation(left, values, filters, kind, block_id)
                b = _operation(right, values, filters, kind, block_id)
                values[f"x{i}"] = _layers.add([a, b], name=None if add_name is None else f"{add_name}_{block_id}")
        x = _layers.concatenate([values[k] for k in concat], axis=_AXIS, name=f"{kind}_concat_{block_id}")
    return x, ip


def NASNet(input_shape: Any = None, penultimate_filters: int = 4032, num_blocks: int = 6,  # noqa: N802
           stem_block_filters: int = 96, skip_reduction: bool = True, filter_multiplier: int = 2,
           include_top: bool = True, weights: Any = "imagenet", input_tensor: Any = None,
           pooling: Optional[str] = None, classes: int = 1000, default_size: Optional[int] = None,
           classifier_activation: Any = "softmax") -> Any:
    """A NASNet-A model: a strided 3x3 stem, two reduction cells, then three stacks of
    `num_blocks` normal cells with a reduction cell between them; the penultimate width is
    `penultimate_filters` (a multiple of 24 * filter_multiplier**2).  With `skip_reduction`
    the cell after a reduction takes the reduction's input as its p."""
    _iu.check_weights(weights, include_top, classes, "resnet")   # worded as the ResNets' are
    if isinstance(input_shape, tuple) and None in input_shape and weights == "imagenet":
        raise ValueError("When specifying the input shape of a NASNet and loading `ImageNet` weights, the "
                         "input_shape argument must be static (no None entries). Got: `input_shape="
                         + str(input_shape) + "`.")
    if default_size is None:
        default_size = 331
    input_shape = _iu.obtain_input_shape(input_shape, default_size=default_size, min_size=32,
                                         data_format=K.image_data_format(), require_flatten=include_top,
                                         weights=weights)
    old_data_format = None
    if K.image_data_format() != "channels_last":
        logging.warning('The NASNet family of models is only available for the input data format "channels_last" '
                        '(width, height, channels). However your settings specify the default data format '
                        '"channels_first" (channels, width, height). You should set '
                        '`image_data_format="channels_last"` in your TF-Keras config located at '
                        '~/.keras/keras.json. The model being returned right now will expect inputs to follow '
                        'the "channels_last" data format.')
        set_image_data_format("channels_last")
        old_data_format = "channels_first"
    try:
        return _build(input_shape, penultimate_filters, num_blocks, stem_block_filters, skip_reduction,
                      filter_multiplier, include_top, weights, input_tensor, pooling, classes, default_size,
                      classifier_activation)
    finally:
        if old_data_format:
            set_image_data_format(old_data_format)


def _build(input_shape: Sequence[Any], penultimate_filters: int, num_blocks: int, stem_block_filters: int,
           skip_reduction: bool, filter_multiplier: int, include_top: bool, weights: Any, input_tensor: Any,
           pooling: Optional[str], classes: int, default_size: int, classifier_activation: Any) -> Any:
    img_input = _iu.image_input(input_tensor, input_shape)
    if penultimate_filters % (24 * (filter_multiplier ** 2)) != 0:
        raise ValueError("For NASNet-A models, the `penultimate_filters` must be a multiple of 24 * "
                         "(`filter_multiplier` ** 2). Current value: %d" % penultimate_filters)
    filters = penultimate_filters // 24
    x = _layers.Conv2D(stem_block_filters, (3, 3), strides=(2, 2), padding="valid", use_bias=False,
                       name="stem_conv1", kernel_initializer="he_normal")(img_input)
    x = _bn(x, "stem_bn1")
    p = None
    x, p = _cell(x, p, filters // (filter_multiplier ** 2), "stem_1", "reduction")
    x, p = _cell(x, p, filters // filter_multiplier, "stem_2", "reduction")
    for stack in range(3):
        if stack > 0:
            width = filters * filter_multiplier ** stack
            x, p0 = _cell(x, p, width, f"reduce_{stack * num_blocks}", "reduction")
            p = p if skip_reduction else p0
        for i in range(num_blocks):
            block = stack * num_blocks + i + (1 if stack else 0)
            x, p = _cell(x, p, filters * filter_multiplier ** stack, str(block), "normal")
    x = _layers.Activation("relu")(x)
    if include_top:
        x = _layers.GlobalAveragePooling2D()(x)
        x = _iu.dense_classifier(x, classes, classifier_activation, weights)
    else:
        x = _iu.pooled(x, pooling)

    def imagenet_file() -> tuple:
        if default_size not in (224, 331):
            raise ValueError("ImageNet weights can only be loaded with NASNetLarge or NASNetMobile")
        return _IMAGENET_FILES[(default_size, bool(include_top))]
    return _iu.finish(img_input, input_tensor, x, "NASNet", weights, imagenet_file)


def NASNetMobile(input_shape: Any = None, include_top: bool = True, weights: Any = "imagenet",  # noqa: N802
                 input_tensor: Any = None, pooling: Optional[str] = None, classes: int = 1000,
                 classifier_activation: Any = "softmax") -> Any:
    """NASNet-A Mobile (4 @ 1056): default input 224x224, at least 32x32."""
    return NASNet(input_shape, penultimate_filters=1056, num_blocks=4, stem_block_filters=32, skip_reduction=False,
                  filter_multiplier=2, include_top=include_top, weights=weights, input_tensor=input_tensor,
                  pooling=pooling, classes=classes, default_size=224, classifier_activation=classifier_activation)


def NASNetLarge(input_shape: Any = None, include_top: bool = True, weights: Any = "imagenet",  # noqa: N802
                input_tensor: Any = None, pooling: Optional[str] = None, classes: int = 1000,
                classifier_activation: Any = "softmax") -> Any:
    """NASNet-A Large (6 @ 4032): default input 331x331, at least 32x32."""
    return NASNet(input_shape, penultimate_filters=4032, num_blocks=6, stem_block_filters=96, skip_reduction=True,
                  filter_multiplier=2, include_top=include_top, weights=weights, input_tensor=input_tensor,
                  pooling=pooling, classes=classes, default_size=331, classifier_activation=classifier_activation)


preprocess_input, decode_predictions = _iu.model_functions("tf", "NASNet")
