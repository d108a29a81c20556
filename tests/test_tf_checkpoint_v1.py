"""TensorFlow's V1 checkpoints (one table file of TensorSliceWriter's, TF before 1.0 and the
model zoos of the time), read without TensorFlow: every dtype, strings, scalars, partitioned
variables, damaged files, and the Saver / latest_checkpoint / init_from_checkpoint
integration.  The fixture is the file TensorFlow 2.21's Saver(write_version=SaverDef.V1)
wrote (tests/tf1/test_vs_tensorflow_checkpoint.py checks against a live TensorFlow).
"""
import os

import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow.errors import DataLossError, NotFoundError
from collflow.train.tf_checkpoint_v1 import V1Reader, is_v1_checkpoint

pytestmark = pytest.mark.timeout(120)

# dense/kernel float32 [[0,1,2],[3,4,5]], dense/bias float64 [1.5], global_step int64 7,
# strs [b"ab", b"", b"xyz"], half float16 [1, 2], flags [True, False], i8 int8 [-3, 4],
# emb [5, 2] in two partitions (rows 0-2, 3-4) of random_normal(seed=1)
V1_FILE = bytes.fromhex(
    "0000d0010acd010a180a0a64656e73652f62696173120412020801180222020a000a200a0c64656e73652f6b65726e65"
    "6c12081202080212020803180122040a000a000a270a03656d6212081202080512020802180122080a0210030a021002"
    "220a0a04080310020a0210020a130a05666c616773120412020802180a22020a000a130a0b676c6f62616c5f73746570"
    "1200180922000a120a0468616c66120412020802181322020a000a100a026938120412020802180622020a000a120a04"
    "73747273120412020803180722020a001202080100111e0064656e73652f6269617300010101807f121c0a0a64656e73"
    "652f6269617312020a001a0a3208000000000000f83f070e326b65726e656c00010102807f807f12300a0c64656e7365"
    "2f6b65726e656c12040a000a001a1a2a18000000000000803f0000004000004040000080400000a040010b2d656d6200"
    "01010280838082122b0a03656d6212080a0210030a0210021a1a2a188db24fbf5507be3f68cb853d44551cc0bf42cb3d"
    "7a5a173f0804278382808212250a03656d62120a0a04080310020a0210021a122a108db24fbf5507be3f68cb853d4455"
    "1cc0010b13666c61677300010101807f12110a05666c61677312020a001a045a020100010e16676c6f62616c5f737465"
    "7000010012140a0b676c6f62616c5f7374657012001a03520107010a1568616c6600010101807f12130a0468616c6612"
    "020a001a076a058078808001010819693800010101807f12170a02693812020a001a0d3a0bfdffffffffffffffff0104"
    "010a197374727300010101807f12170a047374727312020a001a0b420261624200420378797a00000000010000000009"
    "30faf9000000000100000000c0f2a1b00001030100ee040000000001000000002304b9b8f3040880050f000000000000"
    "0000000000000000000000000000000000000000000000000000000057fb808b247547db")
EMB = np.array([[-0.8113182187080383, 1.4845987558364868], [0.06532937288284302, -2.442704200744629],
                [0.09924840182065964, 0.5912243127822876], [-0.8113182187080383, 1.4845987558364868],
                [0.06532937288284302, -2.442704200744629]], np.float32)


def _write(d, name="model.ckpt", data=V1_FILE):
    path = os.path.join(str(d), name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def test_reads_every_entry(tmp_path):
    path = _write(tmp_path)
    assert is_v1_checkpoint(path)
    with V1Reader(path) as r:
        assert r.global_step == 7
        assert r.variable_specs()["emb"] == (np.dtype(np.float32), (5, 2))
        v = r.read()
    np.testing.assert_array_equal(v["dense/kernel"], np.arange(6, dtype=np.float32).reshape(2, 3))
    assert v["dense/bias"].dtype == np.float64 and v["dense/bias"].tolist() == [1.5]
    assert v["global_step"].shape == () and v["global_step"].dtype == np.int64
    assert v["strs"].tolist() == [b"ab", b"", b"xyz"]
    assert v["half"].dtype == np.float16 and v["half"].tolist() == [1.0, 2.0]
    assert v["flags"].tolist() == [True, False]
    assert v["i8"].dtype == np.int8 and v["i8"].tolist() == [-3, 4]
    np.testing.assert_array_equal(v["emb"], EMB)


def test_other_files_are_not_v1(tmp_path):
    p = tmp_path / "x.h5"
    p.write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(100))
    assert not is_v1_checkpoint(str(p))
    assert not is_v1_checkpoint(str(tmp_path / "missing"))


@pytest.mark.parametrize("where", [30, 300, 600, len(V1_FILE) - 50])
def test_damage_is_detected(tmp_path, where):
    bad = bytearray(V1_FILE)
    bad[where] ^= 0x04
    path = _write(tmp_path, data=bytes(bad))
    with pytest.raises(DataLossError):
        with V1Reader(path) as r:
            r.read()


def test_missing(tmp_path):
    with pytest.raises(NotFoundError):
        V1Reader(str(tmp_path / "none"))


def test_saver_latest_checkpoint_and_init_from_checkpoint(tmp_path):
    path = _write(tmp_path)
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "/old/place/model.ckpt"\n')
    assert tf.train.latest_checkpoint(str(tmp_path)) == path
    assert dict(tf.train.list_variables(str(tmp_path)))["emb"] == [5, 2]
    with tf.Graph().as_default():
        k = tf.get_variable("dense/kernel", [2, 3])
        e = tf.get_variable("table", [5, 2])
        tf.train.init_from_checkpoint(path, {"emb": e})
        gs = tf.train.get_or_create_global_step()
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            np.testing.assert_array_equal(s.run(e), EMB)
            res = tf.train.Saver([k, gs]).restore(s, tf.train.latest_checkpoint(str(tmp_path)))
            assert res.global_step == 7 and s.run(gs) == 7
            np.testing.assert_array_equal(s.run(k), np.arange(6).reshape(2, 3))
