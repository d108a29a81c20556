"""tf.keras.applications.imagenet_utils: the input preprocessing of the ImageNet models, the
decoding of their 1000-way predictions, and the shared checks and builders the model modules
use (input shape, `weights` / `classes` / classifier checks, weight download and loading)."""
from __future__ import annotations

import json
import os
import warnings
from typing import Any, Callable, List, Optional, Sequence, Tuple

import numpy as np

from .. import backend as K
from .. import data_utils
from .. import layers as _layers
from ..engine import Model
from ..generic_utils import get_source_inputs
from ..losses import activation as _get_activation

__all__ = ["preprocess_input", "decode_predictions", "obtain_input_shape", "correct_pad", "validate_activation"]

CLASS_INDEX: Optional[dict] = None
CLASS_INDEX_PATH = "https://storage.googleapis.com/download.tensorflow.org/data/imagenet_class_index.json"
_CLASS_INDEX_HASH = "c2c37ea517e94d9795004a39431a14cb"

# the ImageNet channel statistics each mode normalizes with, in the order the channels have
# after the mode's own reordering (caffe works in BGR)
_CAFFE_MEAN = (103.939, 116.779, 123.68)
_TORCH_MEAN = (0.485, 0.456, 0.406)
_TORCH_STD = (0.229, 0.224, 0.225)


def _channel_shape(ndim: int, data_format: str) -> Tuple[int, ...]:
    """The broadcast shape of a per-channel vector against an image (batch) of rank ndim."""
    if data_format == "channels_first":
        return (3,) + (1,) * (ndim - 1) if ndim == 3 else (1, 3) + (1,) * (ndim - 2)
    return (3,)


def _preprocess_numpy(x: np.ndarray, data_format: str, mode: str) -> np.ndarray:
    # a float array is changed in place, as Keras does (callers copy when they care)
    if not issubclass(x.dtype.type, np.floating):
        x = x.astype(K.floatx(), copy=False)
    if mode == "tf":
        x /= 127.5
        x -= 1.0
        return x
    if mode == "torch":
        x /= 255.0
        mean, std = _TORCH_MEAN, _TORCH_STD
    else:
        axis = (0 if x.ndim == 3 else 1) if data_format == "channels_first" else -1
        x = np.flip(x, axis=axis)
        mean, std = _CAFFE_MEAN, None
    shape = _channel_shape(x.ndim, data_format)
    x -= np.asarray(mean, dtype=x.dtype).reshape(shape)
    if std is not None:
        x /= np.asarray(std, dtype=x.dtype).reshape(shape)
    return x


def _preprocess_symbolic(x: Any, data_format: str, mode: str) -> Any:
    from ...graph.ops.reverse_ops import reverse
    if mode == "tf":
        return x / 127.5 - 1.0
    if mode == "torch":
        x = x / 255.0
        mean, std = _TORCH_MEAN, _TORCH_STD
    else:
        ndim = K.ndim(x)
        axis = (0 if ndim == 3 else 1) if data_format == "channels_first" else ndim - 1
        x = reverse(x, [axis])
        mean, std = _CAFFE_MEAN, None
    shape = _channel_shape(K.ndim(x), data_format)
    dtype = x.dtype.base_dtype.name
    x = x - K.constant(np.asarray(mean).reshape(shape), dtype=dtype)
    if std is not None:
        x = x / K.constant(np.asarray(std).reshape(shape), dtype=dtype)
    return x


def preprocess_input(x: Any, data_format: Optional[str] = None, mode: str = "caffe") -> Any:
    """A batch of images (NumPy array or tensor, values in [0, 255]) preprocessed for an
    ImageNet model: 'caffe' RGB->BGR minus the channel means, 'tf' scaled to [-1, 1], 'torch'
    scaled to [0, 1] then standardized per channel.  A float array is changed in place."""
    if mode not in {"caffe", "tf", "torch"}:
        raise ValueError(f"Expected mode to be one of `caffe`, `tf` or `torch`. Received: mode={mode}")
    if data_format is None:
        data_format = K.image_data_format()
    elif data_format not in {"channels_first", "channels_last"}:
        raise ValueError("Expected data_format to be one of `channels_first` or "
                         f"`channels_last`. Received: data_format={data_format}")
    if isinstance(x, np.ndarray):
        return _preprocess_numpy(x, data_format, mode)
    return _preprocess_symbolic(x, data_format, mode)


def decode_predictions(preds: np.ndarray, top: int = 5) -> List[List[tuple]]:
    """The `top` (class_name, class_description, score) of each row of a (samples, 1000)
    prediction array, best first."""
    global CLASS_INDEX
    if len(preds.shape) != 2 or preds.shape[1] != 1000:
        raise ValueError("`decode_predictions` expects a batch of predictions (i.e. a 2D array of shape "
                         "(samples, 1000)). Found array with shape: " + str(preds.shape))
    if CLASS_INDEX is None:
        fpath = data_utils.get_file("imagenet_class_index.json", CLASS_INDEX_PATH, cache_subdir="models",
                                    file_hash=_CLASS_INDEX_HASH)
        with open(fpath) as f:
            CLASS_INDEX = json.load(f)
    results = []
    for pred in preds:
        best = pred.argsort()[-top:][::-1]
        rows = [tuple(CLASS_INDEX[str(i)]) + (pred[i],) for i in best]
        rows.sort(key=lambda r: r[2], reverse=True)
        results.append(rows)
    return results


def model_functions(mode: str, model: str) -> Tuple[Callable[..., Any], Callable[..., Any]]:
    """A model module's `preprocess_input` (this module's in `mode`) and `decode_predictions`."""
    def model_preprocess_input(x: Any, data_format: Optional[str] = None) -> Any:
        return preprocess_input(x, data_format=data_format, mode=mode)

    def model_decode_predictions(preds: Any, top: int = 5) -> List[List[tuple]]:
        return decode_predictions(preds, top=top)
    model_preprocess_input.__name__ = model_preprocess_input.__qualname__ = "preprocess_input"
    model_preprocess_input.__doc__ = f"Images in [0, 255] to {model}'s inputs (imagenet_utils' {mode!r} mode)."
    model_decode_predictions.__name__ = model_decode_predictions.__qualname__ = "decode_predictions"
    model_decode_predictions.__doc__ = "The top ImageNet classes of each prediction row: (class id, name, score)."
    return model_preprocess_input, model_decode_predictions


def _warn_channels(n: Any) -> None:
    if n not in {1, 3}:
        warnings.warn("This model usually expects 1 or 3 input channels. However, it was passed an input_shape "
                      f"with {n} input channels.", stacklevel=3)


def obtain_input_shape(input_shape: Optional[Sequence[Optional[int]]], default_size: int, min_size: int,
                       data_format: str, require_flatten: bool, weights: Any = None) -> tuple:
    """The model's input shape (no batch axis): `input_shape` checked against the model's
    minimum size, the 3 channels ImageNet weights need and the fixed shape a classifier top with
    ImageNet weights needs; the default (or a spatially unknown one) when it is None."""
    first = data_format == "channels_first"
    if weights != "imagenet" and input_shape and len(input_shape) == 3:
        channels = input_shape[0] if first else input_shape[-1]
        _warn_channels(channels)
    else:
        channels = 3
    default_shape = (channels, default_size, default_size) if first else (default_size, default_size, channels)
    if weights == "imagenet" and require_flatten:
        if input_shape is not None and input_shape != default_shape:
            raise ValueError("When setting `include_top=True` and loading `imagenet` weights, "
                             f"`input_shape` should be {default_shape}.  Received: input_shape={input_shape}")
        return default_shape
    if input_shape:
        if len(input_shape) != 3:
            raise ValueError("`input_shape` must be a tuple of three integers.")
        channels = input_shape[0] if first else input_shape[-1]
        if channels != 3 and weights == "imagenet":
            raise ValueError(f"The input must have 3 channels; Received `input_shape={input_shape}`")
        spatial = input_shape[1:] if first else input_shape[:2]
        if any(d is not None and d < min_size for d in spatial):
            raise ValueError(f"Input size must be at least {min_size}x{min_size}; "
                             f"Received: input_shape={input_shape}")
    elif require_flatten:
        input_shape = default_shape
    else:
        input_shape = (3, None, None) if first else (None, None, 3)
    if require_flatten and None in input_shape:
        raise ValueError("If `include_top` is True, you should specify a static `input_shape`. "
                         f"Received: input_shape={input_shape}")
    return input_shape


def correct_pad(inputs: Any, kernel_size: Any) -> Tuple[Tuple[int, int], Tuple[int, int]]:
    """The ZeroPadding2D amounts that make a strided 'valid' convolution of `inputs` line up as
    a 'same' one would on an even size (one row/column less before than after)."""
    first = K.image_data_format() == "channels_first"
    size = K.int_shape(inputs)[2:4] if first else K.int_shape(inputs)[1:3]
    kernel = (kernel_size, kernel_size) if isinstance(kernel_size, int) else tuple(kernel_size)
    adjust = (1, 1) if size[0] is None else (1 - size[0] % 2, 1 - size[1] % 2)
    half = (kernel[0] // 2, kernel[1] // 2)
    return (half[0] - adjust[0], half[0]), (half[1] - adjust[1], half[1])


def validate_activation(classifier_activation: Any, weights: Any) -> None:
    """ValueError unless the classifier's activation is softmax or none when weights are loaded
    (pretrained classifiers were trained with softmax)."""
    if weights is None:
        return
    fn = _get_activation(classifier_activation)
    if fn not in {_get_activation("softmax"), _get_activation(None)}:
        raise ValueError("Only `None` and `softmax` activations are allowed for the `classifier_activation` "
                         "argument when using pretrained weights, with `include_top=True`; Received: "
                         f"classifier_activation={classifier_activation}")


# -- shared by the model modules ------------------------------------------------------------------

WEIGHTS_MSG = ("The `weights` argument should be either `None` (random initialization), `imagenet` "
               "(pre-training on ImageNet), or the path to the weights file to be loaded")
_CLASSES_MSG = 'If using `weights` as `"imagenet"` with `include_top` as true, `classes` should be 1000'
# Keras's models word the two checks' messages slightly differently: what each appends to the
# shared opening (formatted with the value received)
_WEIGHTS_TAIL = {"vgg16": ".  Received: weights={}", "vgg19": ".  Received: `weights={}.`", "resnet": ".",
                 "mobilenet": ".  Received weights={}", "mobilenet_v2": ".  Received `weights={}`",
                 "inception_v3": "; Received: weights={}"}
_CLASSES_TAIL = {"vgg16": ".  Received `classes={}`", "vgg19": ".  Received: `classes={}.`", "resnet": "",
                 "mobilenet": ".  Received classes={}", "mobilenet_v2": ". Received `classes={}`",
                 "inception_v3": "; Received classes={}"}


def check_weights(weights: Any, include_top: bool, classes: int, style: str) -> None:
    """The ValueErrors Keras raises for a `weights` that is neither None, 'imagenet' nor an
    existing file, and for ImageNet weights on a classifier that is not 1000-way, worded as
    the Keras model `style` words them."""
    if not (weights in {"imagenet", None} or os.path.exists(weights)):
        raise ValueError(WEIGHTS_MSG + _WEIGHTS_TAIL[style].format(weights))
    if weights == "imagenet" and include_top and classes != 1000:
        raise ValueError(_CLASSES_MSG + _CLASSES_TAIL[style].format(classes))


def image_input(input_tensor: Any, input_shape: tuple) -> Any:
    """The model's image input: a new Input, `input_tensor` itself when a Keras layer made it,
    else an Input wrapping it."""
    if input_tensor is None:
        return _layers.Input(shape=input_shape)
    if not K.is_keras_tensor(input_tensor):
        return _layers.Input(tensor=input_tensor, shape=input_shape)
    return input_tensor


def channel_axis() -> int:
    """The channels axis of a 4-D image batch in the current data format."""
    return 1 if K.image_data_format() == "channels_first" else 3


def pooled(x: Any, pooling: Optional[str], avg_name: Optional[str] = None, max_name: Optional[str] = None) -> Any:
    """The headless model's output: the features, or their global average / max pool."""
    if pooling == "avg":
        return _layers.GlobalAveragePooling2D(name=avg_name)(x)
    if pooling == "max":
        return _layers.GlobalMaxPooling2D(name=max_name)(x)
    return x


def dense_classifier(x: Any, classes: int, classifier_activation: Any, weights: Any) -> Any:
    """The 'predictions' Dense layer most models end with."""
    validate_activation(classifier_activation, weights)
    return _layers.Dense(classes, activation=classifier_activation, name="predictions")(x)


def finish(img_input: Any, input_tensor: Any, x: Any, name: str, weights: Any,
           imagenet_file: Optional[Callable[[], Tuple[str, str, Optional[str]]]] = None) -> Model:
    """The Model from the input(s) to `x`, with its weights loaded: ImageNet's through get_file
    ((file name, URL, hash) from imagenet_file), or a file's when `weights` is a path."""
    inputs = get_source_inputs(input_tensor) if input_tensor is not None else img_input
    model = Model(inputs, x, name=name)
    if weights == "imagenet" and imagenet_file is not None:
        fname, origin, file_hash = imagenet_file()
        model.load_weights(data_utils.get_file(fname, origin, cache_subdir="models", file_hash=file_hash))
    elif weights is not None and weights != "imagenet":
        model.load_weights(weights)
    return model
