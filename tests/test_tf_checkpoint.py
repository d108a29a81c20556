"""TensorFlow's own checkpoint format (V2): collflow reads what TensorFlow writes and writes what
it reads, without TensorFlow.  The table under the index (blocks, restarts, trailers, footer,
snappy), the bundle's entries (every dtype, strings, scalars, partitioned variables), damaged
files (each a clear DataLossError, never a wrong value), and the Saver / latest_checkpoint /
NewCheckpointReader / init_from_checkpoint integration.  The fixtures are the bytes
TensorFlow 2.21's tf.compat.v1 Saver wrote (tests/tf1/test_vs_tensorflow_checkpoint.py
checks against a live TensorFlow where one is installed).
"""
import os
import struct

import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow.errors import DataLossError, InvalidArgumentError, NotFoundError
from collflow.platform.crc32c import crc32c, mask
from collflow.train import tf_checkpoint as tfc
from collflow.train.tf_table import _snappy_decompress, build_table, read_table

pytestmark = pytest.mark.timeout(120)

# a Saver.save(sess, "model.ckpt", global_step=7) of: dense/kernel float32 [[0,1,2],[3,4,5]],
# dense/bias float64 [1.5], global_step int64 7, strs [b"ab", b"", b"xyz"], half float16 [1, 2],
# flags bool [True, False]
MODEL_INDEX = bytes.fromhex(
    "00000608011a020801000a0f64656e73652f626961730802120412020801280835846135f80606156b65726e656c0801"
    "120812020802120208032008281835c0db3d17000511666c616773080a12041202080220202802355fb0ce81000b0d67"
    "6c6f62616c5f73746570080912002022280835bbd79f1100041168616c660813120412020802202a280435c267f73600"
    "0411737472730807120412020803202e280c3510adc43f000000000100000000e4781879000000000100000000c0f2a1"
    "b00001037400af0100000000010000000054e0ae97b40108c1010f000000000000000000000000000000000000000000"
    "0000000000000000000000000057fb808b247547db")

MODEL_DATA = bytes.fromhex(
    "000000000000f83f000000000000803f0000004000004040000080400000a04001000700000000000000003c00400200"
    "031b428bca616278797a")

# emb [10, 3] = fixed_size_partitioner(3) (rows 0-3, 4-6, 7-9), w2 [4, 6] = fixed_size_partitioner(2, axis=1)
PART_INDEX = bytes.fromhex(
    "00000608011a020801000c1300656d6200010102808480830801120812020804120208032830356ea9e9220804158483"
    "80830801120812020803120208032030282435119c759908041587838083080112081202080312020803205428243511"
    "9c7599010a157732000101028084808308011208120208041202080320782830355e9bb2170902168383080112081202"
    "08041202080320a8012830355e9bb21700032e656d62080112081202080a120208033a080a0210040a0210033a0a0a04"
    "080410030a0210033a0a0a04080710030a02100300022277320801120812020804120208063a080a0210040a0210033a"
    "0a0a0210040a04080310030000000001000000003182e1d1000000000100000000c0f2a1b00001037800830200000000"
    "01000000001332009588020895020f000000000000000000000000000000000000000000000000000000000000000000"
    "0057fb808b247547db")

PART_DATA = bytes.fromhex(
    "8db24fbf5507be3f68cb853d44551cc0bf42cb3d7a5a173f3fc3173f14de07c0cb0f39bfc57b66bd5abf243f7c5587be"
    "8db24fbf5507be3f68cb853d44551cc0bf42cb3d7a5a173f3fc3173f14de07c0cb0f39bf8db24fbf5507be3f68cb853d"
    "44551cc0bf42cb3d7a5a173f3fc3173f14de07c0cb0f39bf27ad5bbf895749be07490e3ecc529cbf218ccebe9a9c92bf"
    "82cb233f6bcec9bf515483bfece5203f790654bfab7fb13e27ad5bbf895749be07490e3ecc529cbf218ccebe9a9c92bf"
    "82cb233f6bcec9bf515483bfece5203f790654bfab7fb13e")


def _write(d, name, index, data):
    prefix = os.path.join(str(d), name)
    with open(prefix + ".index", "wb") as f:
        f.write(index)
    with open(prefix + ".data-00000-of-00001", "wb") as f:
        f.write(data)
    return prefix


# -- the table ---------------------------------------------------------------------------------


def test_table_round_trip_many_blocks():
    rng = np.random.default_rng(0)
    keys = sorted({bytes(rng.integers(97, 100, rng.integers(1, 12)).tolist()) for _ in range(6000)})
    entries = [(k, bytes(rng.integers(0, 256, rng.integers(0, 300)).tolist())) for k in keys]
    data = build_table(entries)
    assert read_table(data) == entries
    # prefix compression and several 256 KiB blocks
    assert len(data) < sum(len(k) + len(v) + 3 for k, v in entries) + 64 * 1024


def test_table_empty_and_order_checked():
    assert read_table(build_table([])) == []
    with pytest.raises(ValueError, match="sorted"):
        build_table([(b"b", b""), (b"a", b"")])


def test_table_reads_tensorflows_index():
    items = read_table(MODEL_INDEX)
    assert [k for k, _ in items] == [b"", b"dense/bias", b"dense/kernel", b"flags", b"global_step", b"half", b"strs"]


@pytest.mark.parametrize("where", [0, 40, len(MODEL_INDEX) - 60, len(MODEL_INDEX) - 1])
def test_table_damage_is_detected(where):
    bad = bytearray(MODEL_INDEX)
    bad[where] ^= 0x10
    with pytest.raises(DataLossError):
        read_table(bytes(bad))


def test_table_truncated():
    for n in (0, 10, len(MODEL_INDEX) - 1):
        with pytest.raises(DataLossError):
            read_table(MODEL_INDEX[:n])


def _snappy_literal(data):
    """A valid snappy stream of one literal (what a compressor may emit for random bytes)."""
    n = len(data)
    head = bytearray()
    m = n
    while m >= 0x80:
        head.append((m & 0x7F) | 0x80)
        m >>= 7
    head.append(m)
    if n - 1 < 60:
        tag = bytes([(n - 1) << 2])
    else:
        tag = bytes([61 << 2]) + struct.pack("<H", n - 1)
    return bytes(head) + tag + data


def test_snappy_literals_and_overlapping_copies():
    # "abcd" then copy (offset 4, length 8) -> "abcdabcdabcd"; then copy offset 1 length 5 (a run)
    stream = bytes([17]) + bytes([3 << 2]) + b"abcd" + bytes([((8 - 4) << 2) | 1, 4]) + bytes([((5 - 1) << 2) | 2]) + \
        struct.pack("<H", 1)
    assert _snappy_decompress(stream) == b"abcdabcdabcd" + b"ddddd"
    data = bytes(range(256)) * 3
    assert _snappy_decompress(_snappy_literal(data)) == data
    with pytest.raises(DataLossError):
        _snappy_decompress(bytes([5]) + bytes([1, 9]))  # a copy before the start


def test_table_with_a_snappy_block():
    entries = [(b"", b"h"), (b"a", b"x" * 100), (b"b", b"y")]
    plain = read_table(build_table(entries))
    # rebuild the data block compressed: block contents, type 1, masked CRC over both
    table = build_table(entries)
    foot = len(table) - 48
    # the index block's only entry points at the data block at offset 0
    idx_items = read_table(table)
    assert idx_items == plain
    from collflow.train import tf_table
    block = tf_table._block(entries, 16)
    comp = _snappy_literal(block)
    out = bytearray(comp + bytes([1]) + struct.pack("<I", int(mask(crc32c(comp + bytes([1]))))))
    meta = tf_table._block([], 1)
    meta_h = tf_table._varint(len(out)) + tf_table._varint(len(meta))
    out += tf_table._with_trailer(meta)
    idx = tf_table._block([(b"b", tf_table._varint(0) + tf_table._varint(len(comp)))], 1)
    idx_h = tf_table._varint(len(out)) + tf_table._varint(len(idx))
    out += tf_table._with_trailer(idx)
    out += meta_h + idx_h + bytes(40 - len(meta_h + idx_h)) + struct.pack("<Q", tf_table.TABLE_MAGIC)
    assert foot > 0
    assert read_table(bytes(out)) == entries


# -- the bundle ------------------------------------------------------------------------------------


def test_reads_tensorflows_checkpoint(tmp_path):
    prefix = _write(tmp_path, "model.ckpt-7", MODEL_INDEX, MODEL_DATA)
    with tfc.BundleReader(prefix) as r:
        assert r.global_step == 7
        specs = r.variable_specs()
        assert specs["dense/kernel"] == (np.dtype(np.float32), (2, 3))
        assert specs["global_step"] == (np.dtype(np.int64), ())
        v = r.read()
    np.testing.assert_array_equal(v["dense/kernel"], np.arange(6, dtype=np.float32).reshape(2, 3))
    assert v["dense/bias"].dtype == np.float64 and v["dense/bias"].tolist() == [1.5]
    assert v["flags"].tolist() == [True, False] and v["flags"].dtype == np.bool_
    assert v["half"].dtype == np.float16 and v["half"].tolist() == [1.0, 2.0]
    assert v["strs"].tolist() == [b"ab", b"", b"xyz"]
    assert v["global_step"].shape == () and int(v["global_step"]) == 7


def test_reads_partitioned_variables_whole(tmp_path):
    prefix = _write(tmp_path, "part.ckpt", PART_INDEX, PART_DATA)
    with tfc.BundleReader(prefix) as r:
        assert r.variable_specs() == {"emb": (np.dtype(np.float32), (10, 3)), "w2": (np.dtype(np.float32), (4, 6))}
        v = r.read()
    raw = np.frombuffer(PART_DATA, dtype="<f4")
    # the slices are stored by key order: emb's three row ranges, then w2's two column halves
    np.testing.assert_array_equal(v["emb"].reshape(-1), raw[:30])
    np.testing.assert_array_equal(v["w2"][:, :3].reshape(-1), raw[30:42])
    np.testing.assert_array_equal(v["w2"][:, 3:].reshape(-1), raw[42:54])


def test_slice_keys_are_tensorflows():
    keys = [k for k, _ in read_table(PART_INDEX) if k[:1] == b"\x00"]
    # TF writes a whole dimension's extent out ((0, 3)), not as "full" (length -1)
    assert tfc.slice_key("emb", [(0, 4), (0, 3)]) in keys
    assert tfc.slice_key("emb", [(4, 3), (0, 3)]) in keys
    assert tfc.slice_key("emb", [(7, 3), (0, 3)]) in keys
    assert tfc.slice_key("w2", [(0, 4), (3, 3)]) in keys
    assert tfc.slice_key("w2", [(0, -1), (3, 3)]).endswith(b"\x7f\x83\x83")
    # wide numbers: the signed encoding grows by 7 bits a byte and orders as the numbers do
    enc = [tfc._signed_increasing(v) for v in (-(1 << 40), -70000, -65, -64, -1, 0, 1, 63, 64, 8191, 8192, 1 << 40)]
    assert enc == sorted(enc)
    assert [len(e) for e in enc[4:9]] == [1, 1, 1, 1, 2]


ALL = {
    "f32": np.arange(12, dtype=np.float32).reshape(3, 4) / 7, "f64": np.array([np.pi, -0.0, np.inf]),
    "f16": np.array([1.5, -2], np.float16), "i8": np.array([-128, 127], np.int8), "i16": np.array([-3], np.int16),
    "i32": np.array([[1, -2]], np.int32), "i64": np.array(-(1 << 40), np.int64), "u8": np.array([0, 255], np.uint8),
    "u16": np.array([65535], np.uint16), "u32": np.array([1 << 31], np.uint32), "u64": np.array([1 << 63], np.uint64),
    "b": np.array([True, False, True]), "empty": np.zeros((0, 5), np.float32), "scalar": np.float32(2.5),
    "s": np.array([[b"", b"x" * 200], ["\u00e9t\u00e9", b"\x00\xff"]], dtype=object), "scope/w/Adam": np.ones(3, np.float32),
}


def test_write_then_read_every_dtype(tmp_path):
    files = tfc.write_bundle(str(tmp_path / "all"), ALL)
    assert sorted(os.path.basename(f) for f in files) == ["all.data-00000-of-00001", "all.index"]
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]
    with tfc.BundleReader(str(tmp_path / "all.index")) as r:
        got = r.read()
    for k, v in ALL.items():
        v = np.asarray(v)
        if k == "s":
            want = [[b"", b"x" * 200], ["\u00e9t\u00e9".encode(), b"\x00\xff"]]
            assert got[k].tolist() == want
            continue
        assert got[k].dtype == v.dtype and got[k].shape == v.shape, k
        np.testing.assert_array_equal(got[k], v)


def test_corrupt_data_fails_its_checksum(tmp_path):
    prefix = str(tmp_path / "c")
    tfc.write_bundle(prefix, {"a": np.arange(100, dtype=np.float32), "s": np.array([b"abc", b"de"], dtype=object)})
    data = prefix + ".data-00000-of-00001"
    with open(data, "rb") as f:
        raw = bytearray(f.read())
    raw[17] ^= 1
    raw[-1] ^= 1
    with open(data, "wb") as f:
        f.write(bytes(raw))
    with tfc.BundleReader(prefix) as r:
        with pytest.raises(DataLossError, match="'a' fails its checksum"):
            r.read(["a"])
        with pytest.raises(DataLossError, match="'s' fails its checksum"):
            r.read(["s"])
        assert r.read(["a"], verify=False)["a"][0] == 0  # unverified reads still work


def test_damaged_and_missing_files(tmp_path):
    prefix = str(tmp_path / "d")
    tfc.write_bundle(prefix, {"a": np.arange(100, dtype=np.float32)})
    data = prefix + ".data-00000-of-00001"
    with pytest.raises(NotFoundError):
        tfc.BundleReader(str(tmp_path / "nothing"))
    with open(data, "r+b") as f:
        f.truncate(100)
    with pytest.raises(DataLossError, match="truncated"):
        tfc.BundleReader(prefix)
    os.remove(data)
    with pytest.raises(DataLossError, match="missing"):
        tfc.BundleReader(prefix)
    with open(prefix + ".index", "wb") as f:
        f.write(b"not a table at all, just some bytes of text here, long enough for a footer")
    with pytest.raises(DataLossError, match="damaged"):
        tfc.BundleReader(prefix)


def test_refuses_dtypes_collflow_cannot_hold(tmp_path):
    # a bfloat16 entry (DataType 14): patched into a written index
    prefix = str(tmp_path / "bf")
    tfc.write_bundle(prefix, {"x": np.zeros(2, np.float16)})
    with open(prefix + ".index", "rb") as f:
        items = read_table(f.read())
    e = tfc._Entry.FromString(items[1][1])
    e.dtype = 14
    with open(prefix + ".index", "wb") as f:
        f.write(build_table([items[0], (items[1][0], e.SerializeToString())]))
    with pytest.raises(DataLossError, match="bfloat16"):
        tfc.BundleReader(prefix)


def test_unwritable_directory_leaves_nothing(tmp_path):
    with pytest.raises(NotFoundError, match="does not exist"):
        tfc.write_bundle(str(tmp_path / "no" / "such" / "dir" / "x"), {"a": np.ones(2)})
    with pytest.raises(InvalidArgumentError):
        tfc.write_bundle(str(tmp_path / "x"), {"a": np.ones(2), "c": np.array([1], "datetime64[s]")})
    assert os.listdir(tmp_path) == []


def test_state_file_round_trip(tmp_path):
    tfc.write_state_file(str(tmp_path), ["m-1", 'odd "name"\\x', "m-3"])
    assert tfc.read_state_file(str(tmp_path)) == ["m-1", 'odd "name"\\x', "m-3"]
    assert tfc.read_state_file(str(tmp_path / "none")) == []


# -- the Saver and the checkpoint helpers ------------------------------------------------------------


def _model():
    x = tf.placeholder(tf.float32, [None, 3])
    w = tf.get_variable("w", [3, 2], initializer=tf.random_normal_initializer(seed=1))
    b = tf.get_variable("b", [2], initializer=tf.zeros_initializer())
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - 1.0))
    gs = tf.train.get_or_create_global_step()
    train = tf.train.AdamOptimizer(0.1).minimize(loss, global_step=gs)
    return x, loss, train


def test_saver_writes_and_restores_the_tensorflow_format(tmp_path):
    X = np.random.default_rng(0).normal(size=(8, 3)).astype(np.float32)
    with tf.Graph().as_default():
        x, loss, train = _model()
        saver = tf.train.Saver(checkpoint_format="tensorflow", max_to_keep=2)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            paths = []
            for _ in range(3):
                s.run(train, {x: X})
                paths.append(saver.save(s, str(tmp_path / "model.ckpt"), global_step=tf.train.get_global_step()))
            want = s.run(tf.global_variables())
            after = [s.run([loss, train], {x: X})[0] for _ in range(2)]
    assert paths[-1].endswith("model.ckpt-3")
    names = sorted(os.listdir(tmp_path))
    # max_to_keep=2: the first checkpoint's index, data and meta graph are gone
    assert "model.ckpt-1.index" not in names and "model.ckpt-1.data-00000-of-00001" not in names
    assert "model.ckpt-3.index" in names and "model.ckpt-3.data-00000-of-00001" in names
    assert tfc.read_state_file(str(tmp_path)) == ["model.ckpt-2", "model.ckpt-3"]
    assert tf.train.latest_checkpoint(str(tmp_path)) == paths[-1]
    assert saver.last_checkpoints == paths[1:]
    assert tf.train.checkpoint_exists(paths[-1])
    st = tf.train.get_checkpoint_state(str(tmp_path))
    assert st.model_checkpoint_path == paths[-1] and st.all_model_checkpoint_paths == paths[1:]
    assert dict(tf.train.list_variables(str(tmp_path)))["w/Adam"] == [3, 2]
    with tf.Graph().as_default():
        x, loss, train = _model()
        saver = tf.train.Saver()
        with tf.Session() as s:
            res = saver.restore(s, tf.train.latest_checkpoint(str(tmp_path)))
            assert res.global_step == 3 and not res.missing
            for a, b in zip(s.run(tf.global_variables()), want):
                np.testing.assert_array_equal(a, b)
            assert [s.run([loss, train], {x: X})[0] for _ in range(2)] == after
    tf.train.remove_checkpoint(paths[-1])
    assert not [n for n in os.listdir(tmp_path) if n.startswith("model.ckpt-3")]


def test_directory_written_by_tensorflow(tmp_path):
    """Only TF's files: its state file's absolute paths name another directory (copied since)."""
    _write(tmp_path, "model.ckpt-7", MODEL_INDEX, MODEL_DATA)
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "/elsewhere/model.ckpt-7"\n'
                                         'all_model_checkpoint_paths: "/elsewhere/model.ckpt-7"\n')
    latest = tf.train.latest_checkpoint(str(tmp_path))
    assert latest == str(tmp_path / "model.ckpt-7")
    assert tf.train.get_checkpoint_state(str(tmp_path)).all_model_checkpoint_paths == [latest]
    r = tf.train.NewCheckpointReader(str(tmp_path))
    assert r.get_variable_to_shape_map()["dense/kernel"] == [2, 3]
    assert r.get_tensor("strs").tolist() == [b"ab", b"", b"xyz"]
    assert tf.train.load_variable(str(tmp_path), "dense/bias:0").tolist() == [1.5]
    with tf.Graph().as_default():
        with tf.variable_scope("dense"):
            k = tf.get_variable("kernel", [2, 3])
        bias = tf.get_variable("b", [1], dtype=tf.float64)
        tf.train.init_from_checkpoint(latest, {"dense/": "dense/", "dense/bias": bias})
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            np.testing.assert_array_equal(s.run(k), np.arange(6).reshape(2, 3))
            assert s.run(bias).tolist() == [1.5]
    with tf.Graph().as_default():
        k = tf.get_variable("dense/kernel", [3, 2])
        with tf.Session() as s:
            with pytest.raises(InvalidArgumentError, match="dense/kernel"):
                tf.train.Saver([k]).restore(s, latest)


def test_unknown_checkpoint_format_refused():
    with tf.Graph().as_default():
        tf.Variable(1.0)
        with pytest.raises(InvalidArgumentError, match="checkpoint_format"):
            tf.train.Saver(checkpoint_format="tf2")


def test_environment_sets_the_default_format(tmp_path, monkeypatch):
    monkeypatch.setenv("COLLFLOW_CHECKPOINT_FORMAT", "tensorflow")
    with tf.Graph().as_default():
        v = tf.Variable([1.0, 2.0], name="v")
        with tf.Session() as s:
            s.run(v.initializer)
            path = tf.train.Saver().save(s, str(tmp_path / "m"))
    assert os.path.isfile(path + ".index") and not os.path.exists(path + ".h5")
    assert tf.train.load_variable(path, "v").tolist() == [1.0, 2.0]
