"""tf.strings.format and unsorted_segment_join against TensorFlow."""
import numpy as np
import pytest

tf = pytest.importorskip("tensorflow.compat.v1")
import collflow.compat.v1 as cf  # noqa: E402

tf.disable_eager_execution()
pytestmark = pytest.mark.timeout(300)


def _both(build):
    out = []
    for mod in (tf, cf):
        with mod.Graph().as_default():
            with mod.Session() as s:
                v = np.asarray(s.run(build(mod)), dtype=object)
        out.append([e.decode() if isinstance(e, bytes) else e for e in v.reshape(-1).tolist()])
    return out


@pytest.mark.parametrize("summarize", [1, 2, 3, -1])
@pytest.mark.parametrize("value", [np.arange(12).reshape(3, 4), np.array([1.5, -2.25, 3e10], np.float32),
                                   np.array(7), np.array([True, False]), np.zeros([2, 0]),
                                   np.arange(30).reshape(2, 3, 5)])
def test_format(value, summarize):
    want, got = _both(lambda m: m.strings.format("v={} s={}", [m.constant(value), m.constant("a b")],
                                                 summarize=summarize))
    assert got == want


def test_unsorted_segment_join():
    data = np.array([["hello", ""], ["", "x"], ["a", "b"], ["c", ""]], dtype=object)
    want, got = _both(lambda m: m.strings.unsorted_segment_join(data, [2, 0, 2, 2], 4, separator=", "))
    assert got == want
