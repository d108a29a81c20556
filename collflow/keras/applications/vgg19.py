"""tf.keras.applications.vgg19: VGG19 (Simonyan & Zisserman, ICLR 2015) with Keras's layer
names, so Keras's ImageNet weights load; its inputs take 'caffe' preprocessing."""
from __future__ import annotations

from typing import Any, List, Optional

from . import imagenet_utils as _iu
from ._vgg import build_vgg

__all__ = ["VGG19", "preprocess_input", "decode_predictions"]

# md5 of Keras's weights files: with the classifier, without
_HASHES = ("cbe5617147190e668d6c5d5026f83318", "253f8cb515780f3b799900260a226db6")


def VGG19(include_top: bool = True, weights: Any = "imagenet", input_tensor: Any = None,  # noqa: N802
          input_shape: Any = None, pooling: Optional[str] = None, classes: int = 1000,
          classifier_activation: Any = "softmax") -> Any:
    """The VGG19 model (16 convolutions, 3 dense layers with the top)."""
    return build_vgg("vgg19", (2, 2, 4, 4, 4), _HASHES, include_top, weights, input_tensor, input_shape, pooling,
                     classes, classifier_activation)


def preprocess_input(x: Any, data_format: Optional[str] = None) -> Any:
    """Images in [0, 255] to VGG's inputs: RGB->BGR, minus ImageNet's channel means."""
    return _iu.preprocess_input(x, data_format=data_format, mode="caffe")


def decode_predictions(preds: Any, top: int = 5) -> List[List[tuple]]:
    """The top ImageNet classes of each prediction row (imagenet_utils.decode_predictions)."""
    return _iu.decode_predictions(preds, top=top)
