"""tf.nn.conv3d_transpose: the adjoint of conv3d (<conv3d(x), v> = <x, conv3d_transpose(v)>),
its gradients by finite differences, and its values against TensorFlow's."""
import numpy as np
import pytest

import collflow.compat.v1 as cf
from gradcheck import Case, check_case
from tf_peer import run_in_both

CASES = [  # (value shape, filter shape [kd, kh, kw, out, in], output_shape, strides, padding)
    ((2, 2, 3, 2, 3), (2, 2, 2, 4, 3), (2, 4, 6, 4, 4), (1, 2, 2, 2, 1), "SAME"),
    ((1, 3, 2, 2, 2), (3, 2, 1, 2, 2), (1, 5, 3, 2, 2), (1, 1, 1, 1, 1), "VALID"),
    ((1, 2, 2, 2, 1), (3, 3, 3, 2, 1), (1, 5, 5, 5, 2), (1, 2, 2, 2, 1), "VALID"),
]


@pytest.mark.parametrize("vs,fs,out,strides,padding", CASES)
def test_adjoint_of_conv3d(vs, fs, out, strides, padding):
    rng = np.random.default_rng(0)
    v, w, x = rng.normal(size=vs), rng.normal(size=fs), rng.normal(size=out)
    with cf.Graph().as_default():
        t = cf.nn.conv3d_transpose(cf.constant(v), cf.constant(w), out, strides, padding)
        y = cf.nn.conv3d(cf.constant(x), cf.constant(w), strides, padding)
        assert t.shape.as_list() == list(out)
        with cf.Session() as s:
            tv, yv = s.run([t, y])
    np.testing.assert_allclose(np.sum(yv * v), np.sum(x * tv), rtol=1e-10)


@pytest.mark.parametrize("vs,fs,out,strides,padding", CASES[:2])
def test_gradients_by_finite_differences(vs, fs, out, strides, padding):
    check_case(Case("MatMul", lambda v, w: cf.nn.conv3d_transpose(v, w, out, strides, padding), [vs, fs],
                    id="conv3d_transpose"))


def test_batch_from_a_tensor_and_errors():
    with cf.Graph().as_default():
        v = cf.placeholder(cf.float32, [None, 2, 2, 2, 3])
        w = cf.constant(np.ones((2, 2, 2, 4, 3), np.float32))
        t = cf.nn.conv3d_transpose(v, w, [-1, 4, 4, 4, 4], [1, 2, 2, 2, 1], "SAME")
        assert t.shape.as_list() == [None, 4, 4, 4, 4]
        with cf.Session() as s:
            assert s.run(t, {v: np.ones((3, 2, 2, 2, 3), np.float32)}).shape == (3, 4, 4, 4, 4)
        with pytest.raises(cf.errors.InvalidArgumentError, match="channels"):
            cf.nn.conv3d_transpose(v, w, [-1, 4, 4, 4, 5], [1, 2, 2, 2, 1], "SAME")
        with pytest.raises(cf.errors.InvalidArgumentError, match="is not what conv3d maps"):
            cf.nn.conv3d_transpose(v, w, [-1, 8, 8, 8, 4], [1, 2, 2, 2, 1], "SAME")


@pytest.mark.parametrize("vs,fs,out,strides,padding", CASES)
def test_same_values_and_gradients_as_tensorflow(vs, fs, out, strides, padding):
    rng = np.random.default_rng(1)
    v, w = rng.normal(size=vs).astype(np.float32), rng.normal(size=fs).astype(np.float32)

    def program(T):
        vt, wt = T.constant(v), T.constant(w)
        t = T.nn.conv3d_transpose(vt, wt, list(out), list(strides), padding)
        loss = T.reduce_sum(t * t)
        return [t] + T.gradients(loss, [vt, wt])
    ours, theirs = run_in_both(program)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)
