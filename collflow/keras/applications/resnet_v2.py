"""tf.keras.applications.resnet_v2: the pre-activation ResNet50V2/101V2/152V2 (He et al.,
ECCV 2016) with Keras's layer names, so Keras's ImageNet weights load.  Inputs take 'tf'
preprocessing (scaled to [-1, 1])."""
from __future__ import annotations

from typing import Any, Callable, Optional

from . import imagenet_utils as _iu
from .resnet import STAGES, build_resnet, stack_v2

__all__ = ["ResNet50V2", "ResNet101V2", "ResNet152V2", "preprocess_input", "decode_predictions"]


def _v2(depth: int) -> Callable[..., Any]:
    def model(include_top: bool = True, weights: Any = "imagenet", input_tensor: Any = None,
              input_shape: Any = None, pooling: Optional[str] = None, classes: int = 1000,
              classifier_activation: Any = "softmax") -> Any:
        return build_resnet(lambda x: stack_v2(x, STAGES[depth]), True, True, f"resnet{depth}v2", include_top,
                            weights, input_tensor, input_shape, pooling, classes, classifier_activation)
    model.__name__ = model.__qualname__ = f"ResNet{depth}V2"
    model.__doc__ = f"The ResNet{depth}V2 (pre-activation) model."
    return model


ResNet50V2 = _v2(50)
ResNet101V2 = _v2(101)
ResNet152V2 = _v2(152)


preprocess_input, decode_predictions = _iu.model_functions("tf", "ResNetV2")
