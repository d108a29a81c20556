"""tf.keras.applications.resnet: ResNet50/101/152 (He et al., CVPR 2015) with Keras's layer
names, so Keras's ImageNet weights load; also the shared ResNet body resnet_v2.py builds its
pre-activation variants with.  Inputs take 'caffe' preprocessing."""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, Tuple

from .. import backend as K
from .. import layers as _layers
from ..layers_more import ZeroPadding2D
from . import imagenet_utils as _iu

__all__ = ["ResNet50", "ResNet101", "ResNet152", "preprocess_input", "decode_predictions"]

BASE_WEIGHTS_PATH = "https://storage.googleapis.com/tensorflow/keras-applications/resnet/"
# md5 of Keras's weights files: (with the classifier, without)
WEIGHTS_HASHES = {
    "resnet50": ("2cb95161c43110f7111970584f804107", "4d473c1dd8becc155b73f8504c6f6626"),
    "resnet101": ("f1aeb4b969a6efcfb50fad2f0c20cfc5", "88cf7a10940856eca736dc7b7e228a21"),
    "resnet152": ("100835be76be38e30d865e96f2aaae62", "ee4c566cf9a93f14d82f913c2dc6dd0c"),
    "resnet50v2": ("3ef43a0b657b3be2300d5770ece849e0", "fac2f116257151a9d068a22e544a4917"),
    "resnet101v2": ("6343647c601c52e1368623803854d971", "c0ed64b8031c3730f411d2eb4eea35b5"),
    "resnet152v2": ("a49b44d1979771252814e80f8ec446f9", "ed17cf2e0169df9d443503ef94b23b33"),
}

_EPS = 1.001e-5  # the batch norms' epsilon in Keras's ResNets (not the layer's default)
# (filters, blocks) of the four stages conv2..conv5, by depth
STAGES = {50: ((64, 3), (128, 4), (256, 6), (512, 3)),
          101: ((64, 3), (128, 4), (256, 23), (512, 3)),
          152: ((64, 3), (128, 8), (256, 36), (512, 3))}


def _bn(x: Any, name: str) -> Any:
    return _layers.BatchNormalization(axis=_iu.channel_axis(), epsilon=_EPS, name=name)(x)


def _relu(x: Any, name: str) -> Any:
    return _layers.Activation("relu", name=name)(x)


def bottleneck(x: Any, filters: int, stride: int, conv_shortcut: bool, name: str) -> Any:
    """v1 bottleneck: 1x1 (strided) -> 3x3 -> 1x1 to 4*filters, each batch-normed, added to
    the identity or to a strided 1x1 projection, then ReLU."""
    if conv_shortcut:
        shortcut = _layers.Conv2D(4 * filters, 1, strides=stride, name=name + "_0_conv")(x)
        shortcut = _bn(shortcut, name + "_0_bn")
    else:
        shortcut = x
    x = _layers.Conv2D(filters, 1, strides=stride, name=name + "_1_conv")(x)
    x = _relu(_bn(x, name + "_1_bn"), name + "_1_relu")
    x = _layers.Conv2D(filters, 3, padding="SAME", name=name + "_2_conv")(x)
    x = _relu(_bn(x, name + "_2_bn"), name + "_2_relu")
    x = _bn(_layers.Conv2D(4 * filters, 1, name=name + "_3_conv")(x), name + "_3_bn")
    x = _layers.Add(name=name + "_add")([shortcut, x])
    return _relu(x, name + "_out")


def preact_bottleneck(x: Any, filters: int, stride: int, conv_shortcut: bool, name: str) -> Any:
    """v2 (pre-activation) bottleneck: BN+ReLU first; 1x1 -> padded 3x3 (strided) -> 1x1 to
    4*filters; the shortcut is a 1x1 projection of the activations, or the input itself
    subsampled by a 1x1 max pool when strided."""
    preact = _relu(_bn(x, name + "_preact_bn"), name + "_preact_relu")
    if conv_shortcut:
        shortcut = _layers.Conv2D(4 * filters, 1, strides=stride, name=name + "_0_conv")(preact)
    else:
        # unnamed as in Keras: it takes the next max_pooling2d_N name
        shortcut = _layers.MaxPooling2D(1, strides=stride)(x) if stride > 1 else x
    x = _layers.Conv2D(filters, 1, strides=1, use_bias=False, name=name + "_1_conv")(preact)
    x = _relu(_bn(x, name + "_1_bn"), name + "_1_relu")
    x = ZeroPadding2D(padding=((1, 1), (1, 1)), name=name + "_2_pad")(x)
    x = _layers.Conv2D(filters, 3, strides=stride, use_bias=False, name=name + "_2_conv")(x)
    x = _relu(_bn(x, name + "_2_bn"), name + "_2_relu")
    x = _layers.Conv2D(4 * filters, 1, name=name + "_3_conv")(x)
    return _layers.Add(name=name + "_out")([shortcut, x])


def stack_v1(x: Any, stages: Sequence[Tuple[int, int]]) -> Any:
    """The v1 stages conv2..conv5: each opens with a projection block, strided except conv2."""
    for s, (filters, blocks) in enumerate(stages):
        for b in range(1, blocks + 1):
            stride = 2 if (b == 1 and s > 0) else 1
            x = bottleneck(x, filters, stride, b == 1, f"conv{s + 2}_block{b}")
    return x


def stack_v2(x: Any, stages: Sequence[Tuple[int, int]]) -> Any:
    """The v2 stages conv2..conv5: each opens with a projection block and ends with the
    strided one, except conv5, which is not strided."""
    last = len(stages) - 1
    for s, (filters, blocks) in enumerate(stages):
        for b in range(1, blocks + 1):
            stride = 2 if (b == blocks and s < last) else 1
            x = preact_bottleneck(x, filters, stride, b == 1, f"conv{s + 2}_block{b}")
    return x


def build_resnet(stack_fn: Callable[[Any], Any], preact: bool, use_bias: bool, model_name: str,
                 include_top: bool = True, weights: Any = "imagenet", input_tensor: Any = None,
                 input_shape: Any = None, pooling: Optional[str] = None, classes: int = 1000,
                 classifier_activation: Any = "softmax", **kwargs: Any) -> Any:
    """A ResNet: the 7x7/2 stem and 3x3/2 max pool, `stack_fn`'s stages, the closing BN+ReLU of
    the pre-activation variant, then the classifier or the optional pooling."""
    if kwargs:
        raise ValueError(f"Unknown argument(s): {kwargs}")
    _iu.check_weights(weights, include_top, classes, "resnet")
    input_shape = _iu.obtain_input_shape(input_shape, default_size=224, min_size=32,
                                         data_format=K.image_data_format(), require_flatten=include_top,
                                         weights=weights)
    img_input = _iu.image_input(input_tensor, input_shape)
    x = ZeroPadding2D(padding=((3, 3), (3, 3)), name="conv1_pad")(img_input)
    x = _layers.Conv2D(64, 7, strides=2, use_bias=use_bias, name="conv1_conv")(x)
    if not preact:
        x = _relu(_bn(x, "conv1_bn"), "conv1_relu")
    x = ZeroPadding2D(padding=((1, 1), (1, 1)), name="pool1_pad")(x)
    x = _layers.MaxPooling2D(3, strides=2, name="pool1_pool")(x)
    x = stack_fn(x)
    if preact:
        x = _relu(_bn(x, "post_bn"), "post_relu")
    if include_top:
        x = _layers.GlobalAveragePooling2D(name="avg_pool")(x)
        x = _iu.dense_classifier(x, classes, classifier_activation, weights)
    else:
        x = _iu.pooled(x, pooling, "avg_pool", "max_pool")

    def imagenet_file() -> tuple:
        fname = f"{model_name}_weights_tf_dim_ordering_tf_kernels{'' if include_top else '_notop'}.h5"
        return fname, BASE_WEIGHTS_PATH + fname, WEIGHTS_HASHES[model_name][0 if include_top else 1]
    return _iu.finish(img_input, input_tensor, x, model_name, weights,
                      imagenet_file if model_name in WEIGHTS_HASHES else None)


def _v1(depth: int) -> Callable[..., Any]:
    def model(include_top: bool = True, weights: Any = "imagenet", input_tensor: Any = None,
              input_shape: Any = None, pooling: Optional[str] = None, classes: int = 1000, **kwargs: Any) -> Any:
        return build_resnet(lambda x: stack_v1(x, STAGES[depth]), False, True, f"resnet{depth}", include_top,
                            weights, input_tensor, input_shape, pooling, classes, **kwargs)
    model.__name__ = model.__qualname__ = f"ResNet{depth}"
    model.__doc__ = (f"The ResNet{depth} model; keyword arguments: classifier_activation (default softmax).")
    return model


ResNet50 = _v1(50)
ResNet101 = _v1(101)
ResNet152 = _v1(152)


preprocess_input, decode_predictions = _iu.model_functions("caffe", "ResNet")
