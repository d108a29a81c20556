"""tf.keras.layers taking a list of inputs (TF 1.15, graph mode): the dot-product attention
layers Attention and AdditiveAttention ([query, value] or [query, value, key], with the Keras
masks of query and value, `causal` and `use_scale`) and the merge layer Dot (`axes`,
`normalize`) with its function form `dot`.  Also the shape probe the other new layer modules
use for compute_output_shape: the layer's own graph code run on placeholders in a scratch graph,
so the inferred shape is the one a call would give."""
from __future__ import annotations

from typing import Any, Dict, List, Sequence

from ..graph import graph as _g
from ..graph.graph import GraphKeys
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops.constant_op import placeholder as _placeholder
from ..graph.ops.misc_ops import range as _range
from ..graph.ops.nn_impl import l2_normalize
from ..graph.ops.nn_ops import softmax, tanh
from ..graph.shape import TensorShape
from ..graph.variable_scope import get_variable, variable_scope
from ..nn import layer_classes as _lc
from .layers import _KerasMixin, _initializer, _input_shape_kwargs, mask_of

__all__ = ["Attention", "AdditiveAttention", "Dot", "dot"]


def probe_output_shape(layer: Any, input_shape: Any, call: Any) -> Any:
    """The static output shape of `call(inputs)` on placeholders of `input_shape` (a shape or a
    list of shapes), built in a scratch graph so the layer's own graph and state are untouched."""
    many = isinstance(input_shape, (list, tuple)) and len(input_shape) > 0 and \
        all(isinstance(s, (list, tuple, TensorShape)) for s in input_shape)
    shapes = list(input_shape) if many else [input_shape]
    with _g.Graph().as_default():
        xs = [_placeholder("float32", TensorShape(s).as_list() if TensorShape(s).rank is not None else None)
              for s in shapes]
        out = call(xs if many else xs[0])
    if isinstance(out, (list, tuple)):
        return [TensorShape(o.shape) for o in out]
    return TensorShape(out.shape)


class ShapeProbe:
    """compute_output_shape by the probe: `_probe(x)` builds the layer's output in the scratch
    graph (a weighted layer's variables go there, in a scope of its own); and get_config /
    from_config, the config a saved model writes for the layer (saving.serialize_layer's)."""

    def compute_output_shape(self, input_shape: Any) -> Any:
        return probe_output_shape(self, input_shape, self._probe)

    def get_config(self) -> Dict[str, Any]:
        from .saving import serialize_layer
        return serialize_layer(self)["config"]

    @classmethod
    def from_config(cls, config: Dict[str, Any]) -> Any:
        from .saving import _layer_classes, deserialize_layer
        if _layer_classes().get(cls.__name__) is cls:  # a built-in: the arguments as load_model reads them
            return deserialize_layer({"class_name": cls.__name__, "config": dict(config)})
        return cls(**config)

    def _probe(self, x: Any) -> Any:
        return self._call(x, "probe", None)  # type: ignore[attr-defined]


class _ListCore(_lc.Layer):
    """collflow's layer object for a list of inputs: the variables of the first call are the
    layer's, later calls reuse them (as _lc.Layer does for one input)."""

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(inputs, (list, tuple)):
            raise ValueError(f"Layer {self.name} expects a list of inputs, got {inputs!r}")
        xs = [_g.convert_to_tensor(t) for t in inputs]
        g = xs[0].graph
        with g.as_default():
            first = self._scope is None
            if first:
                with variable_scope(None, default_name=self._name or self._base) as vs:
                    self._scope = vs
                before = set(id(v) for v in g.get_collection(GraphKeys.GLOBAL_VARIABLES))
            out = self._call(xs, self._scope, None if first else True, *args, **kwargs)
            if first:
                self._vars = [v for v in g.get_collection(GraphKeys.GLOBAL_VARIABLES) if id(v) not in before]
                self.built = True
        return out


class _ListLayer(ShapeProbe, _KerasMixin, _ListCore):
    """A Keras layer over a list of inputs; `_build_call(xs, masks)` builds it inside its scope."""

    def __init__(self, **kwargs: Any):
        self._batch_input_shape = _input_shape_kwargs(kwargs)
        super().__init__(kwargs.pop("trainable", True), kwargs.pop("name", None), **kwargs)

    def __call__(self, inputs: Any, *args: Any, mask: Any = None, **kwargs: Any) -> Any:
        # the inputs' Keras masks unless the call gives them (mask=[query_mask, value_mask])
        if isinstance(inputs, (list, tuple)):
            masks = list(mask) if mask is not None else [mask_of(t) for t in inputs]
        else:
            masks = None
        self._call_masks = masks
        try:
            return super().__call__(inputs, *args, masks=masks, **kwargs)
        finally:
            self._call_masks = None

    def _call(self, xs: Any, name: Any, reuse: Any, masks: Any = None, **kwargs: Any) -> Any:
        with variable_scope(name, reuse=reuse):
            return self._build_call(list(xs), masks, **kwargs)

    def _probe(self, xs: Any) -> Any:
        return self._call(xs, "probe", None)

    def _build_call(self, xs: List[Any], masks: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


# -- attention ---------------------------------------------------------------------------------

def _causal_mask(scores: Any) -> Any:
    """[Tq, Tv] bool: query step i sees value steps j <= i."""
    shape = _a.shape(scores)
    rows = _a.expand_dims(_range(shape[-2]), 1)
    cols = _a.expand_dims(_range(shape[-1]), 0)
    return _m.greater_equal(rows, cols)


class _BaseAttention(_ListLayer):
    """softmax(scores(query, key) masked) @ value, zeroed at masked query steps.  The output
    carries the query's mask."""

    def __init__(self, use_scale: bool = False, causal: bool = False, **kwargs: Any):
        super().__init__(**kwargs)
        self.use_scale, self.causal = bool(use_scale), bool(causal)
        self.supports_masking = True

    def _scores(self, q: Any, k: Any) -> Any:
        raise NotImplementedError

    def _build_call(self, xs: List[Any], masks: Any, training: Any = None, return_attention_scores: bool = False,
                    use_causal_mask: bool = False) -> Any:
        if len(xs) not in (2, 3):
            raise ValueError(f"{type(self).__name__} layer must be called on a list of inputs, namely [query, value] "
                             f"or [query, value, key]. Given length: {len(xs)}")
        masks = list(masks or [None, None])
        if len(masks) not in (2, 3):
            raise ValueError(f"{type(self).__name__} layer mask must be a list of length 2, namely [query_mask, "
                             f"value_mask]. Given length: {len(masks)}")
        q, v = xs[0], xs[1]
        k = xs[2] if len(xs) == 3 else v
        scores = self._scores(q, k)
        keep = None
        if masks[1] is not None:
            keep = _a.expand_dims(_g.convert_to_tensor(masks[1]), -2)  # [batch, 1, Tv]
        if self.causal or use_causal_mask:  # use_causal_mask: tf_keras 2.x's call argument
            c = _causal_mask(scores)
            keep = c if keep is None else _m.logical_and(keep, c)
        if keep is not None:
            # a masked key gets a score far below the rest: it takes no share of the softmax
            scores = scores - 1e9 * _m.cast(_m.logical_not(keep), scores.dtype)
        weights = softmax(scores)
        out = _m.matmul(weights, v)
        if masks[0] is not None:
            out = out * _m.cast(_a.expand_dims(_g.convert_to_tensor(masks[0]), -1), out.dtype)
        return [out, weights] if return_attention_scores else out

    def _output_mask(self, inputs: Any, mask: Any) -> Any:
        masks = getattr(self, "_call_masks", None)
        return masks[0] if masks else None

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        return None if not mask else mask[0]

    @property
    def scale(self) -> Any:
        return self._var("scale")


class Attention(_BaseAttention):
    """Dot-product (Luong) attention: scores = query @ key^T (times a learned scalar `scale`,
    initialized to 1, with use_scale)."""
    _base = "attention"

    def _scores(self, q: Any, k: Any) -> Any:
        s = _m.matmul(q, k, transpose_b=True)
        if self.use_scale:
            s = s * get_variable("scale", [], q.dtype, _initializer("ones"), trainable=self.trainable)
        return s


class AdditiveAttention(_BaseAttention):
    """Additive (Bahdanau) attention: scores = sum(scale * tanh(query_i + key_j)) over features,
    with a learned `scale` [dim] (glorot_uniform) when use_scale (the default)."""
    _base = "additive_attention"

    def __init__(self, use_scale: bool = True, causal: bool = False, **kwargs: Any):
        super().__init__(use_scale, causal, **kwargs)

    def _scores(self, q: Any, k: Any) -> Any:
        t = tanh(_a.expand_dims(q, -2) + _a.expand_dims(k, -3))  # [batch, Tq, Tv, dim]
        if self.use_scale:
            dim = int(q.shape.dims[-1])
            t = t * get_variable("scale", [dim], q.dtype, _initializer("glorot_uniform"), trainable=self.trainable)
        return _m.reduce_sum(t, axis=-1)


# -- Dot ---------------------------------------------------------------------------------------

def _batch_dot(x: Any, y: Any, ax: int, ay: int) -> Any:
    """Keras's batch_dot along x's axis `ax` and y's `ay`: x's other axes, then y's (the batch
    axis once); a result of the batch axis alone is [batch, 1]."""
    rx, ry = x.shape.rank, y.shape.rank
    xs = [int(d) for d in x.shape.dims[1:]]
    ys = [int(d) for d in y.shape.dims[1:]]
    if xs[ax - 1] != ys[ay - 1]:
        raise ValueError(f"Dimension incompatibility {xs[ax - 1]} != {ys[ay - 1]}. Layer shapes: {x.shape}, "
                         f"{y.shape}")
    perm_x = [0] + [a for a in range(1, rx) if a != ax] + [ax]
    perm_y = [0, ay] + [a for a in range(1, ry) if a != ay]
    rest_x = [xs[a - 1] for a in perm_x[1:-1]]
    rest_y = [ys[a - 1] for a in perm_y[2:]]
    n = xs[ax - 1]
    px = _a.reshape(_a.transpose(x, perm_x), [-1, _prod(rest_x), n])
    py = _a.reshape(_a.transpose(y, perm_y), [-1, n, _prod(rest_y)])
    out = _m.matmul(px, py)  # [batch, prod(rest_x), prod(rest_y)]
    return _a.reshape(out, [-1] + (rest_x + rest_y or [1]))


def _prod(dims: Sequence[int]) -> int:
    p = 1
    for d in dims:
        p *= d
    return p


class Dot(_ListLayer):
    """The dot product of two tensors' samples along `axes` (an int or a pair), their
    L2-normalized samples with normalize=True (the cosine proximity)."""
    _base = "dot"
    _has_vars = False

    def __init__(self, axes: Any, normalize: bool = False, **kwargs: Any):
        super().__init__(**kwargs)
        if not isinstance(axes, int):
            if not isinstance(axes, (list, tuple)) or len(axes) != 2 or not all(isinstance(a, int) for a in axes):
                raise ValueError("Invalid format for `axes` - must be an integer or a list/tuple of 2 integers. "
                                 f"Received: {axes}")
        self.axes = axes if isinstance(axes, int) else list(axes)
        self.normalize = bool(normalize)
        self.supports_masking = True

    def _call(self, xs: Any, name: Any, reuse: Any, masks: Any = None, **kwargs: Any) -> Any:
        if len(xs) != 2:
            raise ValueError(f"A `Dot` layer should be called on a list of 2 inputs. Received {len(xs)} inputs.")
        x, y = xs
        with _g.name_scope(self._name or self._base):
            axes = [self.axes, self.axes] if isinstance(self.axes, int) else list(self.axes)
            axes = [a % t.shape.rank if a < 0 else a for a, t in zip(axes, (x, y))]
            if self.normalize:
                x, y = l2_normalize(x, axis=axes[0]), l2_normalize(y, axis=axes[1])
            return _batch_dot(x, y, axes[0], axes[1])

    def _output_mask(self, inputs: Any, mask: Any) -> Any:
        return None  # Keras's Dot computes no mask


def dot(inputs: Sequence[Any], axes: Any, normalize: bool = False, **kwargs: Any) -> Any:
    """The functional form of Dot."""
    return Dot(axes=axes, normalize=normalize, **kwargs)(list(inputs))
