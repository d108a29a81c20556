"""tf.train.Example / SequenceExample messages and the parsing ops (tf.parse_example,
tf.parse_single_example, tf.parse_single_sequence_example), by expected values and, where
TensorFlow is installed, against TF's compat.v1 (tests/tf_peer.py)."""
import struct

import numpy as np
import pytest

import collflow.compat.v1 as cf
from collflow.errors import InvalidArgumentError
from tf_peer import run_in_both, tensorflow_v1


def _example(T, **feats):
    """An Example of T (collflow or TF) from name -> list of bytes / floats / ints (None: an empty Feature)."""
    f = {}
    for k, v in feats.items():
        if v is None:
            f[k] = T.train.Feature()
        elif v and isinstance(v[0], bytes):
            f[k] = T.train.Feature(bytes_list=T.train.BytesList(value=v))
        elif v and isinstance(v[0], float):
            f[k] = T.train.Feature(float_list=T.train.FloatList(value=v))
        else:
            f[k] = T.train.Feature(int64_list=T.train.Int64List(value=v))
    return T.train.Example(features=T.train.Features(feature=f))


def _records(T):
    return [_example(T, a=[1.5, 2.5], b=[3, -4, 2 ** 40], s=[b"hi", b"\xff\x00"], i=[2, 0, 1],
                     v=[b"x", b"y", b"z"]).SerializeToString(),
            _example(T, b=[7], a=[0.5, 0.25], e=None).SerializeToString(),
            _example(T, a=[1.0, 2.0], q=[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).SerializeToString()]


def _features(T):
    return {"a": T.FixedLenFeature([2], T.float32), "b": T.VarLenFeature(T.int64), "s": T.VarLenFeature(T.string),
            "d": T.FixedLenFeature([], T.int64, default_value=-1),
            "q": T.FixedLenSequenceFeature([3], T.float32, allow_missing=True),
            "sp": T.SparseFeature("i", "v", T.string, 5),
            "e": T.FixedLenFeature([], T.string, default_value="dflt")}


def _run(fetches, feed=None):
    with cf.Session() as s:
        return s.run(fetches, feed)


def _norm(x):
    """Results of both libraries in one form (TF's strings are bytes, collflow's str)."""
    if isinstance(x, dict):
        return {k: _norm(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)) and not hasattr(x, "indices"):
        return [_norm(v) for v in x]
    if hasattr(x, "indices"):
        return ("sparse", _norm(x.indices), _norm(x.values), _norm(x.dense_shape))
    a = np.asarray(x)
    if a.dtype.kind in "OSU":
        return ([v.decode("utf-8", "surrogateescape") if isinstance(v, bytes) else str(v) for v in a.ravel()],
                a.shape)
    return a.tolist(), str(a.dtype), a.shape


# -- the messages -------------------------------------------------------------------------------

def test_example_round_trip_and_protobuf_api():
    ex = _example(cf, a=[1.5, 0.1], b=[3, -4, 2 ** 62], s=[b"hi", b"\xff"])
    ex.features.feature["z"].int64_list.value.append(7)       # a map entry made on access
    back = cf.train.Example.FromString(ex.SerializeToString())
    assert back == ex
    f = back.features.feature
    assert list(f["b"].int64_list.value) == [3, -4, 2 ** 62]
    assert list(f["a"].float_list.value) == [1.5, float(np.float32(0.1))]
    assert list(f["s"].bytes_list.value) == [b"hi", b"\xff"]
    assert f["z"].WhichOneof("kind") == "int64_list" and f["a"].HasField("float_list")
    assert sorted(f) == ["a", "b", "s", "z"]
    assert cf.train.Example().SerializeToString() == b""
    e = cf.train.Example()
    e.features.feature["x"]  # reading a missing key makes an empty entry, as protobuf does
    assert e.HasField("features") and e.SerializeToString() == b"\n\x07\n\x05\n\x01x\x12\x00"
    copy = cf.train.Example()
    copy.CopyFrom(ex)
    assert copy == ex and copy is not ex
    copy.MergeFrom(_example(cf, b=[9]))
    assert list(copy.features.feature["b"].int64_list.value) == [9]   # map entries merge by key


def test_feature_kind_is_a_oneof_and_values_are_type_checked():
    f = cf.train.Feature(int64_list=cf.train.Int64List(value=[1]))
    f.float_list.value.append(2.0)
    assert f.WhichOneof("kind") == "float_list" and list(f.int64_list.value) == []
    with pytest.raises(TypeError, match="1.5 has type float"):
        cf.train.Int64List(value=[1.5])
    with pytest.raises(TypeError):
        cf.train.FloatList(value=["x"])
    with pytest.raises(ValueError, match="out of range"):
        cf.train.Int64List(value=[2 ** 63])
    with pytest.raises(AttributeError):
        f.int64_list = cf.train.Int64List()
    # collflow's fetched strings are str: a BytesList takes them, keeping undecodable bytes
    b = cf.train.BytesList(value=["é", b"\xff".decode("utf-8", "surrogateescape")])
    assert list(b.value) == ["é".encode(), b"\xff"]
    assert list(cf.train.Int64List(value=np.arange(3)).value) == [0, 1, 2]


def test_text_format():
    ex = cf.train.Example()
    ex.features.feature["s"].bytes_list.value.extend([b"a\"b", b"\xff\n"])
    assert str(ex) == ('features {\n  feature {\n    key: "s"\n    value {\n      bytes_list {\n'
                       '        value: "a\\"b"\n        value: "\\377\\n"\n      }\n    }\n  }\n}\n')


def test_unpacked_numeric_lists_decode():
    """proto2-style writers put one field per value: read as the packed form is."""
    floats = b"".join(b"\x0d" + struct.pack("<f", v) for v in (1.0, 2.5))          # FloatList, unpacked
    ints = b"".join(b"\x08" + bytes([v]) for v in (5, 6))                           # Int64List, unpacked
    def entry(key, feature):
        body = b"\n" + bytes([len(key)]) + key + b"\x12" + bytes([len(feature)]) + feature
        return b"\n" + bytes([len(body)]) + body
    feats = entry(b"f", b"\x12" + bytes([len(floats)]) + floats) + entry(b"i", b"\x1a" + bytes([len(ints)]) + ints)
    data = b"\n" + bytes([len(feats)]) + feats
    ex = cf.train.Example.FromString(data)
    assert list(ex.features.feature["f"].float_list.value) == [1.0, 2.5]
    assert list(ex.features.feature["i"].int64_list.value) == [5, 6]
    out = _run(cf.parse_single_example(data, {"f": cf.FixedLenFeature([2], cf.float32),
                                              "i": cf.VarLenFeature(cf.int64)}))
    np.testing.assert_array_equal(out["f"], [1.0, 2.5])
    np.testing.assert_array_equal(out["i"].values, [5, 6])


def test_malformed_bytes_are_a_clear_error():
    with pytest.raises(ValueError, match="Error parsing message"):
        cf.train.Example.FromString(b"\n\xff")
    with pytest.raises(InvalidArgumentError, match="Could not parse example input"):
        _run(cf.parse_example(["\n\x05garbage"], {"a": cf.FixedLenFeature([], cf.int64)}))


def test_sequence_example_round_trip():
    s = cf.train.SequenceExample()
    s.context.feature["len"].int64_list.value.append(3)
    for i in range(3):
        s.feature_lists.feature_list["tok"].feature.add().int64_list.value.extend([i, i + 1])
    back = cf.train.SequenceExample.FromString(s.SerializeToString())
    assert back == s
    assert [list(f.int64_list.value) for f in back.feature_lists.feature_list["tok"].feature] == [[0, 1], [1, 2], [2, 3]]


def test_messages_read_and_written_by_tensorflow():
    tf = tensorflow_v1()
    ours = _example(cf, a=[1.5, 2.5], b=[3, -4, 2 ** 40], s=[b"hi", b"\xff"], e=None)
    theirs = _example(tf, a=[1.5, 2.5], b=[3, -4, 2 ** 40], s=[b"hi", b"\xff"], e=None)
    assert tf.train.Example.FromString(ours.SerializeToString()) == theirs
    assert cf.train.Example.FromString(theirs.SerializeToString()) == ours
    seq = tf.train.SequenceExample()
    seq.context.feature["len"].int64_list.value.append(3)
    seq.feature_lists.feature_list["w"].feature.add().bytes_list.value.append(b"a")
    mine = cf.train.SequenceExample.FromString(seq.SerializeToString())
    assert str(mine) == str(seq)
    assert tf.train.SequenceExample.FromString(mine.SerializeToString()) == seq


# -- parse_example ------------------------------------------------------------------------------

def test_parse_example_values():
    out = _run(cf.parse_example(_records(cf), _features(cf)))
    np.testing.assert_array_equal(out["a"], [[1.5, 2.5], [0.5, 0.25], [1.0, 2.0]])
    assert out["a"].dtype == np.float32
    np.testing.assert_array_equal(out["b"].indices, [[0, 0], [0, 1], [0, 2], [1, 0]])
    np.testing.assert_array_equal(out["b"].values, [3, -4, 2 ** 40, 7])
    np.testing.assert_array_equal(out["b"].dense_shape, [3, 3])
    assert list(out["s"].values) == [b"hi", b"\xff\x00"]
    np.testing.assert_array_equal(out["d"], [-1, -1, -1])
    assert list(out["e"]) == ["dflt"] * 3        # an empty Feature takes the default, as a missing one
    np.testing.assert_array_equal(out["q"], [np.zeros((2, 3)), np.zeros((2, 3)), [[1, 2, 3], [4, 5, 6]]])
    # a SparseFeature: indices from "i", values from "v", sorted by index
    np.testing.assert_array_equal(out["sp"].indices, [[0, 0], [0, 1], [0, 2]])
    assert list(out["sp"].values) == [b"y", b"z", b"x"]
    np.testing.assert_array_equal(out["sp"].dense_shape, [3, 5])


def test_parse_single_example_drops_the_batch_dimension():
    feats = _features(cf)
    out = _run(cf.parse_single_example(_records(cf)[0], feats))
    np.testing.assert_array_equal(out["a"], [1.5, 2.5])
    np.testing.assert_array_equal(out["b"].indices, [[0], [1], [2]])
    np.testing.assert_array_equal(out["b"].dense_shape, [3])
    assert out["e"] == b"dflt" and np.asarray(out["d"]).shape == ()
    assert out["q"].shape == (0, 3)


def test_static_shapes():
    p = cf.placeholder(cf.string, [None])
    r = cf.parse_example(p, {"a": cf.FixedLenFeature([2], cf.float32), "b": cf.VarLenFeature(cf.int64),
                             "q": cf.FixedLenSequenceFeature([3], cf.float32, allow_missing=True)})
    assert r["a"].shape.as_list() == [None, 2] and r["q"].shape.as_list() == [None, None, 3]
    assert r["b"].indices.shape.as_list() == [None, 2]
    one = cf.parse_single_example(cf.placeholder(cf.string, []), {"a": cf.FixedLenFeature([1, 2], cf.float32)})
    assert one["a"].shape.as_list() == [1, 2]
    fixed = cf.parse_example(cf.placeholder(cf.string, [4]), {"a": cf.FixedLenFeature([], cf.int64)})
    assert fixed["a"].shape.as_list() == [4]


def test_fed_bytes_parse():
    """TF1 programs feed serialized records as bytes; they parse byte for byte."""
    p = cf.placeholder(cf.string, [None])
    r = cf.parse_example(p, {"s": cf.VarLenFeature(cf.string), "a": cf.FixedLenFeature([2], cf.float32)})
    out = _run(r, {p: _records(cf)[:2]})
    np.testing.assert_array_equal(out["a"], [[1.5, 2.5], [0.5, 0.25]])
    assert list(out["s"].values) == [b"hi", b"\xff\x00"]


@pytest.mark.parametrize("features,message", [
    ({"x": cf.FixedLenFeature([2], cf.float32)}, "Feature: x (data type: float) is required but could not be found"),
    ({"a": cf.FixedLenFeature([3], cf.float32)}, "Key: a, Index: 0.  Number of float values != expected.  "
                                                 "Values size: 2 but output shape: [3]"),
    ({"a": cf.FixedLenFeature([2], cf.int64)}, "Key: a, Index: 0.  Data types don't match. Data type: float but "
                                               "expected type: int64"),
    ({"b": cf.VarLenFeature(cf.string)}, "Data type: int64 but expected type: string"),
    ({"e": cf.FixedLenFeature([], cf.int64)}, "Feature: e (data type: int64) is required"),
])
def test_parse_errors_name_the_feature(features, message):
    with pytest.raises(InvalidArgumentError) as e:
        _run(cf.parse_example(_records(cf)[:2], features))
    assert message in str(e.value)


def test_example_names_in_errors():
    recs = [_records(cf)[2], _records(cf)[1]]        # the second lacks "q"
    with pytest.raises(InvalidArgumentError, match="Name: second, Feature: q"):
        _run(cf.parse_example(recs, {"q": cf.FixedLenFeature([6], cf.float32)}, example_names=["first", "second"]))


def test_specs_checked_when_the_graph_is_built():
    with pytest.raises(ValueError, match="requires allow_missing to be True"):
        cf.parse_example(["x"], {"q": cf.FixedLenSequenceFeature([], cf.int64)})
    with pytest.raises(TypeError, match="float64"):
        cf.parse_example(["x"], {"q": cf.FixedLenFeature([], cf.float64)})
    with pytest.raises(ValueError, match="cannot reshape a default_value of 1 elements to shape \\[2\\]"):
        cf.parse_example(["x"], {"q": cf.FixedLenFeature([2], cf.float32, default_value=1.0)})
    with pytest.raises(ValueError, match="fully defined"):
        cf.parse_example(["x"], {"q": cf.FixedLenFeature([None], cf.float32)})
    with pytest.raises(ValueError, match="non-empty dict"):
        cf.parse_example(["x"], {})
    with pytest.raises(ValueError, match="a vector"):
        cf.parse_example(cf.placeholder(cf.string, []), {"a": cf.VarLenFeature(cf.int64)})


def test_multi_dimensional_sparse_feature_and_unsorted_indices():
    rec = _example(cf, r=[1, 0, 1], c=[2, 5, 0], v=[1.0, 2.0, 3.0]).SerializeToString()
    sp = cf.SparseFeature(["r", "c"], "v", cf.float32, [2, 6])
    out = _run(cf.parse_example([rec, rec], {"m": sp}))["m"]
    np.testing.assert_array_equal(out.indices, [[0, 0, 5], [0, 1, 0], [0, 1, 2], [1, 0, 5], [1, 1, 0], [1, 1, 2]])
    np.testing.assert_array_equal(out.values, [2.0, 3.0, 1.0] * 2)
    np.testing.assert_array_equal(out.dense_shape, [2, 2, 6])
    kept = _run(cf.parse_single_example(rec, {"m": cf.SparseFeature(["r", "c"], "v", cf.float32, [2, 6],
                                                                     already_sorted=True)}))["m"]
    np.testing.assert_array_equal(kept.indices, [[1, 2], [0, 5], [1, 0]])


def test_parsing_inside_a_dataset_map():
    ds = cf.data.Dataset.from_tensor_slices(np.array(_records(cf), dtype=object))
    ds = ds.map(lambda r: cf.parse_single_example(r, {"a": cf.FixedLenFeature([2], cf.float32),
                                                      "d": cf.FixedLenFeature([], cf.int64, default_value=0)}))
    nxt = ds.batch(3).make_one_shot_iterator().get_next()
    out = _run(nxt)
    np.testing.assert_array_equal(out["a"], [[1.5, 2.5], [0.5, 0.25], [1.0, 2.0]])
    np.testing.assert_array_equal(out["d"], [0, 0, 0])


# -- SequenceExample ------------------------------------------------------------------------------

def _sequence(T):
    s = T.train.SequenceExample()
    s.context.feature["len"].int64_list.value.append(3)
    for i in range(3):
        s.feature_lists.feature_list["tok"].feature.add().int64_list.value.extend([i, i + 1])
        s.feature_lists.feature_list["w"].feature.add().bytes_list.value.extend([b"a"] * i)
    return s.SerializeToString()


def _sequence_specs(T):
    return ({"len": T.FixedLenFeature([], T.int64), "c2": T.VarLenFeature(T.float32),
             "cd": T.FixedLenFeature([2], T.float32, default_value=[1.0, 2.0])},
            {"tok": T.FixedLenSequenceFeature([2], T.int64), "w": T.VarLenFeature(T.string),
             "m": T.FixedLenSequenceFeature([], T.float32, allow_missing=True)})


def test_parse_single_sequence_example_values():
    ctx, seq = _run(list(cf.parse_single_sequence_example(_sequence(cf), *_sequence_specs(cf))))
    assert ctx["len"] == 3
    np.testing.assert_array_equal(ctx["cd"], [1.0, 2.0])
    np.testing.assert_array_equal(ctx["c2"].dense_shape, [0])
    np.testing.assert_array_equal(seq["tok"], [[0, 1], [1, 2], [2, 3]])
    np.testing.assert_array_equal(seq["w"].indices, [[1, 0], [2, 0], [2, 1]])
    np.testing.assert_array_equal(seq["w"].dense_shape, [3, 2])
    assert seq["m"].shape == (0,)
    with pytest.raises(InvalidArgumentError, match="Feature list 'x' is required"):
        _run(cf.parse_single_sequence_example(_sequence(cf), sequence_features={
            "x": cf.FixedLenSequenceFeature([], cf.int64)})[1])
    with pytest.raises(InvalidArgumentError, match="Number of int64 values != expected"):
        _run(cf.parse_single_sequence_example(_sequence(cf), sequence_features={
            "tok": cf.FixedLenSequenceFeature([3], cf.int64)})[1])


# -- against TensorFlow --------------------------------------------------------------------------

@pytest.mark.parametrize("program", [
    lambda T: T.parse_example(_records(T), _features(T)),
    lambda T: T.parse_single_example(_records(T)[0], _features(T)),
    lambda T: T.parse_single_example(_records(T)[2], _features(T)),
    lambda T: T.parse_example(T.constant(np.array([], dtype=object), dtype=T.string),
                              {"a": T.FixedLenFeature([2], T.float32), "b": T.VarLenFeature(T.int64)}),
    lambda T: T.parse_example([_example(T, r=[1, 0, 1], c=[2, 5, 0], v=[1.0, 2.0, 3.0]).SerializeToString(),
                               _example(T, r=[0], c=[1], v=[4.0]).SerializeToString()],
                              {"sp": T.SparseFeature(["r", "c"], "v", T.float32, [2, 6])}),
    lambda T: list(T.parse_single_sequence_example(_sequence(T), *_sequence_specs(T))),
], ids=["batch", "single", "single-sequence-rows", "empty-batch", "sparse-2d", "sequence"])
def test_same_values_as_tensorflow(program):
    ours, theirs = run_in_both(program)
    assert _norm(ours) == _norm(theirs)


@pytest.mark.parametrize("features", [
    lambda T: {"x": T.FixedLenFeature([2], T.float32)},
    lambda T: {"a": T.FixedLenFeature([3], T.float32)},
    lambda T: {"a": T.FixedLenFeature([2], T.int64)},
    lambda T: {"e": T.FixedLenFeature([], T.int64)},
])
def test_same_errors_as_tensorflow(features):
    tf = tensorflow_v1()
    messages = []
    for T, err in ((cf, InvalidArgumentError), (tf, tf.errors.InvalidArgumentError)):
        with T.Graph().as_default():
            out = T.parse_example(_records(T)[:2], features(T))
            with T.Session() as s, pytest.raises(err) as e:
                s.run(out)
        messages.append(str(e.value))
    key = [line for line in messages[1].splitlines() if line.startswith("Name: ")][0]
    assert key in messages[0]


def test_a_single_feature_is_the_op_s_one_output():
    # one dense feature: ParseExample has one output, whose value is the array itself
    with cf.Graph().as_default():
        a = cf.parse_example(cf.constant(_records(cf)), {"a": cf.FixedLenFeature([2], cf.float32)})["a"]
        np.testing.assert_array_equal(_run(a), [[1.5, 2.5], [0.5, 0.25], [1.0, 2.0]])
        ln = cf.parse_single_sequence_example(_sequence(cf), {"len": cf.FixedLenFeature([], cf.int64)})[0]["len"]
        assert _run(ln) == 3


# -- tf.io.parse_sequence_example (batched) --------------------------------------------------------

def _sequences(T):
    """Three SequenceExamples of 3, 1 and 0 steps (the last lacks the 'tok' list: allowed)."""
    out = []
    for n, has_tok in ((3, True), (1, True), (0, False)):
        s = T.train.SequenceExample()
        s.context.feature["len"].int64_list.value.append(n)
        if n:
            s.context.feature["c2"].float_list.value.extend([0.5] * n)
        for i in range(n):
            if has_tok:
                s.feature_lists.feature_list["tok"].feature.add().int64_list.value.extend([i, i + 10])
            s.feature_lists.feature_list["w"].feature.add().bytes_list.value.extend([b"ab"] * (i + n))
        out.append(s.SerializeToString())
    return out


def _batch_specs(T):
    return ({"len": T.FixedLenFeature([], T.int64), "c2": T.VarLenFeature(T.float32),
             "cd": T.FixedLenFeature([2], T.float32, default_value=[1.0, 2.0])},
            {"tok": T.FixedLenSequenceFeature([2], T.int64, allow_missing=True), "w": T.VarLenFeature(T.string),
             "m": T.FixedLenSequenceFeature([], T.float32, allow_missing=True)})


def test_parse_sequence_example_batches_and_pads():
    ctx, seq, lengths = _run(list(cf.io.parse_sequence_example(_sequences(cf), *_batch_specs(cf))))
    np.testing.assert_array_equal(ctx["len"], [3, 1, 0])
    np.testing.assert_array_equal(ctx["cd"], [[1.0, 2.0]] * 3)
    np.testing.assert_array_equal(ctx["c2"].dense_shape, [3, 3])
    np.testing.assert_array_equal(seq["tok"], [[[0, 10], [1, 11], [2, 12]], [[0, 10], [0, 0], [0, 0]],
                                               [[0, 0], [0, 0], [0, 0]]])
    np.testing.assert_array_equal(lengths["tok"], [3, 1, 0])
    np.testing.assert_array_equal(lengths["m"], [0, 0, 0])
    assert seq["m"].shape == (3, 0)
    np.testing.assert_array_equal(seq["w"].dense_shape, [3, 3, 5])
    assert seq["w"].indices[:3].tolist() == [[0, 0, 0], [0, 0, 1], [0, 0, 2]]
    with cf.Graph().as_default():
        c, s, n = cf.io.parse_sequence_example(cf.placeholder(cf.string, [4]), *_batch_specs(cf))
        assert s["tok"].shape.as_list() == [4, None, 2] and n["tok"].shape.as_list() == [4]
        assert c["cd"].shape.as_list() == [4, 2]
    with pytest.raises(InvalidArgumentError, match="Feature list 'tok' is required"):
        _run(cf.io.parse_sequence_example(_sequences(cf), sequence_features={
            "tok": cf.FixedLenSequenceFeature([2], cf.int64)})[1])
    with pytest.raises(ValueError, match="must be a vector"):
        cf.io.parse_sequence_example(_sequences(cf)[0], *_batch_specs(cf))
    for parse in (cf.io.parse_sequence_example, cf.io.parse_single_sequence_example):  # TF: steps pad with zeros
        with pytest.raises(ValueError, match=r"feature_list.dense_defaults\[m\] must be None"):
            parse(_sequences(cf)[:1] if parse is cf.io.parse_sequence_example else _sequences(cf)[0],
                  sequence_features={"m": cf.FixedLenSequenceFeature([], cf.float32, True, default_value=-1.0)})


@pytest.mark.parametrize("program", [
    lambda T: list(T.io.parse_sequence_example(_sequences(T), *_batch_specs(T))),
    lambda T: list(T.io.parse_sequence_example(_sequences(T)[:2], sequence_features={
        "tok": T.FixedLenSequenceFeature([2], T.int64), "w": T.VarLenFeature(T.string)})),
    lambda T: list(T.io.parse_sequence_example(_sequences(T)[1:], context_features={
        "len": T.FixedLenFeature([], T.int64)})),
], ids=["padded", "required-lists", "context-only"])
def test_parse_sequence_example_as_tensorflow(program):
    ours, theirs = run_in_both(program)
    assert _norm(ours) == _norm(theirs)
