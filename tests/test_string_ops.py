"""tf.decode_csv, tf.string_to_number, tf.sequence_mask (graph/ops/string_ops.py): values,
defaults, quoting, NA values, selected columns, the errors; against TensorFlow when installed."""
import numpy as np
import pytest

import collflow.compat.v1 as cft

RECS = ['1,2.5,abc,7', '3,,"x,y",', '-4,1e3,"q""uote",9', 'NA,0.5,z,1']


def _run(tf):
    g = tf.Graph()
    with g.as_default():
        r = tf.placeholder(tf.string, [None])
        cols = tf.decode_csv(r, [[0], [1.0], ["dflt"], tf.constant([5], tf.int64)], na_value="NA")
        sel = tf.decode_csv(r, [[0.0], [""]], select_cols=[1, 2], na_value="NA")
        num = tf.string_to_number(tf.constant(["1.5", "-2", "3e2"]), tf.float64)
        m = tf.sequence_mask([1, 3, 0], 4, dtype=tf.float32)
        m2 = tf.sequence_mask(tf.constant([[2, 1], [0, 3]]))
    with tf.Session(graph=g) as s:
        return s.run([cols, sel, num, m, m2], {r: RECS})


def _text(a):
    return [v.decode() if isinstance(v, bytes) else v for v in np.asarray(a).ravel()]


def test_values_defaults_quotes_and_masks():
    (ints, floats, strs, longs), (sf, ss), num, m, m2 = _run(cft)
    np.testing.assert_array_equal(ints, [1, 3, -4, 0])            # NA -> the default 0
    assert ints.dtype == np.int32 and longs.dtype == np.int64 and floats.dtype == np.float32
    np.testing.assert_array_equal(floats, [2.5, 1.0, 1000.0, 0.5])  # empty -> 1.0
    assert _text(strs) == ["abc", "x,y", 'q"uote', "z"]             # quoted delimiter, doubled quote
    np.testing.assert_array_equal(longs, [7, 5, 9, 1])
    np.testing.assert_array_equal(sf, [2.5, 0.0, 1000.0, 0.5])
    assert _text(ss) == ["abc", "x,y", 'q"uote', "z"]
    np.testing.assert_array_equal(num, [1.5, -2.0, 300.0])
    np.testing.assert_array_equal(m, [[1, 0, 0, 0], [1, 1, 1, 0], [0, 0, 0, 0]])
    assert m2.shape == (2, 2, 3) and m2[1, 1].tolist() == [True, True, True] and not m2[1, 0].any()


@pytest.mark.parametrize("recs,defaults,msg", [
    (["1,2"], [[0], [0], [0]], "expect 3 fields but have 2 in record 0"),
    (["1,,3"], [[0], None, [0]], "field 1 is required but missing in record 0"),
    (["1,x"], [[0], [0]], "field 1 in record 0 is not a valid int32: 'x'"),
])
def test_bad_records_are_named(recs, defaults, msg):
    g = cft.Graph()
    with g.as_default():
        d = [cft.constant([], cft.int32) if x is None else x for x in defaults]
        c = cft.decode_csv(cft.constant(recs), d)
    with cft.Session(graph=g) as s:
        with pytest.raises(cft.errors.InvalidArgumentError, match=msg):
            s.run(c)


def test_string_to_number_error_and_argument_checks():
    g = cft.Graph()
    with g.as_default():
        bad = cft.string_to_number(cft.constant(["1", "two"]), cft.int32)
        with pytest.raises(cft.errors.InvalidArgumentError, match="record_defaults\\[0\\] is empty without a dtype"):
            cft.decode_csv(cft.constant(["1"]), [[]])
        # TF takes float lengths (compared in maxlen's dtype), not strings
        with pytest.raises(cft.errors.InvalidArgumentError, match="sequence_mask: lengths must be numbers"):
            cft.sequence_mask(cft.constant(["1"]))
    with cft.Session(graph=g) as s:
        with pytest.raises(cft.errors.InvalidArgumentError, match="could not correctly convert string: 'two'"):
            s.run(bad)


def test_against_tensorflow():
    tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")
    tft = tensorflow.compat.v1
    tft.disable_eager_execution()
    got, want = _run(cft), _run(tft)
    for a, b in zip(got[0] + got[1] + got[2:], want[0] + want[1] + want[2:]):
        if np.asarray(b).dtype == object:
            assert _text(a) == _text(b)
        else:
            np.testing.assert_array_equal(a, b)


def test_bytes_survive_constants_feeds_and_fetches():
    """TF1 programs write and feed bytes and fetch bytes; collflow holds str inside, and the
    exact bytes come back (so binary records survive)."""
    raw = b"a\xff\x00\x80"
    g = cft.Graph()
    with g.as_default():
        c = cft.constant([raw, b"x"])
        s = cft.constant(b"ab")
        p = cft.placeholder(cft.string, [None])
        joined = cft.string_join([p, c], separator="-")
    with cft.Session(graph=g) as sess:
        got_c, got_s, got_p, got_j = sess.run([c, s, p, joined], {p: [raw, "y"]})
    assert list(got_c) == [raw, b"x"] and got_s == b"ab" and list(got_p) == [raw, b"y"]
    assert list(got_j) == [raw + b"-" + raw, b"y-x"]   # not "b'a\\xff...'"
    with cft.Session(graph=g) as sess:
        np_feed = sess.run(p, {p: np.array([raw, b"q"])})
    assert list(np_feed) == [raw, b"q"]
