"""tf.keras.applications.densenet: DenseNet121/169/201 (Huang et al., CVPR 2017) with Keras's
layer names, so Keras's ImageNet weights load.  Inputs take 'torch' preprocessing."""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from .. import backend as K
from .. import layers as _layers
from ..layers_more import ZeroPadding2D
from . import imagenet_utils as _iu

__all__ = ["DenseNet121", "DenseNet169", "DenseNet201", "preprocess_input", "decode_predictions"]

BASE_WEIGHTS_PATH = "https://storage.googleapis.com/tensorflow/keras-applications/densenet/"
# conv blocks in each of the four dense blocks, by depth
BLOCKS = {121: (6, 12, 24, 16), 169: (6, 12, 32, 32), 201: (6, 12, 48, 32)}
# md5 of Keras's weights files: (with the classifier, without)
_HASHES = {121: ("9d60b8095a5708f2dcce2bca79d332c7", "30ee3e1110167f948a6b9946edeeb738"),
           169: ("d699b8f76981ab1b30698df4c175e90b", "b8c4d4c20dd625c148057b9ff1c1176b"),
           201: ("1ceb130c1ea1b78c3bf6114dbdfd8807", "c13680b51ded0fb44dff2d8f86ac8bb1")}
_EPS = 1.001e-5   # the batch norms' epsilon in Keras's DenseNets
_GROWTH = 32


def _bn_relu(x: Any, bn_name: str, relu_name: str) -> Any:
    x = _layers.BatchNormalization(axis=_iu.channel_axis(), epsilon=_EPS, name=bn_name)(x)
    return _layers.Activation("relu", name=relu_name)(x)


def _conv_block(x: Any, name: str) -> Any:
    """BN-ReLU-1x1 (4*growth) then BN-ReLU-3x3 (growth), concatenated onto the input."""
    y = _bn_relu(x, name + "_0_bn", name + "_0_relu")
    y = _layers.Conv2D(4 * _GROWTH, 1, use_bias=False, name=name + "_1_conv")(y)
    y = _bn_relu(y, name + "_1_bn", name + "_1_relu")
    y = _layers.Conv2D(_GROWTH, 3, padding="same", use_bias=False, name=name + "_2_conv")(y)
    return _layers.Concatenate(axis=_iu.channel_axis(), name=name + "_concat")([x, y])


def _transition(x: Any, name: str) -> Any:
    """BN-ReLU, a 1x1 convolution halving the channels, 2x2 average pool."""
    x = _bn_relu(x, name + "_bn", name + "_relu")
    x = _layers.Conv2D(int(K.int_shape(x)[_iu.channel_axis()] * 0.5), 1, use_bias=False, name=name + "_conv")(x)
    return _layers.AveragePooling2D(2, strides=2, name=name + "_pool")(x)


def _densenet(blocks: Sequence[int], name: str, hashes: Optional[tuple], include_top: bool, weights: Any,
              input_tensor: Any, input_shape: Any, pooling: Optional[str], classes: int,
              classifier_activation: Any) -> Any:
    _iu.check_weights(weights, include_top, classes, "resnet")   # worded as the ResNets' are
    input_shape = _iu.obtain_input_shape(input_shape, default_size=224, min_size=32,
                                         data_format=K.image_data_format(), require_flatten=include_top,
                                         weights=weights)
    img_input = _iu.image_input(input_tensor, input_shape)
    x = ZeroPadding2D(padding=((3, 3), (3, 3)))(img_input)
    x = _layers.Conv2D(64, 7, strides=2, use_bias=False, name="conv1/conv")(x)
    x = _bn_relu(x, "conv1/bn", "conv1/relu")
    x = ZeroPadding2D(padding=((1, 1), (1, 1)))(x)
    x = _layers.MaxPooling2D(3, strides=2, name="pool1")(x)
    for stage, n in enumerate(blocks, start=2):
        for i in range(1, n + 1):
            x = _conv_block(x, f"conv{stage}_block{i}")
        if stage < 5:
            x = _transition(x, f"pool{stage}")
    x = _bn_relu(x, "bn", "relu")
    if include_top:
        x = _layers.GlobalAveragePooling2D(name="avg_pool")(x)
        x = _iu.dense_classifier(x, classes, classifier_activation, weights)
    else:
        x = _iu.pooled(x, pooling, "avg_pool", "max_pool")

    def imagenet_file() -> tuple:
        fname = f"{name}_weights_tf_dim_ordering_tf_kernels{'' if include_top else '_notop'}.h5"
        return fname, BASE_WEIGHTS_PATH + fname, hashes[0 if include_top else 1]
    return _iu.finish(img_input, input_tensor, x, name, weights, imagenet_file)


def _model(depth: int) -> Callable[..., Any]:
    def model(include_top: bool = True, weights: Any = "imagenet", input_tensor: Any = None,
              input_shape: Any = None, pooling: Optional[str] = None, classes: int = 1000,
              classifier_activation: Any = "softmax") -> Any:
        return _densenet(BLOCKS[depth], f"densenet{depth}", _HASHES[depth], include_top, weights, input_tensor,
                         input_shape, pooling, classes, classifier_activation)
    model.__name__ = model.__qualname__ = f"DenseNet{depth}"
    model.__doc__ = f"The DenseNet{depth} model (dense blocks of {BLOCKS[depth]} conv blocks)."
    return model


DenseNet121 = _model(121)
DenseNet169 = _model(169)
DenseNet201 = _model(201)


preprocess_input, decode_predictions = _iu.model_functions("torch", "DenseNet")
