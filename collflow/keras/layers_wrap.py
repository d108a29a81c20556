"""tf.keras.layers' remaining TF 1.15 names: the Wrapper base class (TimeDistributed and
Bidirectional count as its subclasses), InputSpec (tf.layers.InputSpec, the same class),
DenseFeatures (feature columns into a Keras model, as input_layer makes them), the
layers.serialize / deserialize functions, and the aliases TF 1.15 has (Convolution2D for
Conv2D, GlobalAvgPool1D for GlobalAveragePooling1D, ...)."""
from __future__ import annotations

from abc import ABCMeta
from typing import Any, Dict, Optional

from ..graph import graph as _g
from ..graph.graph import GraphKeys
from ..graph.ops import array_ops as _a
from ..graph.shape import TensorShape
from ..graph.variable_scope import variable_scope
from ..nn.layer_classes3d import InputSpec
from . import layers as _L
from . import layers_more as _LM
from . import layers_other as _LO
from .base_layer import Layer
from .layers import register_call

__all__ = ["Wrapper", "InputSpec", "DenseFeatures", "serialize", "deserialize",
           "Convolution1D", "Convolution2D", "Convolution3D", "Convolution2DTranspose", "Convolution3DTranspose",
           "SeparableConvolution1D", "SeparableConvolution2D", "AvgPool1D", "MaxPool1D", "GlobalAvgPool1D",
           "GlobalAvgPool2D", "GlobalAvgPool3D", "GlobalMaxPool1D", "GlobalMaxPool2D", "GlobalMaxPool3D"]

# the aliases: the same classes (a saved config names the class itself, as TF's does)
Convolution1D = _L.Conv1D
Convolution2D = _L.Conv2D
Convolution3D = _LM.Conv3D
Convolution2DTranspose = _LM.Conv2DTranspose
Convolution3DTranspose = _LO.Conv3DTranspose
SeparableConvolution1D = _LO.SeparableConv1D
SeparableConvolution2D = _LM.SeparableConv2D
AvgPool1D = _L.AveragePooling1D
MaxPool1D = _L.MaxPooling1D
GlobalAvgPool1D = _LM.GlobalAveragePooling1D
GlobalAvgPool2D = _L.GlobalAveragePooling2D
GlobalAvgPool3D = _LO.GlobalAveragePooling3D
GlobalMaxPool1D = _LM.GlobalMaxPooling1D
GlobalMaxPool2D = _L.GlobalMaxPooling2D
GlobalMaxPool3D = _LO.GlobalMaxPooling3D


class Wrapper(Layer, metaclass=ABCMeta):
    """A layer that wraps another (`self.layer`): its weights are the wrapped layer's; the
    config holds the wrapped layer's {"class_name", "config"} under "layer".  Subclasses write
    call(); TimeDistributed and Bidirectional are registered as subclasses (isinstance holds)."""

    def __init__(self, layer: Any, **kwargs: Any):
        if not hasattr(layer, "__call__") or isinstance(layer, type):
            raise ValueError(f"Please initialize `{type(self).__name__}` layer with a layer instance. You passed: "
                             f"{layer}")
        super().__init__(**kwargs)
        self.layer = layer

    def build(self, input_shape: Any = None) -> None:
        self.built = True

    def get_config(self) -> Dict[str, Any]:
        cfg = super().get_config()
        cfg["layer"] = serialize(self.layer)
        return cfg

    @classmethod
    def from_config(cls, config: Dict[str, Any], custom_objects: Optional[Dict[str, Any]] = None) -> "Wrapper":
        config = dict(config)
        layer = deserialize(config.pop("layer"), custom_objects=custom_objects)
        return cls(layer, **config)


Wrapper.register(_LM.TimeDistributed)
Wrapper.register(_LM.Bidirectional)


def serialize(layer: Any) -> Dict[str, Any]:
    """{"class_name", "config"} of a layer (tf.keras.layers.serialize)."""
    from .saving import serialize_layer
    return serialize_layer(layer)


def deserialize(config: Dict[str, Any], custom_objects: Optional[Dict[str, Any]] = None) -> Any:
    """The layer a {"class_name", "config"} describes (tf.keras.layers.deserialize); a model's
    config ("Sequential", "Model") gives the model."""
    from .saving import deserialize_layer, model_from_config
    if config.get("class_name") in ("Sequential", "Model", "Functional"):
        return model_from_config(config, custom_objects)
    return deserialize_layer(config, custom_objects)


def feature_layer_call(layer: Layer, features: Any, build: Any) -> Any:
    """A feature-column layer's call (DenseFeatures, SequenceFeatures): `features` a dict (or
    the list of its values in key order, as a model replays it), `build(builder)` run in the
    layer's variable scope (made on the first call, reused after), the variables it made
    recorded as the layer's, the call registered with the dict's tensors in key order."""
    from ..nn.feature_column.columns import _LazyBuilder
    keys = layer._keys
    if isinstance(features, (list, tuple)) and keys is not None and len(features) == len(keys):
        features = dict(zip(keys, features))
    if not isinstance(features, dict):
        raise ValueError(f"We expected a dictionary here. Instead we got: {features}")
    first_t = next((t for t in features.values() if hasattr(t, "graph")), None)
    g = first_t.graph if first_t is not None else _g.get_default_graph()
    with g.as_default():
        first = layer._scope is None
        scope = variable_scope(None, default_name=layer.name) if first else variable_scope(layer._scope, reuse=True)
        before = set(id(v) for v in g.get_collection(GraphKeys.GLOBAL_VARIABLES))
        with scope as vs:
            layer._scope = vs
            res = build(_LazyBuilder(features))
        if first:
            layer._own_weights = [v for v in g.get_collection(GraphKeys.GLOBAL_VARIABLES) if id(v) not in before]
            layer.built = True
    layer._keys = sorted(features)
    register_call(layer, [features[k] for k in layer._keys], list(res) if isinstance(res, tuple) else res)
    return res


class DenseFeatures(Layer):
    """The dense feature columns' outputs for a dict of features, each flattened to [batch, n],
    side by side in the columns' name order ([batch, sum of n]), as input_layer makes them;
    the columns' variables live under the layer's scope (dense_features/<column>/...).  Called
    on a dict; the model records the dict's tensors in key order (a model called on new inputs
    passes them as that list)."""

    def __init__(self, feature_columns: Any, trainable: bool = True, name: Optional[str] = None, **kwargs: Any):
        from ..nn.feature_column.columns import _DenseColumn
        from ..nn.feature_column.models import _normalize
        super().__init__(trainable=trainable, name=name, **kwargs)
        cols = _normalize(feature_columns)
        for c in cols:
            if not isinstance(c, _DenseColumn):
                raise ValueError(f"Items of feature_columns must be a DenseColumn. You can wrap a categorical column "
                                 f"with an embedding_column or indicator_column. Given: {c}")
        self._feature_columns = cols
        self._keys: Optional[list] = None

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        total = sum(c._variable_shape.num_elements() for c in self._feature_columns)
        batch = None
        if isinstance(input_shape, dict) and input_shape:
            batch = TensorShape(next(iter(input_shape.values()))).as_list()[0]
        return TensorShape([batch, total])

    def __call__(self, features: Any, cols_to_output_tensors: Optional[Dict[Any, Any]] = None,
                 training: Any = None) -> Any:
        return feature_layer_call(self, features, lambda builder: self._outputs(builder, cols_to_output_tensors))

    def _outputs(self, builder: Any, cols_to_output_tensors: Optional[Dict[Any, Any]]) -> Any:
        from ..nn.feature_column.models import _check_batch_sizes, _collections, _flatten
        cols = sorted(self._feature_columns, key=lambda c: c.name)
        outputs = []
        for c in cols:
            with variable_scope(c._var_scope_name):
                t = c._get_dense_tensor(builder, weight_collections=_collections(None), trainable=self.trainable)
                out = _flatten(t, c._variable_shape.num_elements())
            outputs.append(out)
            if cols_to_output_tensors is not None:
                cols_to_output_tensors[c] = out
        _check_batch_sizes(outputs, cols)
        return _a.concat(outputs, 1)

    def get_config(self) -> Dict[str, Any]:
        raise NotImplementedError("DenseFeatures.get_config: collflow does not serialize feature columns; a model "
                                  "with DenseFeatures is saved with save_weights, not to a config")
