"""The shape VGG, AlexNet v2 and OverFeat share in slim.nets: a stack of convolutions and max
pools described as a table, then the classifier as convolutions (fc6 VALID over the whole map,
dropout, fc7 1x1, dropout, fc8 1x1 without activation), so the nets also run fully
convolutionally on larger inputs."""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, Tuple

from ._common import ops, slim

# a trunk layer: ("conv", repeat or None, depth, kernel, stride, padding or None, scope)
#                ("pool", kernel, stride, scope)
Layer = Tuple[Any, ...]


def _trunk(net: Any, layers: Sequence[Layer]) -> Any:
    for spec in layers:
        if spec[0] == "pool":
            _, kernel, stride, scope = spec
            net = slim.max_pool2d(net, kernel, stride, scope=scope)
            continue
        _, repeat, depth, kernel, stride, padding, scope = spec
        kw = {} if padding is None else {"padding": padding}
        if repeat is None:
            net = slim.conv2d(net, depth, kernel, stride, scope=scope, **kw)
        else:
            # slim.repeat names the copies scope/scope_1, scope/scope_2, ...
            net = slim.repeat(net, repeat, slim.conv2d, depth, kernel, stride, scope=scope, **kw)
    return net


def conv_classifier(inputs: Any, trunk: Sequence[Layer], fc6: Tuple[int, Sequence[int]], fc7_depth: int,
                    num_classes: int, is_training: Any, dropout_keep_prob: float, spatial_squeeze: bool,
                    scope: Optional[str], default_scope: str, collection_by_name: bool,
                    collect_fc: bool = True, head_scope: Optional[Callable[[], Any]] = None) -> Tuple[Any, dict]:
    """Builds trunk + convolutional classifier; returns (logits, end_points) as slim.nets does.

    `collection_by_name`: the end-point collection is named after the scope's name (vgg_19,
    overfeat) rather than its name scope (the others): it only matters when two nets share a
    graph, and is kept so their end points collect as TF's do.  `head_scope` opens extra
    arg_scope defaults around the classifier (AlexNet's and OverFeat's initializers)."""
    with ops.variable_scope(scope, default_scope, [inputs]) as sc:
        collection = (sc.name if collection_by_name else sc.original_name_scope) + "_end_points"
        collected = [slim.conv2d, slim.max_pool2d] + ([slim.fully_connected] if collect_fc else [])
        with slim.arg_scope(collected, outputs_collections=collection):
            net = _trunk(inputs, trunk)
            with (head_scope() if head_scope is not None else slim.arg_scope([])):
                net = slim.conv2d(net, fc6[0], fc6[1], padding="VALID", scope="fc6")
                net = slim.dropout(net, dropout_keep_prob, is_training=is_training, scope="dropout6")
                net = slim.conv2d(net, fc7_depth, [1, 1], scope="fc7")
                net = slim.dropout(net, dropout_keep_prob, is_training=is_training, scope="dropout7")
                head_kw = {}
                if head_scope is not None:
                    head_kw["biases_initializer"] = ops.zeros_initializer()
                net = slim.conv2d(net, num_classes, [1, 1], activation_fn=None, normalizer_fn=None, scope="fc8",
                                  **head_kw)
            end_points = slim.utils.convert_collection_to_dict(collection)
            if spatial_squeeze:
                net = ops.squeeze(net, [1, 2], name="fc8/squeezed")
                end_points[sc.name + "/fc8"] = net
            return net, end_points
