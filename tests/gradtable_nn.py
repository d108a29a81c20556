"""Gradient-check cases for the nn ops (and their differentiable gradient ops)."""
import numpy as np

import collflow as cf
from collflow.graph.ops import nn_ops as nn
from collflow.graph.ops.op_util import single
from gradcheck import Case


def _away_from_zero(*shapes):
    """Inputs whose magnitude is at least 0.1 (kinks of relu-like ops stay out of reach)."""
    return lambda r: [r.uniform(0.1, 2.0, s) * r.choice([-1.0, 1.0], s) for s in shapes]


def _labels(shape, n):
    return np.random.default_rng(7).integers(0, n, size=shape).astype(np.int32)


def _distributions(r, shape):
    """Random rows summing to 1 (label distributions)."""
    v = r.uniform(0.05, 1.0, shape)
    return v / v.sum(axis=-1, keepdims=True)


def _dyn(x, shape):
    """x with a static shape that hides some dims (exercises the run-time shape paths)."""
    return cf.placeholder_with_default(x, shape)


_C = dict(strides=1, padding="VALID")


def _max_pool_grad_of(g):
    """MaxPoolGrad of a fixed input with distinct values (no ties), 3x3 windows, stride 2, SAME."""
    x = cf.cast(cf.constant(np.random.default_rng(3).permutation(50).reshape(1, 5, 5, 2)), g.dtype)
    return single("MaxPoolGrad", [x, cf.nn.max_pool2d(x, 3, 2, "SAME"), g],
                  {"ksize": (3, 3), "strides": (2, 2), "padding": "SAME"})

_POOL3D = {"ksize": [2, 2, 2], "strides": [1, 2, 1], "padding": "SAME"}


def _pool3d_input(dtype):
    """A fixed NDHWC volume with distinct values (no ties) for the MaxPool3D gradient ops."""
    return cf.cast(cf.constant(np.random.default_rng(4).permutation(72).reshape(1, 3, 4, 3, 2)), dtype)


def _max_pool3d_grad_op(op_type):
    """op_type (MaxPool3DGrad or MaxPool3DGradGrad) of a fixed pooled volume, as a function of
    its last input; each is linear there, the other being its derivative."""
    def build(g):
        x = _pool3d_input(g.dtype)
        return single(op_type, [x, cf.nn.max_pool3d(x, [1, 2, 2, 2, 1], [1, 1, 2, 1, 1], "SAME"), g], _POOL3D)
    return build


CASES = [
    # activations
    Case("Relu", cf.nn.relu, [(3, 4)], make_inputs=_away_from_zero((3, 4))),
    Case("ReluGrad", lambda g, y: single("ReluGrad", [g, y]), [(3, 4), (3, 4)],
         make_inputs=_away_from_zero((3, 4), (3, 4))),
    Case("LeakyRelu", lambda x: cf.nn.leaky_relu(x, alpha=0.3), [(3, 4)], make_inputs=_away_from_zero((3, 4))),
    Case("LeakyRelu", lambda x: cf.nn.leaky_relu(x, alpha=1.5), [(3, 4)], make_inputs=_away_from_zero((3, 4)),
         id="LeakyRelu-alpha>1"),
    Case("LeakyReluGrad", lambda g, x: single("LeakyReluGrad", [g, x], {"alpha": 0.2}), [(3, 4), (3, 4)],
         make_inputs=_away_from_zero((3, 4), (3, 4))),
    Case("Sigmoid", cf.nn.sigmoid, [(3, 4)], low=-4, high=4),
    Case("SigmoidGrad", lambda y, dy: single("SigmoidGrad", [y, dy]), [(3, 4), (3, 4)],
         make_inputs=lambda r: [r.uniform(0.05, 0.95, (3, 4)), r.uniform(-2, 2, (3, 4))]),
    Case("Tanh", cf.nn.tanh, [(3, 4)]),
    Case("TanhGrad", lambda y, dy: single("TanhGrad", [y, dy]), [(3, 4), (3, 4)],
         make_inputs=lambda r: [r.uniform(-0.95, 0.95, (3, 4)), r.uniform(-2, 2, (3, 4))]),
    # softmax family
    Case("Softmax", cf.nn.softmax, [(3, 5)]),
    Case("Softmax", lambda x: cf.nn.softmax(x, axis=0), [(3, 5)], id="Softmax-axis0"),
    Case("LogSoftmax", cf.nn.log_softmax, [(3, 5)]),
    Case("LogSoftmax", lambda x: cf.nn.log_softmax(x, axis=1), [(2, 3, 4)], id="LogSoftmax-axis1"),
    # both outputs (loss and backprop) are weighted: covers double backprop through xent
    Case("SparseSoftmaxCrossEntropyWithLogits",
         lambda z: nn.sparse_softmax_cross_entropy_with_logits_pair(labels=_labels((4,), 5), logits=z), [(4, 5)]),
    Case("SparseSoftmaxCrossEntropyWithLogits",
         lambda z: cf.nn.sparse_softmax_cross_entropy_with_logits(labels=_labels((2, 3), 4), logits=z),
         [(2, 3, 4)], id="SparseXent-rank3-loss-only"),
    # labels are distributions: TF1's logits gradient is softmax - labels, the loss's derivative
    # only when each label row sums to 1 (tests/tf1/test_tf1_semantics_ops.py states the rest)
    Case("SoftmaxCrossEntropyWithLogits",
         lambda z, y: nn.softmax_cross_entropy_with_logits_pair(labels=y, logits=z), [(4, 5), (4, 5)],
         make_inputs=lambda r: [r.uniform(-2, 2, (4, 5)), _distributions(r, (4, 5))]),
    Case("SoftmaxCrossEntropyWithLogits",
         lambda z, y: cf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=z), [(3, 4), (3, 4)],
         make_inputs=lambda r: [r.normal(size=(3, 4)), _distributions(r, (3, 4))], id="SoftmaxXent-v2-loss-only"),
    Case("SoftmaxCrossEntropyWithLogits",
         lambda z, y: cf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=z, axis=0), [(4, 3), (4, 3)],
         make_inputs=lambda r: [r.normal(size=(4, 3)), np.ascontiguousarray(_distributions(r, (3, 4)).T)],
         id="SoftmaxXent-v2-axis0"),
    # convolution: both paddings, strides 1 and 2, dilation, run-time batch size
    Case("Conv2D", lambda x, w: cf.nn.conv1d(x, w, 2, "SAME"), [(2, 7, 2), (3, 2, 3)]),
    Case("Conv2D", lambda x, w: cf.nn.conv2d(x, w, strides=1, padding="VALID"), [(1, 5, 5, 2), (3, 3, 2, 3)]),
    Case("Conv2D", lambda x, w: cf.nn.conv2d(x, w, strides=[1, 2, 2, 1], padding="SAME"),
         [(2, 5, 4, 2), (3, 2, 2, 3)], id="Conv2D-same-stride2"),
    Case("Conv2D", lambda x, w: cf.nn.conv2d(x, w, strides=1, padding="SAME", dilations=2),
         [(1, 5, 5, 1), (2, 2, 1, 2)], id="Conv2D-dilated"),
    Case("Conv2D", lambda x, w: cf.nn.conv2d(_dyn(x, (None, None, None, 2)), _dyn(w, None), strides=2,
                                             padding="VALID"),
         [(2, 5, 5, 2), (2, 2, 2, 2)], id="Conv2D-dynamic-shapes"),
    Case("Conv2DBackpropInput",
         lambda w, dy: cf.nn.conv2d_backprop_input([1, 5, 5, 2], w, dy, strides=2, padding="SAME"),
         [(3, 3, 2, 3), (1, 3, 3, 3)]),
    # stride 1: the input gradient as a full correlation (even kernels pad unevenly under SAME)
    Case("Conv2D", lambda x, w: cf.nn.conv2d(x, w, strides=1, padding="SAME"), [(2, 5, 6, 2), (4, 3, 2, 3)],
         id="Conv2D-same-stride1-even-kernel"),
    Case("Conv2DBackpropInput",
         lambda w, dy: cf.nn.conv2d_backprop_input([2, 6, 5, 3], w, dy, strides=1, padding="VALID"),
         [(3, 2, 3, 2), (2, 4, 4, 2)], id="Conv2DBackpropInput-valid-stride1"),
    Case("Conv2DBackpropFilter",
         lambda x, dy: cf.nn.conv2d_backprop_filter(x, [3, 3, 2, 3], dy, strides=1, padding="VALID"),
         [(1, 5, 5, 2), (1, 3, 3, 3)]),
    # NCHW (transposes around the NHWC op) and explicit padding (a zero Pad and VALID)
    Case("Conv2D", lambda x, w: cf.nn.conv2d(x, w, [1, 1, 2, 1], [[0, 0], [0, 0], [2, 0], [1, 1]],
                                             data_format="NCHW"),
         [(2, 2, 5, 4), (3, 2, 2, 3)], id="Conv2D-nchw-explicit-padding"),
    Case("Conv2DBackpropInput",
         lambda w, dy: cf.nn.conv2d_backprop_input([1, 2, 5, 5], w, dy, [1, 1, 1, 1], [[0, 0], [0, 0], [1, 0], [0, 2]],
                                                   data_format="NCHW"),
         [(3, 3, 2, 3), (1, 3, 4, 5)], id="Conv2DBackpropInput-nchw-explicit"),
    Case("Conv2DBackpropFilter",
         lambda x, dy: cf.nn.conv2d_backprop_filter(x, [2, 3, 2, 2], dy, [1, 2, 1, 1], [[0, 0], [1, 1], [0, 1], [0, 0]]),
         [(1, 5, 4, 2), (1, 3, 3, 2)], id="Conv2DBackpropFilter-explicit"),
    Case("DepthwiseConv2dNative", lambda x, w: cf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME", rate=[1, 2],
                                                                       data_format="NCHW"),
         [(1, 2, 4, 5), (2, 2, 2, 2)], id="DepthwiseConv2dNative-nchw"),
    Case("MaxPool", lambda x: cf.nn.max_pool(x, [1, 1, 2, 3], [1, 1, 2, 1], "SAME", data_format="NCHW"),
         [(2, 2, 5, 4)], id="MaxPool-nchw"),
    Case("AvgPool", lambda x: cf.nn.avg_pool(x, [1, 1, 3, 2], [1, 1, 1, 2], "SAME", data_format="NCHW"),
         [(1, 3, 4, 5)], id="AvgPool-nchw"),
    Case("AvgPool", lambda x: cf.nn.pool(x, [2, 2], "AVG", "VALID", dilation_rate=[2, 1]), [(1, 6, 5, 2)],
         id="AvgPool-dilated-pool"),
    Case("BiasAdd", lambda x, b: cf.nn.bias_add(x, b, data_format="NCHW"), [(2, 3, 2, 2, 2), (3,)],
         id="BiasAdd-nchw-rank5"),
    Case("Conv2D", lambda x, w: cf.nn.conv1d(x, w, 2, "SAME", data_format="NCW"), [(2, 2, 7), (3, 2, 3)],
         id="Conv2D-conv1d-ncw"),
    Case("DepthwiseConv2dNativeBackpropFilter",
         lambda x, dy: cf.nn.depthwise_conv2d_native_backprop_filter(x, [2, 2, 2, 2], dy, [1, 1, 1, 1], "VALID",
                                                                     data_format="NCHW"),
         [(1, 2, 4, 3), (1, 4, 3, 2)], id="DepthwiseConv2dNativeBackpropFilter-nchw"),
    # depthwise: multipliers 1 and 2, strides, dilation, SAME's uneven padding, run-time batch
    Case("DepthwiseConv2dNative", lambda x, w: cf.nn.depthwise_conv2d_native(x, w, [1, 2, 1, 1], "SAME"),
         [(2, 5, 4, 2), (3, 2, 2, 2)]),
    Case("DepthwiseConv2dNative", lambda x, w: cf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "VALID", rate=[2, 1]),
         [(1, 6, 5, 3), (2, 3, 3, 1)], id="DepthwiseConv2dNative-rate"),
    Case("DepthwiseConv2dNative", lambda x, w: cf.nn.depthwise_conv2d(_dyn(x, (None, 5, 5, 2)), w, [1, 2, 2, 1],
                                                                       "SAME"),
         [(2, 5, 5, 2), (2, 2, 2, 1)], id="DepthwiseConv2dNative-dynamic-batch"),
    Case("DepthwiseConv2dNativeBackpropInput",
         lambda w, dy: cf.nn.depthwise_conv2d_native_backprop_input([1, 5, 5, 2], w, dy, [1, 2, 2, 1], "SAME"),
         [(3, 3, 2, 2), (1, 3, 3, 4)]),
    Case("DepthwiseConv2dNativeBackpropFilter",
         lambda x, dy: cf.nn.depthwise_conv2d_native_backprop_filter(x, [2, 3, 2, 2], dy, [1, 1, 1, 1], "VALID"),
         [(2, 4, 5, 2), (2, 3, 3, 4)]),
    Case("DepthwiseConv2dNativeBackpropFilter",
         lambda x, dy: cf.nn.depthwise_conv2d_native_backprop_filter(x, [3, 2, 3, 1], dy, [1, 1, 2, 1], "SAME"),
         [(1, 4, 5, 3), (1, 4, 3, 3)], id="DepthwiseConv2dNativeBackpropFilter-same-stride2"),
    # pooling
    Case("MaxPool", lambda x: cf.nn.max_pool(x, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="VALID"),
         [(2, 4, 4, 2)]),
    Case("MaxPool", lambda x: cf.nn.max_pool2d(x, ksize=3, strides=2, padding="SAME"), [(1, 5, 5, 2)],
         id="MaxPool-same-overlapping"),
    # distinct values (no ties), overlapping SAME windows: the gradient goes to each argmax
    Case("MaxPoolWithArgmax", lambda x: cf.nn.max_pool_with_argmax(x, [1, 3, 3, 1], [1, 2, 2, 1], "SAME")[0],
         [(2, 5, 5, 2)], make_inputs=lambda rng: [rng.permutation(100).reshape(2, 5, 5, 2) * 0.1]),
    # windows that tile the input (the gradient's fast road), unequal sides
    Case("MaxPool", lambda x: cf.nn.max_pool(x, ksize=[1, 2, 3, 1], strides=[1, 2, 3, 1], padding="SAME"),
         [(2, 4, 6, 3)], id="MaxPool-tiled-2x3"),
    # MaxPoolGrad in its gradient input (second derivatives of max pooling): MaxPoolGradGrad;
    # the pooled input is a fixed permutation (no ties), overlapping SAME windows
    Case("MaxPoolGrad", _max_pool_grad_of, [(1, 3, 3, 2)]),
    # 3-D max pooling: distinct values (no ties), overlapping SAME and tiled VALID windows; its
    # gradient and the gradient's gradient, each linear in its last input
    Case("MaxPool3D", lambda x: cf.nn.max_pool3d(x, [1, 2, 3, 2, 1], [1, 1, 2, 1, 1], "SAME"), [(2, 3, 5, 4, 2)],
         make_inputs=lambda rng: [rng.permutation(240).reshape(2, 3, 5, 4, 2) * 0.1]),
    Case("MaxPool3D", lambda x: cf.nn.max_pool3d(x, [1, 2, 2, 2, 1], [1, 2, 2, 2, 1], "VALID"), [(1, 4, 4, 2, 3)],
         make_inputs=lambda rng: [rng.permutation(96).reshape(1, 4, 4, 2, 3) * 0.1], id="MaxPool3D-tiled"),
    Case("MaxPool3DGrad", _max_pool3d_grad_op("MaxPool3DGrad"), [(1, 3, 2, 3, 2)]),
    Case("MaxPool3DGradGrad", _max_pool3d_grad_op("MaxPool3DGradGrad"), [(1, 3, 4, 3, 2)]),
    Case("AvgPool", lambda x: cf.nn.avg_pool(x, ksize=2, strides=2, padding="VALID"), [(2, 4, 4, 2)]),
    Case("AvgPool", lambda x: cf.nn.avg_pool2d(_dyn(x, (None, 5, 5, 2)), ksize=3, strides=2, padding="SAME"),
         [(1, 5, 5, 2)], id="AvgPool-same-dynamic-batch"),
    Case("AvgPoolGrad", lambda g: single("AvgPoolGrad", [nn._sizes([1, 5, 5, 2]), g],
                                         {"ksize": (3, 3), "strides": (2, 2), "padding": "SAME"}),
         [(1, 3, 3, 2)]),
    # bias and losses
    Case("BiasAdd", cf.nn.bias_add, [(3, 4), (4,)]),
    Case("BiasAdd", cf.nn.bias_add, [(2, 2, 3, 4), (4,)], id="BiasAdd-4d"),
    Case("BiasAddGrad", lambda g: single("BiasAddGrad", [g]), [(2, 3, 4)]),
    Case("L2Loss", cf.nn.l2_loss, [(3, 4)]),
]
