"""TFRecord files: CRC-32C (vectorized), TFRecordWriter / tf_record_iterator / TFRecordOptions
(tf.python_io, tf.io), GZIP and ZLIB, corrupt and truncated files, and the record datasets
(tf.data.TFRecordDataset, FixedLengthRecordDataset).  Every behaviour is checked without
TensorFlow (an independent framing reader here); with TF installed, files and orders are
also compared with TensorFlow's (tests/tf_peer.py)."""
import gzip
import os
import random
import re
import struct
import zlib

import numpy as np
import pytest

import collflow as cf
import collflow.compat.v1 as tf
from collflow.platform import crc32c as C
from collflow.platform import tfrecord
from tf_peer import tensorflow_v1
from crc_reference import crc32c_bitwise as crc_bitwise, masked  # noqa: E402


# -- an independent reference -----------------------------------------------------------------------

def frame(records) -> bytes:
    out = []
    for r in records:
        head = struct.pack("<Q", len(r))
        out += [head, struct.pack("<I", masked(head)), r, struct.pack("<I", masked(r))]
    return b"".join(out)


def unframe(blob: bytes):
    out, pos = [], 0
    while pos < len(blob):
        (n,) = struct.unpack_from("<Q", blob, pos)
        assert struct.unpack_from("<I", blob, pos + 8)[0] == masked(blob[pos:pos + 8])
        data = blob[pos + 12:pos + 12 + n]
        assert struct.unpack_from("<I", blob, pos + 12 + n)[0] == masked(data)
        out.append(data)
        pos += 16 + n
    assert pos == len(blob)
    return out


def read_file(path) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def write_file(path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)


def write(path, records, options=None):
    with tf.python_io.TFRecordWriter(str(path), options) as w:
        for r in records:
            w.write(r)


def elements(make_ds, feed=None):
    """Every element of the dataset make_ds() builds (an initializable iterator)."""
    g = cf.Graph()
    with g.as_default():
        built = make_ds()
        ds, feed = built if isinstance(built, tuple) else (built, feed)
        it = tf.data.make_initializable_iterator(ds)
        nxt = it.get_next()
    out = []
    with cf.Session(graph=g) as s:
        s.run(it.initializer, feed or {})
        while True:
            try:
                out.append(s.run(nxt))
            except cf.errors.OutOfRangeError:
                return out


# -- CRC-32C ------------------------------------------------------------------------------------------

def test_crc32c_known_vectors():
    assert C.crc32c(b"123456789") == 0xE3069283
    assert C.crc32c(b"") == 0
    assert C.crc32c(bytes(32)) == 0x8A9136AA           # RFC 3720 B.4
    assert C.crc32c(b"\xff" * 32) == 0x62A8AB43
    assert C.crc32c(bytes(range(32))) == 0x46DD794E
    assert C.crc32c(bytes(range(31, -1, -1))) == 0x113FDB5C
    assert tfrecord.masked_crc32c(b"123456789") == masked(b"123456789")
    # the same through the vectorized path, whatever the size thresholds are
    many = C.crc32c_many([b"123456789", b"", bytes(32), b"\xff" * 32] * 500)
    assert many[:4].tolist() == [0xE3069283, 0, 0x8A9136AA, 0x62A8AB43]


def test_crc32c_many_matches_the_bitwise_reference():
    rng = np.random.default_rng(1)
    lens = list(range(0, 70)) + rng.integers(0, 5001, 400).tolist()
    recs = [rng.integers(0, 256, n, dtype=np.uint8).tobytes() for n in lens]
    want = [crc_bitwise(r) for r in recs]
    assert C.crc32c_many(recs).tolist() == want
    # bytes-like inputs, a str (UTF-8 with surrogateescape), single calls on both paths
    assert C.crc32c_many([bytearray(recs[-1]), memoryview(recs[-2])]).tolist() == want[-1:-3:-1]
    assert C.crc32c("h\xe9\udcff") == crc_bitwise(b"h\xc3\xa9\xff")
    for r, w in zip(recs[-30:], want[-30:]):
        assert C.crc32c(r) == w


def test_crc32c_of_long_strings_cut_into_pieces(monkeypatch):
    # strings longer than a piece are cut and their pieces' CRCs combined: exercise that with small pieces
    monkeypatch.setattr(C, "_PIECE", 1000)
    monkeypatch.setattr(C, "_BATCH", 5000)
    rng = np.random.default_rng(2)
    recs = [rng.integers(0, 256, n, dtype=np.uint8).tobytes() for n in (0, 999, 1000, 1001, 7777, 30000, 5)]
    assert C.crc32c_many(recs).tolist() == [crc_bitwise(r) for r in recs]
    assert C.crc32c(recs[5]) == crc_bitwise(recs[5])


def test_crc32c_of_length_headers():
    values = [0, 1, 255, 256, 3000, 2**32 - 1, 2**32, 2**63 + 12345, 2**64 - 1]
    assert C.crc32c_u64le(np.array(values, dtype=np.uint64)).tolist() == [
        crc_bitwise(struct.pack("<Q", v)) for v in values]


def test_crc32c_mask_on_arrays():
    recs = [bytes([i % 256]) * i for i in range(300)]
    assert C.masked_crc32c_many(recs).tolist() == [masked(r) for r in recs]


# -- writer and iterator ------------------------------------------------------------------------------

def test_roundtrip_bytes_str_and_empty_records(tmp_path):
    p = tmp_path / "a.tfrecord"
    recs = [b"abc", b"", "h\xe9llo", "\udcff\udc80raw", bytearray(b"\x00\x01"), b"\xff" * 5000]
    write(p, recs)
    want = [b"abc", b"", "h\xe9llo".encode(), b"\xff\x80raw", b"\x00\x01", b"\xff" * 5000]
    assert unframe(p.read_bytes()) == want                      # the framing, read independently
    assert list(tf.python_io.tf_record_iterator(str(p))) == want
    assert list(tf.io.tf_record_iterator(p)) == want            # a PathLike too
    with pytest.raises(TypeError, match="bytes"):
        with tf.io.TFRecordWriter(str(tmp_path / "b")) as w:
            w.write(3)


def test_reads_independently_framed_files(tmp_path):
    p = tmp_path / "hand"
    recs = [os.urandom(n) for n in (0, 1, 17, 300, 4096)]
    p.write_bytes(frame(recs))
    assert list(tf.python_io.tf_record_iterator(str(p))) == recs


def test_writer_close_flush_and_closed_errors(tmp_path):
    for kind in ("", "GZIP", "ZLIB"):
        p = str(tmp_path / f"f{kind}")
        w = tf.io.TFRecordWriter(p, kind)
        w.write(b"first")
        w.flush()   # everything written so far is in the file while the writer stays open
        if not kind:  # (a flushed compressed stream has no end yet: see the next test)
            assert unframe(read_file(p)) == [b"first"]
            assert list(tf.io.tf_record_iterator(p)) == [b"first"]
        w.write(b"second")
        w.close()
        w.close()   # again: nothing
        assert list(tf.io.tf_record_iterator(p, kind)) == [b"first", b"second"]
        with pytest.raises(cf.errors.FailedPreconditionError, match="Writer is closed"):
            w.write(b"x")
        with pytest.raises(cf.errors.FailedPreconditionError, match="Writer is closed"):
            w.flush()


def test_flushed_compressed_stream_is_readable_up_to_the_flush(tmp_path):
    for kind, wbits in (("GZIP", 31), ("ZLIB", 15)):
        p = tmp_path / kind
        w = tf.io.TFRecordWriter(str(p), kind)
        w.write(b"abc")
        w.flush()
        d = zlib.decompressobj(wbits)
        assert unframe(d.decompress(p.read_bytes())) == [b"abc"]
        w.close()


def test_dropped_writer_writes_its_buffer(tmp_path):
    p = tmp_path / "dropped"
    w = tf.io.TFRecordWriter(str(p))
    w.write(b"kept")
    del w
    assert unframe(p.read_bytes()) == [b"kept"]


def test_compression_formats(tmp_path):
    recs = [b"x" * i for i in range(50)] + [os.urandom(3000)]
    plain = frame(recs)
    for options in ("GZIP", tf.io.TFRecordCompressionType.GZIP, tf.io.TFRecordOptions("GZIP"),
                    tf.io.TFRecordOptions(tf.io.TFRecordCompressionType.GZIP, compression_level=9)):
        p = tmp_path / "g"
        write(p, recs, options)
        raw = p.read_bytes()
        assert raw[:2] == b"\x1f\x8b" and gzip.decompress(raw) == plain          # a gzip member
        assert list(tf.io.tf_record_iterator(str(p), options)) == recs
    for options in ("ZLIB", tf.python_io.TFRecordCompressionType.ZLIB, tf.python_io.TFRecordOptions("ZLIB")):
        p = tmp_path / "z"
        write(p, recs, options)
        raw = p.read_bytes()
        assert raw[:1] == b"\x78" and zlib.decompress(raw) == plain              # a zlib stream
        assert list(tf.python_io.tf_record_iterator(str(p), options)) == recs
    # concatenated gzip members read as one stream; files written by other tools
    p = tmp_path / "cat"
    p.write_bytes(gzip.compress(frame(recs[:3])) + gzip.compress(frame(recs[3:])))
    assert list(tf.io.tf_record_iterator(str(p), "GZIP")) == recs
    p.write_bytes(zlib.compress(plain, 1))
    assert list(tf.io.tf_record_iterator(str(p), "ZLIB")) == recs


def test_compression_errors(tmp_path):
    p = tmp_path / "g"
    write(p, [b"a" * 1000] * 10, "GZIP")
    raw = p.read_bytes()
    p.write_bytes(raw[:len(raw) // 2])
    with pytest.raises(cf.errors.DataLossError, match="GZIP stream is truncated"):
        list(tf.io.tf_record_iterator(str(p), "GZIP"))
    write(p, [b"abc"])
    with pytest.raises(cf.errors.DataLossError, match="corrupt ZLIB data"):
        list(tf.io.tf_record_iterator(str(p), "ZLIB"))
    with pytest.raises(cf.errors.InvalidArgumentError, match="invalid zlib options"):
        tf.io.TFRecordWriter(str(tmp_path / "o"), tf.io.TFRecordOptions("ZLIB", compression_level=42))


def test_options_strings():
    get = tf.io.TFRecordOptions.get_compression_type_string
    assert [get(None), get(""), get(0), get(1), get(2), get("GZIP"), get("ZLIB")] == ["", "", "", "ZLIB", "GZIP",
                                                                                      "GZIP", "ZLIB"]
    assert get(tf.io.TFRecordOptions()) == "" and get(tf.io.TFRecordOptions("ZLIB")) == "ZLIB"
    opts = tf.python_io.TFRecordOptions(tf.python_io.TFRecordCompressionType.GZIP, mem_level=8)
    assert opts.compression_type == 2 and opts.mem_level == 8 and opts.window_bits is None   # kept as given
    for bad in ("gzip", "BZ2", 7):
        with pytest.raises(ValueError, match='Not a valid compression_type: "'):
            get(bad)
    with pytest.raises(cf.errors.InvalidArgumentError, match="Not a valid compression_type"):
        tf.io.TFRecordOptions("bogus")
    assert tf.io.TFRecordWriter is tf.python_io.TFRecordWriter is tfrecord.TFRecordWriter
    assert tf.io.TFRecordOptions is tf.python_io.TFRecordOptions


# -- corrupt, truncated, empty, unwritable ------------------------------------------------------------

def test_corrupt_crcs_name_the_file_and_offset(tmp_path):
    p = tmp_path / "c"
    write(p, [b"a0", b"a1", b"a2"])
    raw = p.read_bytes()
    bad = bytearray(raw)
    bad[18 + 12] ^= 1          # the data of the second record (which starts at byte 18)
    p.write_bytes(bytes(bad))
    it = tf.io.tf_record_iterator(str(p))
    assert next(it) == b"a0"   # records before the corrupt one are read
    with pytest.raises(cf.errors.DataLossError, match=f"{p}: corrupted record at 30 .data CRC mismatch"):
        next(it)
    bad = bytearray(raw)
    bad[18 + 2] ^= 1           # its length
    p.write_bytes(bytes(bad))
    with pytest.raises(cf.errors.DataLossError, match=f"{p}: corrupted record at 18 .length CRC mismatch"):
        list(tf.io.tf_record_iterator(str(p)))
    bad = bytearray(raw)
    bad[18 + 4] = 0x7F         # a length that would need exabytes: refused by its CRC before reading on
    p.write_bytes(bytes(bad))
    with pytest.raises(cf.errors.DataLossError, match="corrupted record at 18"):
        list(tf.io.tf_record_iterator(str(p)))


def test_truncated_files(tmp_path):
    p = tmp_path / "t"
    write(p, [b"a0", b"a1"])
    raw = p.read_bytes()
    p.write_bytes(raw[:18 + 14])    # a whole header, part of the data: TF's DataLossError
    with pytest.raises(cf.errors.DataLossError, match="truncated record at 18"):
        list(tf.io.tf_record_iterator(str(p)))
    with open(p, "rb") as f:        # the summary reader's mode: a writer may still be appending
        assert list(tfrecord.read_records(f, str(p))) == [b"a0"]
    p.write_bytes(raw[:18 + 5])     # part of a header: the end, as TF
    assert list(tf.io.tf_record_iterator(str(p))) == [b"a0"]


def test_empty_files(tmp_path):
    p = tmp_path / "e"
    p.write_bytes(b"")
    for kind in ("", "GZIP", "ZLIB"):
        assert list(tf.io.tf_record_iterator(str(p), kind)) == []
        assert elements(lambda: tf.data.TFRecordDataset(str(p), kind)) == []
    for kind in ("", "GZIP", "ZLIB"):
        write(p, [], kind)
        assert list(tf.io.tf_record_iterator(str(p), kind)) == []


def test_unwritable_and_missing_paths(tmp_path):
    missing_dir = tmp_path / "no" / "such" / "dir" / "x.tfrecord"
    with pytest.raises(cf.errors.NotFoundError, match=f"cannot open {missing_dir}"):
        tf.io.TFRecordWriter(str(missing_dir))
    with pytest.raises(cf.errors.FailedPreconditionError, match=str(tmp_path)):
        tf.io.TFRecordWriter(str(tmp_path))         # a directory
    with pytest.raises(cf.errors.NotFoundError, match="missing"):
        tf.io.tf_record_iterator(str(tmp_path / "missing"))   # at the call, as TF
    if os.geteuid() != 0:   # root may write anywhere
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        try:
            with pytest.raises(cf.errors.PermissionDeniedError, match=str(ro)):
                tf.io.TFRecordWriter(str(ro / "x"))
        finally:
            ro.chmod(0o700)


def test_read_records_resumes_on_a_growing_file(tmp_path):
    p = tmp_path / "grow"
    full = frame([b"one", b"two", b"three" * 100])
    cut = len(frame([b"one", b"two"])) + 20
    p.write_bytes(full[:cut])
    with open(p, "rb") as f:
        assert list(tfrecord.read_records(f, str(p))) == [b"one", b"two"]
        assert f.tell() == cut - 20                  # left at the partial record
        with open(p, "ab") as w:
            w.write(full[cut:])
        assert list(tfrecord.read_records(f, str(p))) == [b"three" * 100]
        f.seek(0)
        it = tfrecord.read_records(f, str(p))
        assert next(it) == b"one"
        it.close()
        assert f.tell() == len(frame([b"one"]))     # just after the records taken


def test_many_records_and_a_long_one(tmp_path, monkeypatch):
    rng = random.Random(3)
    recs = [rng.randbytes(rng.randint(0, 3000)) for _ in range(4000)]
    p = tmp_path / "many"
    write(p, recs)
    assert list(tf.io.tf_record_iterator(str(p))) == recs
    assert unframe(p.read_bytes()[:sum(16 + len(r) for r in recs[:20])]) == recs[:20]   # the writer's framing
    # corruption deep in a block of many records is found at its offset
    raw = bytearray(p.read_bytes())
    k = 2500
    off = sum(16 + len(r) for r in recs[:k])
    raw[off + 12 + len(recs[k]) // 2 if recs[k] else off + 12] ^= 0x40
    p.write_bytes(bytes(raw))
    got = []
    with pytest.raises(cf.errors.DataLossError, match=f"corrupted record at {off + 12} "):
        for r in tf.io.tf_record_iterator(str(p)):
            got.append(r)
    assert got == recs[:k]
    # records longer than the CRC's pieces and than a read block
    monkeypatch.setattr(C, "_PIECE", 1 << 16)
    big = [os.urandom(3 << 20), b"tail"]
    write(p, big, "GZIP")
    assert list(tf.io.tf_record_iterator(str(p), "GZIP")) == big


# -- datasets -----------------------------------------------------------------------------------------

def _three_files(d):
    files = {"a": 4, "b": 2, "c": 5}
    for name, n in files.items():
        write(d / name, [f"{name}{i}".encode() for i in range(n)])
    return [str(d / n) for n in files]


def test_tfrecord_dataset_orders(tmp_path):
    files = _three_files(tmp_path)
    seq = [b"a0", b"a1", b"a2", b"a3", b"b0", b"b1", b"c0", b"c1", b"c2", b"c3", b"c4"]
    assert elements(lambda: tf.data.TFRecordDataset(files)) == seq
    assert elements(lambda: tf.data.TFRecordDataset(files, num_parallel_reads=1)) == seq
    # TF's order (checked against TensorFlow below): a finished file's slot takes the next file,
    # whose first record comes when the turn is back there
    assert elements(lambda: tf.data.TFRecordDataset(files, num_parallel_reads=2)) == [
        b"a0", b"b0", b"a1", b"b1", b"a2", b"a3", b"c0", b"c1", b"c2", b"c3", b"c4"]
    assert elements(lambda: tf.data.TFRecordDataset(files, num_parallel_reads=3)) == [
        b"a0", b"b0", b"c0", b"a1", b"b1", b"c1", b"a2", b"c2", b"a3", b"c3", b"c4"]
    assert sorted(elements(lambda: tf.data.TFRecordDataset(files, num_parallel_reads=-1))) == sorted(seq)


def test_tfrecord_dataset_strings_compression_and_fed_names(tmp_path):
    blob = bytes(range(256))
    write(tmp_path / "g", [blob, b"", "\u00e9".encode()], "GZIP")
    got = elements(lambda: tf.data.TFRecordDataset([str(tmp_path / "g")], compression_type="GZIP"))
    assert got == [blob, b"", "\u00e9".encode()]       # binary records come back exactly

    files = _three_files(tmp_path)

    def fed():
        names = tf.placeholder(tf.string, [None])
        return tf.data.TFRecordDataset(names).batch(4), {names: files[1:]}
    batches = elements(fed)
    assert [list(b) for b in batches] == [[b"b0", b"b1", b"c0", b"c1"], [b"c2", b"c3", b"c4"]]
    ds = tf.data.TFRecordDataset(files[0])
    assert ds.output_types == tf.string and ds.output_shapes.as_list() == []
    with pytest.raises(cf.errors.InvalidArgumentError, match="compression_type"):
        tf.data.TFRecordDataset(files, compression_type="BZ2")


def test_tfrecord_dataset_errors(tmp_path):
    files = _three_files(tmp_path)
    raw = bytearray(read_file(files[0]))
    raw[18 + 12] ^= 1
    write_file(files[0], bytes(raw))
    g = cf.Graph()
    with g.as_default():
        nxt = tf.data.make_one_shot_iterator(tf.data.TFRecordDataset(files[0])).get_next()
    with cf.Session(graph=g) as s:
        assert s.run(nxt) == b"a0"
        with pytest.raises(cf.errors.DataLossError, match="corrupted record at 30"):
            s.run(nxt)
    with pytest.raises(cf.errors.NotFoundError, match="nope"):
        elements(lambda: tf.data.TFRecordDataset(str(tmp_path / "nope")))


def test_fixed_length_record_dataset(tmp_path):
    p = tmp_path / "fl"
    p.write_bytes(b"HHabcdefghiF")
    want = [b"abc", b"def", b"ghi"]
    assert elements(lambda: tf.data.FixedLengthRecordDataset(str(p), 3, header_bytes=2, footer_bytes=1)) == want
    assert elements(lambda: tf.data.FixedLengthRecordDataset([str(p)] * 2, 3, 2, 1, num_parallel_reads=2)) == [
        b"abc", b"abc", b"def", b"def", b"ghi", b"ghi"]

    def fed_size():
        rb = tf.placeholder(tf.int64, [])
        return tf.data.FixedLengthRecordDataset(str(p), rb, 2, 1), {rb: 9}
    assert elements(fed_size) == [b"abcdefghi"]
    (tmp_path / "gz").write_bytes(gzip.compress(b"HHabcdefghiF"))
    (tmp_path / "z").write_bytes(zlib.compress(b"HHabcdefghiF"))
    assert elements(lambda: tf.data.FixedLengthRecordDataset(str(tmp_path / "gz"), 3, 2, 1,
                                                             compression_type="GZIP")) == want
    assert elements(lambda: tf.data.FixedLengthRecordDataset(str(tmp_path / "z"), 3, 2, 1,
                                                             compression_type="ZLIB")) == want
    raw = os.urandom(4 * 3072)     # binary records (CIFAR-like) come back exactly
    (tmp_path / "bin").write_bytes(raw)
    got = elements(lambda: tf.data.FixedLengthRecordDataset(str(tmp_path / "bin"), 3072))
    assert b"".join(got) == raw
    (tmp_path / "empty").write_bytes(b"")
    assert elements(lambda: tf.data.FixedLengthRecordDataset(str(tmp_path / "empty"), 3)) == []


def test_fixed_length_record_dataset_errors(tmp_path):
    p = tmp_path / "fl"
    p.write_bytes(b"HHabcdefghijF")      # a body of 10 bytes
    msg = (r'Excluding the header \(2 bytes\) and footer \(1 bytes\), input file ".*fl" has body length 10 bytes, '
           r"which is not an exact multiple of the record length \(3 bytes\)")
    with pytest.raises(cf.errors.InvalidArgumentError, match=msg):   # before any record, as TF
        elements(lambda: tf.data.FixedLengthRecordDataset(str(p), 3, 2, 1))
    (tmp_path / "fl.gz").write_bytes(gzip.compress(b"HHabcdefghijF"))
    g = cf.Graph()
    with g.as_default():
        ds = tf.data.FixedLengthRecordDataset(str(tmp_path / "fl.gz"), 3, 2, 1, compression_type="GZIP")
        nxt = tf.data.make_one_shot_iterator(ds).get_next()
    with cf.Session(graph=g) as s:
        assert [s.run(nxt) for _ in range(3)] == [b"abc", b"def", b"ghi"]   # then TF's DataLossError
        with pytest.raises(cf.errors.DataLossError, match=msg.replace("fl", "fl.gz")):
            s.run(nxt)
    (tmp_path / "short").write_bytes(b"H")
    with pytest.raises(cf.errors.InvalidArgumentError, match="fewer than the header"):
        elements(lambda: tf.data.FixedLengthRecordDataset(str(tmp_path / "short"), 3, 2, 1))
    with pytest.raises(cf.errors.InvalidArgumentError, match="record_bytes"):
        elements(lambda: tf.data.FixedLengthRecordDataset(str(p), 0))


# -- against TensorFlow --------------------------------------------------------------------------------

def _tf_run(T, ds):
    it = T.data.make_one_shot_iterator(ds).get_next()
    out = []
    with T.Session() as s:
        try:
            while True:
                out.append(s.run(it))
        except T.errors.OutOfRangeError:
            return out


def test_files_interchange_with_tensorflow(tmp_path):
    T = tensorflow_v1()
    rng = random.Random(4)
    recs = [rng.randbytes(rng.randint(0, 2000)) for _ in range(300)] + [b"", "h\xe9".encode()]
    for kind in ("", "GZIP", "ZLIB"):
        theirs, ours = str(tmp_path / f"tf{kind}"), str(tmp_path / f"cf{kind}")
        with T.io.TFRecordWriter(theirs, T.io.TFRecordOptions(kind)) as w:
            for r in recs:
                w.write(r)
        write(ours, recs, kind)
        assert list(tf.io.tf_record_iterator(theirs, kind)) == recs
        assert list(T.io.tf_record_iterator(ours, kind)) == recs
        assert elements(lambda: tf.data.TFRecordDataset(theirs, kind)) == recs
        with T.Graph().as_default():
            assert _tf_run(T, T.data.TFRecordDataset(ours, kind)) == recs
        if not kind:
            assert read_file(theirs) == read_file(ours)   # the same bytes
    with T.io.TFRecordWriter(str(tmp_path / "tfe"), "GZIP"):
        pass
    assert list(tf.io.tf_record_iterator(str(tmp_path / "tfe"), "GZIP")) == []
    (tmp_path / "zero").write_bytes(b"")
    assert list(T.io.tf_record_iterator(str(tmp_path / "zero"), "GZIP")) == []   # as ours


def test_errors_and_option_strings_as_tensorflow(tmp_path):
    T = tensorflow_v1()
    p = str(tmp_path / "f")
    write(p, [b"a0", b"a1"])
    raw = read_file(p)
    for name, data in (("data", raw[:30] + bytes([raw[30] ^ 1]) + raw[31:]),
                       ("length", raw[:20] + bytes([raw[20] ^ 1]) + raw[21:]),
                       ("truncated", raw[:32]), ("partial header", raw[:23])):
        write_file(p, data)
        outcome = []
        for it in (lambda: tf.io.tf_record_iterator(p), lambda: T.io.tf_record_iterator(p)):
            try:
                outcome.append(("ok", list(it())))
            except Exception as e:  # noqa: BLE001 - compared below
                outcome.append((type(e).__name__, re.search(r"(corrupted|truncated) record at \d+", str(e))[0]))
        assert outcome[0] == outcome[1], name
    for o in (None, "", 0, 1, 2, "GZIP", "ZLIB"):
        assert tf.io.TFRecordOptions.get_compression_type_string(o) == \
            T.io.TFRecordOptions.get_compression_type_string(o)
    with pytest.raises(ValueError):
        T.io.TFRecordOptions.get_compression_type_string("gzip")


def test_parallel_reads_order_as_tensorflow(tmp_path):
    T = tensorflow_v1()
    rng = random.Random(5)
    for trial in range(12):
        lens = [rng.choice([0, 1, 2, 3, 5]) for _ in range(rng.randint(1, 6))]
        files = []
        for j, n in enumerate(lens):
            files.append(str(tmp_path / f"t{trial}_{j}"))
            write(files[-1], [f"{j}:{i}".encode() for i in range(n)])
        for k in (2, 3, 4):
            with T.Graph().as_default():
                want = list(_tf_run(T, T.data.TFRecordDataset(files, num_parallel_reads=k)))
            assert elements(lambda: tf.data.TFRecordDataset(files, num_parallel_reads=k)) == want, (lens, k)


def _drain_cf(make_ds):
    """The elements, then the error's class name if one ends them."""
    g = cf.Graph()
    with g.as_default():
        nxt = tf.data.make_one_shot_iterator(make_ds(tf)).get_next()
    out = []
    with cf.Session(graph=g) as s:
        while True:
            try:
                out.append(s.run(nxt))
            except cf.errors.OutOfRangeError:
                return out
            except cf.errors.OpError as e:
                return out + [type(e).__name__]


def _drain_tf(T, make_ds):
    with T.Graph().as_default():
        nxt = T.data.make_one_shot_iterator(make_ds(T)).get_next()
        out = []
        with T.Session() as s:
            while True:
                try:
                    out.append(s.run(nxt))
                except T.errors.OutOfRangeError:
                    return out
                except T.errors.OpError as e:
                    return out + [type(e).__name__]


def test_fixed_length_as_tensorflow(tmp_path):
    T = tensorflow_v1()
    cases = [(b"HHabcdefghiF", "", 3), (b"HHabcdefghijF", "", 3), (b"HHabcdefghijF", "GZIP", 3),
             (b"HHabcdefghiF", "ZLIB", 3), (b"", "", 3), (b"HHabcdefghijF", "", 20), (b"HHabcdefghiF", "", 9)]
    for i, (body, kind, rb) in enumerate(cases):
        p = str(tmp_path / f"c{i}")
        write_file(p, gzip.compress(body) if kind == "GZIP" else zlib.compress(body) if kind == "ZLIB" else body)
        hb, fb = (2, 1) if body else (0, 0)

        def make(M):
            return M.data.FixedLengthRecordDataset(p, rb, hb, fb, compression_type=kind)
        assert _drain_cf(make) == _drain_tf(T, make), (body, kind, rb)
    # TFRecord files: corrupt and truncated ones end the same way in both
    p = str(tmp_path / "r")
    write(p, [b"a0", b"a1", b"a2"])
    raw = read_file(p)
    for data in (raw, raw[:30] + bytes([raw[30] ^ 1]) + raw[31:], raw[:40], raw[:23], b""):
        write_file(p, data)
        assert _drain_cf(lambda M: M.data.TFRecordDataset(p)) == _drain_tf(T, lambda M: M.data.TFRecordDataset(p))
