"""tf.strings.format and tf.strings.unsorted_segment_join, by hand (TF 1.15's rules)."""
import numpy as np
import pytest

import collflow.compat.v1 as tf

pytestmark = pytest.mark.timeout(120)


def _run(t):
    with tf.Session(graph=t.graph if hasattr(t, "graph") else None) as s:
        return s.run(t)


def test_format_summarizes_as_tf_print():
    with tf.Graph().as_default():
        out = tf.strings.format("a={} b={}!", [tf.constant(np.arange(10)), tf.constant([[1.5, 2.0], [3.0, 4.0]])],
                                summarize=2)
        q = tf.strings.format("[{}]", tf.constant("q"))
        alt = tf.strings.format("x=%s", [tf.constant(3)], placeholder="%s")
        with tf.Session() as s:
            a, b, c = s.run([out, q, alt])
    assert a == b"a=[0 1 ... 8 9] b=[[1.5 2]\n [3 4]]!"
    assert b == b'["q"]' and c == b"x=3"


def test_format_checks_the_placeholder_count():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="2 placeholder"):
            tf.strings.format("{} {}", [tf.constant(1)])


def test_unsorted_segment_join():
    with tf.Graph().as_default():
        out = tf.strings.unsorted_segment_join([["a", "b"], ["c", "d"], ["e", "f"]], [1, 0, 1], 3, separator="-")
        # an empty string first in its segment adds no separator (TF's accumulation)
        lead = tf.strings.unsorted_segment_join(["", "x", "y"], [0, 0, 0], 1, separator="/")
        with tf.Session() as s:
            o, l = s.run([out, lead])
    assert o.tolist() == [[b"c", b"d"], [b"a-e", b"b-f"], [b"", b""]]
    assert l.tolist() == [b"x/y"]


def test_unsorted_segment_join_refuses_out_of_range_ids():
    with tf.Graph().as_default():
        out = tf.strings.unsorted_segment_join(["a", "b"], [0, 3], 2)
        with tf.Session() as s, pytest.raises(tf.errors.InvalidArgumentError, match="out of range"):
            s.run(out)
