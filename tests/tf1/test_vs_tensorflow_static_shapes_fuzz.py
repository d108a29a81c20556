"""Randomised differential checks of STATIC shapes against TensorFlow's compat.v1 graph mode.

Random programs (tests/tf1/shapefuzz.py) feed placeholders of partly known shapes ([None, 3],
[2, None, None], unknown rank) through chains of ops: broadcasting, reductions, matmul,
reshape to shapes computed from tf.shape slices/stacks/concats/casts, transpose, joins and
splits, tile/pad, slicing (masks, fed bounds), gather, one_hot/where/boolean_mask/top_k,
conv/pool/depthwise/conv2d_transpose/resize/dense, range/fill/zeros of fed sizes,
cond/while_loop/map_fn/scan, set_shape and tf.data iterators.  Every op output's static shape
(`shape.as_list()`, None for an unknown rank) must equal TensorFlow's, or be MORE specific
but compatible with it where collflow evaluates a shape subgraph TF's shape inference does
not (listed in ALLOWED_MORE; the rest of such a program is not compared, as later steps read
the static shapes); building must fail in collflow exactly where it fails in TF.
"""
import os
import sys
import warnings

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)
import shapefuzz  # noqa: E402

tf = pytest.importorskip("tensorflow.compat.v1")
import collflow.compat.v1 as cf  # noqa: E402

tf.disable_eager_execution()
pytestmark = pytest.mark.timeout(600)

SEEDS = range(0, 1200)
CHUNK = 100
# collflow knows more than TF here, always correctly (the value is fixed by static dims):
# TF's shape inference does not fold arithmetic over a slice of a partly known shape
# (reduce_prod(shape(x)[1:]) with x of shape [None, 2, 3] is 6 in collflow, ? in TF;
# resize_images(x, shape(x)[1:3] * 2) with x's height and width known).  An op that
# consumes such an output may then know more too.
ALLOWED_MORE = {"op_reshape", "op_conv"}


def _more_specific(cf_shape, tf_shape):
    """True when cf_shape refines tf_shape (compatible, and known wherever TF's is)."""
    if tf_shape is None:
        return True
    if cf_shape is None or len(cf_shape) != len(tf_shape):
        return False
    return all(t is None or c == t for c, t in zip(cf_shape, tf_shape))


def _compare(seed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        log, want = shapefuzz.build(tf, seed)
    got = shapefuzz.build(cf, seed, replay=log)[1]
    bad = []
    for w, g in zip(want, got):
        step, name, ws = w
        gs = g[2]
        if isinstance(ws, str) or isinstance(gs, str):
            if isinstance(ws, str) != isinstance(gs, str):
                bad.append(f"seed {seed} step {step} {name}: TF {ws} / collflow {gs}")
                break  # the two programs' tensors differ from here on
            continue
        if ws == gs:
            continue
        ok = (ws is not None and gs is not None and len(ws) == len(gs)
              and all(_more_specific(c, t) for c, t in zip(gs, ws)))
        if ok and name in ALLOWED_MORE:
            break  # later steps may read the (more specific) static shapes and so differ
        bad.append(f"seed {seed} step {step} {name}: TF {ws} / collflow {gs}")
    return bad


@pytest.mark.parametrize("start", range(SEEDS.start, SEEDS.stop, CHUNK))
def test_static_shapes_match_tensorflow(start):
    bad = []
    for seed in range(start, min(start + CHUNK, SEEDS.stop)):
        bad += _compare(seed)
    assert not bad, "\n".join(bad[:20])


def test_set_shape_incompatible_raises_value_error_in_both():
    for lib in (tf, cf):
        with lib.Graph().as_default():
            x = lib.placeholder(lib.float32, [None, 3])
            for bad in ([2, 4], [3], [None, 3, 1]):
                y = lib.identity(x)
                with pytest.raises(ValueError):
                    y.set_shape(bad)
            y = lib.identity(x)
            y.set_shape([2, None])
            assert y.shape.as_list() == [2, 3]
