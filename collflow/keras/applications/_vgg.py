"""The VGG architecture both vgg16.py and vgg19.py build (the depth is the only difference)."""
from __future__ import annotations

from typing import Any, Optional, Sequence

from .. import backend as K
from .. import layers as _layers
from . import imagenet_utils as _iu

_BASE = "https://storage.googleapis.com/tensorflow/keras-applications/"
_WIDTHS = (64, 128, 256, 512, 512)   # filters of the five blocks


def build_vgg(name: str, convs_per_block: Sequence[int], hashes: Sequence[str], include_top: bool, weights: Any,
              input_tensor: Any, input_shape: Any, pooling: Optional[str], classes: int,
              classifier_activation: Any) -> Any:
    """A VGG net: five blocks of 3x3 'same' ReLU convolutions (convs_per_block of them) each
    closed by a 2x2 max pool, then Keras's two 4096-wide dense layers and the classifier."""
    _iu.check_weights(weights, include_top, classes, name)
    input_shape = _iu.obtain_input_shape(input_shape, default_size=224, min_size=32,
                                         data_format=K.image_data_format(), require_flatten=include_top,
                                         weights=weights)
    img_input = _iu.image_input(input_tensor, input_shape)
    x = img_input
    for b, (width, n) in enumerate(zip(_WIDTHS, convs_per_block), start=1):
        for c in range(1, n + 1):
            x = _layers.Conv2D(width, (3, 3), activation="relu", padding="same", name=f"block{b}_conv{c}")(x)
        x = _layers.MaxPooling2D((2, 2), strides=(2, 2), name=f"block{b}_pool")(x)
    if include_top:
        x = _layers.Flatten(name="flatten")(x)
        x = _layers.Dense(4096, activation="relu", name="fc1")(x)
        x = _layers.Dense(4096, activation="relu", name="fc2")(x)
        x = _iu.dense_classifier(x, classes, classifier_activation, weights)
    else:
        x = _iu.pooled(x, pooling)

    def imagenet_file() -> tuple:
        fname = f"{name}_weights_tf_dim_ordering_tf_kernels{'' if include_top else '_notop'}.h5"
        return fname, f"{_BASE}{name}/{fname}", hashes[0 if include_top else 1]
    return _iu.finish(img_input, input_tensor, x, name, weights, imagenet_file)
