"""tf.serialize_sparse / serialize_many_sparse / deserialize_many_sparse (TF's TensorProto
bytes, round trips, errors) and the dense tf.ConditionalAccumulator (means, sums, stale
gradients, waiting and timeouts), without TensorFlow."""
import struct
import threading

import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow.kernels.tensor_proto_wire import decode_tensor_proto, encode_tensor_proto


def _raw(x):
    return x if isinstance(x, bytes) else x.encode("utf-8", "surrogateescape")


# TF 2.21's bytes for SparseTensor([[0, 1], [2, 0]], float32 [1.5, 2.], [3, 4])
TF_FLOAT_ROW = [
    b'\x08\t\x12\x08\x12\x02\x08\x02\x12\x02\x08\x02" ' + struct.pack("<4q", 0, 1, 2, 0),
    b'\x08\x01\x12\x04\x12\x02\x08\x02"\x08\x00\x00\xc0?\x00\x00\x00@',
    b'\x08\t\x12\x04\x12\x02\x08\x02"\x10' + struct.pack("<2q", 3, 4)]


def test_serialize_sparse_writes_tfs_bytes():
    with tf.Graph().as_default(), tf.Session() as s:
        out = tf.serialize_sparse(tf.SparseTensor([[0, 1], [2, 0]], tf.constant([1.5, 2.]), [3, 4]))
        strs = tf.io.serialize_sparse(tf.SparseTensor([[0]], tf.constant([b"ab"]), [1]))
        assert out.shape.as_list() == [3] and out.dtype == tf.string
        got, got_s = s.run([out, strs])
    assert [_raw(x) for x in got] == TF_FLOAT_ROW
    assert _raw(got_s[1]) == b'\x08\x07\x12\x04\x12\x02\x08\x01"\x03\x02ab'  # EncodeStringList: lengths, bytes


@pytest.mark.parametrize("dtype,values", [(tf.float32, [1., -2., 3.5]), (tf.float64, [1e300, 0., -1.]),
                                          (tf.int32, [1, -7, 2 ** 31 - 1]), (tf.int64, [-(2 ** 63), 0, 5]),
                                          (tf.bool, [True, False, True]), (tf.float16, [0.5, 1., -2.]),
                                          (tf.uint8, [0, 255, 3]), (tf.string, ["a", "", "\u00e9\udcff"])],
                         ids=lambda v: getattr(v, "name", "v"))
def test_round_trip_many(dtype, values):
    idx = [[0, 0, 1], [2, 1, 0], [2, 3, 4]]
    with tf.Graph().as_default(), tf.Session() as s:
        sp = tf.SparseTensor(idx, tf.constant(values, dtype), [4, 5, 6])
        rows = tf.serialize_many_sparse(sp)
        back = tf.deserialize_many_sparse(rows, dtype, rank=3)
        assert rows.shape.as_list() == [None, 3] and back.indices.shape.as_list() == [None, 3]
        got_rows, got = s.run([rows, back])
    assert got_rows.shape == (4, 3)
    np.testing.assert_array_equal(got.indices, idx)
    np.testing.assert_array_equal(got.dense_shape, [4, 5, 6])
    want = [_raw(v) for v in values] if dtype == tf.string else list(np.asarray(values, dtype.np))
    assert list(got.values) == want  # strings: bytes, as TF's
    # entries 1 and 3 have no values: empty indices [0, 2], shape [5, 6]
    ei, ev = decode_tensor_proto(_raw(got_rows[1, 0]))[1], decode_tensor_proto(_raw(got_rows[1, 1]))[1]
    assert ei.shape == (0, 2) and ev.shape == (0,)
    np.testing.assert_array_equal(decode_tensor_proto(_raw(got_rows[3, 2]))[1], [5, 6])


def test_deserialize_stacks_with_largest_dims_and_row_order():
    with tf.Graph().as_default(), tf.Session() as s:
        a = tf.serialize_sparse(tf.SparseTensor([[3], [0]], [1., 2.], [5]))  # unsorted: kept as is
        b = tf.serialize_sparse(tf.SparseTensor([[1]], [7.], [8]))
        got = s.run(tf.deserialize_many_sparse(tf.stack([a, b, a]), tf.float32))
    np.testing.assert_array_equal(got.indices, [[0, 3], [0, 0], [1, 1], [2, 3], [2, 0]])
    np.testing.assert_array_equal(got.values, [1, 2, 7, 1, 2])
    np.testing.assert_array_equal(got.dense_shape, [3, 8])


def test_decoder_reads_typed_fields_like_tensor_from_proto():
    # dtype float, shape [3], float_val packed with one value: repeated to fill, as TF
    def shape(*dims):
        body = b"".join(b"\x12" + bytes([2]) + b"\x08" + bytes([d]) for d in dims)
        return b"\x12" + bytes([len(body)]) + body
    f = b"\x08\x01" + shape(3) + b"\x2a\x04" + struct.pack("<f", 2.5)
    assert decode_tensor_proto(f)[1].tolist() == [2.5, 2.5, 2.5]
    i64 = b"\x08\x09" + shape(2) + b"\x52\x02\x07\x01"  # int64_val packed [7, 1]
    assert decode_tensor_proto(i64)[1].tolist() == [7, 1]
    st = b"\x08\x07" + shape(2) + b"\x42\x01x\x42\x02yz"  # string_val unpacked
    assert decode_tensor_proto(st)[1].tolist() == ["x", "yz"]
    arr = np.arange(6, dtype=np.int32).reshape(2, 3)
    assert decode_tensor_proto(encode_tensor_proto(arr, tf.int32))[1].tolist() == arr.tolist()


def test_serialize_errors():
    with tf.Graph().as_default():
        sp = tf.SparseTensor([[0]], [1.], [2])
        with pytest.raises(TypeError, match="no variant dtype"):
            tf.serialize_sparse(sp, out_type="variant")
        with pytest.raises(TypeError, match="'out_type' of float32"):
            tf.serialize_many_sparse(sp, out_type=tf.float32)
        with pytest.raises(TypeError, match="needs a SparseTensor"):
            tf.serialize_sparse([1, 2])
        with pytest.raises(ValueError, match="Dimension must be 3"):
            tf.deserialize_many_sparse(tf.zeros([1, 2], tf.string), tf.float32)
        with tf.Session() as s:
            for t, msg in (
                    (tf.serialize_many_sparse(tf.SparseTensor([[1, 0], [0, 0]], [1., 2.], [2, 2])), "out of order"),
                    (tf.serialize_many_sparse(sp), "should be > 1, but saw rank: 1"),
                    (tf.deserialize_many_sparse([["a", "b", "c"]], tf.float32), "Could not parse"),
                    (tf.deserialize_many_sparse(tf.stack([tf.serialize_sparse(sp)]), tf.float64),
                     "type double but SparseTensor\\[0\\].values.dtype\\(\\) == float")):
                with pytest.raises(tf.errors.InvalidArgumentError, match=msg):
                    s.run(t)


def test_namespaces():
    for n in ("serialize_sparse", "serialize_many_sparse", "deserialize_many_sparse"):
        assert getattr(tf.io, n) is getattr(tf, n)
    assert issubclass(tf.ConditionalAccumulator, tf.ConditionalAccumulatorBase)
    assert issubclass(tf.SparseConditionalAccumulator, tf.ConditionalAccumulatorBase)


# -- ConditionalAccumulator --------------------------------------------------------------------------------

def test_accumulator_mean_sum_stale_and_global_step():
    with tf.Graph().as_default():
        acc = tf.ConditionalAccumulator(tf.float32, shape=[2])
        sacc = tf.ConditionalAccumulator(tf.float64, reduction_type="SUM", name="summer")
        assert acc.name == "conditional_accumulator" and acc.dtype == tf.float32
        step = tf.placeholder(tf.int64, [])
        g = tf.placeholder(tf.float32, [2])
        apply, take, n = acc.apply_grad(g, local_step=step), acc.take_grad(2), acc.num_accumulated()
        assert take.shape.as_list() == [2] and n.dtype == tf.int32
        with tf.Session() as s:
            s.run(apply, {g: [1., 2.], step: 0})
            s.run(apply, {g: [3., 5.], step: 0})
            assert s.run(n) == 2
            np.testing.assert_array_equal(s.run(take), [2., 3.5])
            s.run(apply, {g: [9., 9.], step: 0})  # stale: the global step is 1 now
            assert s.run(n) == 0
            s.run(acc.set_global_step(3))
            s.run(apply, {g: [1., 1.], step: 2})
            s.run(apply, {g: [4., 0.], step: 3})
            s.run(apply, {g: [0., 4.], step: 7})
            np.testing.assert_array_equal(s.run(take), [2., 2.])
            for v in ([1., 2.], [10., 20.]):
                s.run(sacc.apply_grad(v))
            got = s.run(sacc.take_grad(2))
    assert got.dtype == np.float64 and got.tolist() == [11., 22.]


def test_accumulator_errors():
    with tf.Graph().as_default():
        acc = tf.ConditionalAccumulator(tf.float32, shape=[None, 2])
        g = tf.placeholder(tf.float32)
        with pytest.raises(ValueError, match="incompatible"):
            acc.apply_grad([1., 2., 3.])
        with pytest.raises(ValueError, match="reduction_type"):
            tf.ConditionalAccumulator(tf.float32, reduction_type="MAX")
        with pytest.raises(TypeError, match="not in the list"):
            tf.ConditionalAccumulator(tf.string)
        with tf.Session() as s:
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"expected \[\?,2\], got \[3\]"):
                s.run(acc.apply_grad(g), {g: [1., 2., 3.]})
            s.run(acc.apply_grad(g), {g: [[1., 2.]]})
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"expected \[1,2\], got \[2,2\]"):
                s.run(acc.apply_grad(g), {g: [[1., 2.], [3., 4.]]})
            with pytest.raises(tf.errors.InvalidArgumentError, match="must be positive, but was 0"):
                s.run(acc.take_grad(0))
            with pytest.raises(tf.errors.InvalidArgumentError, match="No OpKernel.*DT_INT32"):
                s.run(tf.ConditionalAccumulator(tf.int32).num_accumulated())
            # one shared name, two kinds: refused
            tf.SparseConditionalAccumulator(tf.float32, shared_name="both")
            dense = tf.ConditionalAccumulator(tf.float32, shared_name="both")
            s.run(tf.SparseConditionalAccumulator(tf.float32, shared_name="both").num_accumulated())
            with pytest.raises(tf.errors.InvalidArgumentError, match="is a SparseConditionalAccumulator"):
                s.run(dense.num_accumulated())


def test_shared_name_and_take_waits_then_times_out():
    with tf.Graph().as_default():
        a = tf.ConditionalAccumulator(tf.float32, shape=[3], shared_name="shared")
        b = tf.ConditionalAccumulator(tf.float32, shape=[3], shared_name="shared")
        apply = b.apply_grad([5., 7., 9.])
        take = a.take_grad(1)
        with tf.Session() as s:
            threading.Timer(0.2, lambda: s.run(apply)).start()
            np.testing.assert_array_equal(s.run(take), [5., 7., 9.])
        with tf.Session(config=tf.ConfigProto(operation_timeout_in_ms=200)) as s:
            with pytest.raises(tf.errors.DeadlineExceededError):
                s.run(take)
