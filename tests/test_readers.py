"""TF1's readers (graph/ops/reader_ops.py, kernels/reader_kernels.py) and tf.decode_raw /
tf.decode_compressed: each reader over several files fed by string_input_producer and
queue runners until OutOfRangeError, read_up_to, the record layouts (header/footer/hop
bytes, GZIP/ZLIB, TFRecord offsets), keys, errors, reset and serialization, a CIFAR-like
pipeline end to end; every behaviour checked by expected values, and against TensorFlow's
compat.v1 where it is installed."""
import gzip
import threading
import time
import zlib

import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow.graph.registry import get_op_def
from tf_peer import tensorflow_v1


def _b(x):
    """A fetched string as bytes: collflow's str (surrogateescape) or TF's bytes."""
    if isinstance(x, (bytes, np.bytes_)):
        return bytes(x)
    return str(x).encode("utf-8", "surrogateescape")


def _bs(a):
    return [_b(x) for x in np.asarray(a, dtype=object).reshape(-1)]


def _drain(T, files, make_reader, num_epochs=1, up_to=None, extra=None):
    """Runs `make_reader(T)` over `files` (string_input_producer, no shuffling, queue runners,
    a Coordinator) until OutOfRangeError: ([(key, value) or (keys, values)], records, work units)."""
    with T.Graph().as_default():
        q = T.train.string_input_producer(files, num_epochs=num_epochs, shuffle=False)
        r = make_reader(T)
        k, v = r.read(q) if up_to is None else r.read_up_to(q, up_to)
        counts = [r.num_records_produced(), r.num_work_units_completed()]
        out = []
        with T.Session() as s:
            s.run([T.global_variables_initializer(), T.local_variables_initializer()])
            coord = T.train.Coordinator()
            threads = T.train.start_queue_runners(s, coord)
            try:
                while not coord.should_stop():
                    kk, vv = s.run([k, v])
                    out.append((_b(kk), _b(vv)) if up_to is None else (_bs(kk), _bs(vv)))
            except T.errors.OutOfRangeError:
                pass
            finally:
                coord.request_stop()
                coord.join(threads, stop_grace_period_secs=5)
            n, w = s.run(counts)
    return out, int(n), int(w)


def _both(fn):
    """fn(T) for collflow, and for TensorFlow when it is installed (else only collflow's)."""
    got = fn(tf)
    try:
        want = fn(tensorflow_v1())
    except pytest.skip.Exception:
        return got, None
    return got, want


# -- TextLineReader ------------------------------------------------------------------------


@pytest.fixture
def text_files(tmp_path):
    a, b, c = tmp_path / "a.txt", tmp_path / "b.txt", tmp_path / "empty.txt"
    a.write_bytes(b"head\nl1\r\nl2\n\nl4")       # CRLF, an empty line, no final newline
    b.write_bytes(b"x\ny\xff\n")                  # a byte that is not UTF-8
    c.write_bytes(b"")
    return [str(a), str(c), str(b)]


def test_text_line_reader_reads_every_file_each_epoch(text_files):
    a, c, b = text_files
    (got, n, w), want = _both(lambda T: _drain(T, text_files, lambda T: T.TextLineReader(), num_epochs=2))
    lines = [(f"{a}:1", b"head"), (f"{a}:2", b"l1"), (f"{a}:3", b"l2"), (f"{a}:4", b""), (f"{a}:5", b"l4"),
             (f"{b}:1", b"x"), (f"{b}:2", b"y\xff")]
    expect = [(k.encode(), v) for k, v in lines] * 2
    assert got == expect and (n, w) == (14, 6)
    if want is not None:
        assert want == (got, n, w)


def test_text_line_reader_skips_header_lines_and_reads_up_to(text_files):
    a, c, b = text_files
    (got, n, w), want = _both(lambda T: _drain(T, text_files, lambda T: T.TextLineReader(skip_header_lines=1),
                                               up_to=2))
    # a batch never spans two files; line numbers count the skipped header
    assert got == [([f"{a}:2".encode(), f"{a}:3".encode()], [b"l1", b"l2"]),
                   ([f"{a}:4".encode(), f"{a}:5".encode()], [b"", b"l4"]),
                   ([f"{b}:2".encode()], [b"y\xff"])]
    assert (n, w) == (5, 3)
    if want is not None:
        assert want == (got, n, w)


# -- WholeFileReader, IdentityReader -------------------------------------------------------------


def test_whole_file_and_identity_readers_key_by_file_name(text_files):
    a, c, b = text_files
    for make, values in ((lambda T: T.WholeFileReader(), [b"head\nl1\r\nl2\n\nl4", b"", b"x\ny\xff\n"]),
                         (lambda T: T.IdentityReader(), [a.encode(), c.encode(), b.encode()])):
        (got, n, w), want = _both(lambda T: _drain(T, text_files, make))
        assert got == list(zip([a.encode(), c.encode(), b.encode()], values)) and (n, w) == (3, 3)
        if want is not None:
            assert want == (got, n, w)


# -- FixedLengthRecordReader ----------------------------------------------------------------------


def _fixed_expect(path, data, rb, hb=0, fb=0, hop=0):
    """The records TF's layout gives: record k at hb + k*step while it and the footer fit."""
    step, out, k = hop or rb, [], 0
    while hb + k * step + rb + fb <= len(data):
        out.append((f"{path}:{k}".encode(), data[hb + k * step:hb + k * step + rb]))
        k += 1
    return out


@pytest.mark.parametrize("kw", [dict(record_bytes=4), dict(record_bytes=4, header_bytes=2),
                                dict(record_bytes=4, header_bytes=2, footer_bytes=3),
                                dict(record_bytes=4, header_bytes=2, footer_bytes=3, hop_bytes=3),
                                dict(record_bytes=4, hop_bytes=5), dict(record_bytes=3, hop_bytes=1, footer_bytes=2)])
def test_fixed_length_record_reader_layouts(tmp_path, kw):
    d1 = b"HH" + bytes(range(65, 82)) + b"FFF"
    d2 = b"HH" + b"abcdefgh" + b"FFF"
    p1, p2 = tmp_path / "f1.bin", tmp_path / "f2.bin"
    p1.write_bytes(d1)
    p2.write_bytes(d2)
    files = [str(p1), str(p2)]
    (got, n, w), want = _both(lambda T: _drain(T, files, lambda T: T.FixedLengthRecordReader(**kw)))
    args = (kw["record_bytes"], kw.get("header_bytes", 0), kw.get("footer_bytes", 0), kw.get("hop_bytes", 0))
    expect = _fixed_expect(files[0], d1, *args) + _fixed_expect(files[1], d2, *args)
    assert got == expect and (n, w) == (len(expect), 2)
    if want is not None:
        assert want == (got, n, w)


def test_fixed_length_record_reader_compressed_files_and_read_up_to(tmp_path):
    data = b"HH" + bytes(range(65, 82)) + b"FFF"
    gz, zz = tmp_path / "f.gz", tmp_path / "f.z"
    gz.write_bytes(gzip.compress(data))
    zz.write_bytes(zlib.compress(data))
    files = [str(gz), str(zz)]

    def prog(T):
        r1 = _drain(T, files[:1], lambda T: T.FixedLengthRecordReader(4, header_bytes=2, footer_bytes=3,
                                                                      encoding="GZIP"))
        r2 = _drain(T, files[1:], lambda T: T.FixedLengthRecordReader(4, header_bytes=2, footer_bytes=3, hop_bytes=3,
                                                                      encoding="ZLIB"), up_to=3)
        return r1, r2
    (r1, r2), want = _both(prog)
    assert r1 == (_fixed_expect(files[0], data, 4, 2, 3), 4, 1)
    recs = _fixed_expect(files[1], data, 4, 2, 3, 3)
    assert r2 == ([([k for k, _ in recs[:3]], [v for _, v in recs[:3]]),
                   ([k for k, _ in recs[3:]], [v for _, v in recs[3:]])], 5, 1)
    if want is not None:
        assert want == (r1, r2)
    with tf.Graph().as_default():
        with pytest.raises(tf.errors.InvalidArgumentError, match="record_bytes must be > 0"):
            tf.FixedLengthRecordReader(0)
        with pytest.raises(tf.errors.InvalidArgumentError, match="encoding"):
            tf.FixedLengthRecordReader(4, encoding="BZ2")
        with pytest.raises(tf.errors.InvalidArgumentError, match="header_bytes must be >= 0"):
            tf.FixedLengthRecordReader(4, header_bytes=-1)


# -- TFRecordReader -------------------------------------------------------------------------------


def _write_tfrecords(T, path, records, options=None):
    with T.python_io.TFRecordWriter(path, options=options) as wr:
        for r in records:
            wr.write(r)


def test_tfrecord_reader_keys_are_byte_offsets_and_reads_compressed(tmp_path):
    plain, gz, zz = str(tmp_path / "r.tfr"), str(tmp_path / "r.tfr.gz"), str(tmp_path / "r.tfr.z")
    recs = [b"one", b"", b"three\xff3"]
    _write_tfrecords(tf, plain, recs)
    _write_tfrecords(tf, gz, recs[:2], tf.python_io.TFRecordOptions(tf.python_io.TFRecordCompressionType.GZIP))
    _write_tfrecords(tf, zz, recs[1:], "ZLIB")

    def prog(T):
        opts = T.python_io.TFRecordOptions
        return (_drain(T, [plain, plain], lambda T: T.TFRecordReader()),
                _drain(T, [plain], lambda T: T.TFRecordReader(), up_to=2),
                _drain(T, [gz], lambda T: T.TFRecordReader(options=opts(T.python_io.TFRecordCompressionType.GZIP))),
                _drain(T, [zz], lambda T: T.TFRecordReader(options=opts("ZLIB"))))
    (a, b, c, d), want = _both(prog)
    keys = [f"{plain}:0".encode(), f"{plain}:19".encode(), f"{plain}:35".encode()]  # 16 bytes of framing each
    assert a == (list(zip(keys, recs)) * 2, 6, 2)
    assert b == ([(keys[:2], recs[:2]), (keys[2:], recs[2:])], 3, 1)
    assert c == ([(f"{gz}:0".encode(), b"one"), (f"{gz}:19".encode(), b"")], 2, 1)    # offsets uncompressed
    assert d == ([(f"{zz}:0".encode(), b""), (f"{zz}:16".encode(), b"three\xff3")], 2, 1)
    if want is not None:
        assert want == (a, b, c, d)


def _read_all(files, make_reader, fetch_errors=True, n=8):
    """Reads from a closed queue of `files`: [(key, value) or the error's class name]."""
    out = []
    with tf.Graph().as_default():
        q = tf.FIFOQueue(10, tf.string)
        r = make_reader()
        k, v = r.read(q.queue_ref)  # the handle tensor works as the queue object does
        with tf.Session() as s:
            s.run(q.enqueue_many([files]))
            s.run(q.close())
            for _ in range(n):
                try:
                    out.append(tuple(_b(x) for x in s.run([k, v])))
                except tf.errors.OutOfRangeError:
                    break
                except tf.errors.OpError as e:
                    out.append((type(e).__name__, e.message))
            out.append(tuple(s.run([r.num_records_produced(), r.num_work_units_completed()])))
    return out


def test_damaged_and_missing_files_raise_tf_errors_and_reading_goes_on(tmp_path):
    good = str(tmp_path / "good.tfr")
    _write_tfrecords(tf, good, [b"a", b"bb"])
    raw = (tmp_path / "good.tfr").read_bytes()
    (tmp_path / "trunc.tfr").write_bytes(raw[:-2])
    bad = bytearray(raw)
    bad[13] ^= 1  # a byte of the first record's data
    (tmp_path / "bad.tfr").write_bytes(bytes(bad))
    missing = str(tmp_path / "missing.tfr")
    files = [missing, str(tmp_path / "trunc.tfr"), str(tmp_path / "bad.tfr"), str(tmp_path), good]
    out = _read_all(files, tf.TFRecordReader)
    assert out[0][0] == "NotFoundError" and missing in out[0][1]
    assert out[1] == (f"{tmp_path}/trunc.tfr:0".encode(), b"a")
    assert out[2][0] == "DataLossError" and "truncated record at 17" in out[2][1]
    assert out[3][0] == "DataLossError" and "corrupted record at 12" in out[3][1]
    assert out[4][0] == "FailedPreconditionError" and "Is a directory" in out[4][1]
    assert out[5:] == [(f"{good}:0".encode(), b"a"), (f"{good}:17".encode(), b"bb"), (3, 3)]
    # a missing file is never started (TF): the next read takes the next file
    for make in (tf.TextLineReader, tf.WholeFileReader, lambda: tf.FixedLengthRecordReader(1)):
        out = _read_all([missing, good], make, n=2)
        assert out[0][0] == "NotFoundError" and missing in out[0][1]
        assert out[1][0].startswith(good.encode())  # (TF's WholeFileReader fails on it again instead)
    # a file shorter than header_bytes has no records (TF raises OutOfRangeError for it)
    (tmp_path / "short.bin").write_bytes(b"abc")
    out = _read_all([str(tmp_path / "short.bin"), good], lambda: tf.FixedLengthRecordReader(2, header_bytes=4), n=1)
    assert out == [(f"{good}:0".encode(), raw[4:6]), (1, 1)]
    out = _read_all([good], lambda: tf.FixedLengthRecordReader(1, encoding="GZIP"))
    assert out[0][0] == "DataLossError" and "GZIP" in out[0][1]


def test_missing_file_is_not_found_in_tf_too(tmp_path):
    T = tensorflow_v1()
    with T.Graph().as_default():
        q = T.FIFOQueue(3, T.string)
        k, _ = T.TextLineReader().read(q)
        with T.Session() as s:
            s.run(q.enqueue(str(tmp_path / "missing.txt")))
            with pytest.raises(T.errors.NotFoundError, match="missing.txt"):
                s.run(k)


# -- state: reset, serialization, sessions --------------------------------------------------------


def _state_program(T, files):
    """Reads, resets, serializes and restores an IdentityReader; TextLineReader's
    serialize_state is unimplemented."""
    out = []
    with T.Graph().as_default():
        q = T.FIFOQueue(10, T.string)
        r, t = T.IdentityReader(), T.TextLineReader()
        k, v = r.read(q)
        kt, _ = t.read(q)
        counts = [r.num_records_produced(), r.num_work_units_completed()]
        state = T.placeholder(T.string, [])
        restore = r.restore_state(state)
        with T.Session() as s:
            s.run(q.enqueue_many([files]))
            s.run(q.close())
            out.append(_bs(s.run([k, v])))
            st = s.run(r.serialize_state())
            out.append(_b(st))
            out.append(_b(s.run(kt)))
            s.run(t.reset())
            out.append(_b(s.run(kt)))                       # the next file: reset dropped the open one
            out.append(s.run(t.num_work_units_completed()))
            with pytest.raises(T.errors.UnimplementedError):
                s.run(t.serialize_state())
            with pytest.raises(T.errors.UnimplementedError):
                s.run(t.restore_state(b""))
            s.run(r.reset())
            out.append(s.run(counts) + [_b(s.run(r.serialize_state()))])
            s.run(restore, {state: st})
            out.append(s.run(counts) + [_b(s.run(r.serialize_state()))])
            with pytest.raises(T.errors.InvalidArgumentError):
                s.run(restore, {state: b"\x08\xff"})                 # not a ReaderBaseState
            with pytest.raises(T.errors.InvalidArgumentError):
                s.run(restore, {state: b"\x08\x02\x10\x01"})         # more work started than finished
            out.append(s.run(counts))                                # a failed restore resets the reader
            s.run(restore, {state: st})
            out.append(_bs(s.run([k, v])))
            out.append(_b(s.run(r.serialize_state())))
            with pytest.raises(T.errors.OutOfRangeError):
                s.run(k)
    return out


def test_reset_and_serialize_state(text_files):
    a, c, b = text_files
    files = [a, c, b, b, a]
    got, want = _both(lambda T: _state_program(T, files))
    st1 = b"\x08\x01\x10\x01\x18\x01\x22" + bytes([len(a)]) + a.encode()   # TF's ReaderBaseState
    # the TextLineReader passes over the empty file to b; after its reset it takes the next b
    assert got == [[a.encode()] * 2, st1, f"{b}:1".encode(), f"{b}:1".encode(), 0,
                   [0, 0, b""], [1, 1, st1], [0, 0], [a.encode()] * 2,
                   b"\x08\x02\x10\x02\x18\x02\x22" + bytes([len(a)]) + a.encode()]
    if want is not None:
        assert want == got


def test_each_session_has_its_own_reader_state(text_files):
    a, _, b = text_files
    with tf.Graph().as_default():
        q = tf.FIFOQueue(10, tf.string, shared_name="files")
        k, _ = tf.TextLineReader().read(q)
        enq = q.enqueue_many([[a, b]])
        with tf.Session() as s1, tf.Session() as s2:
            s1.run(enq)
            s2.run(enq)
            assert [s1.run(k), s1.run(k), s2.run(k)] == [f"{a}:1".encode(), f"{a}:2".encode(), f"{a}:1".encode()]


def test_a_blocked_read_times_out_or_is_cancelled(text_files):
    with tf.Graph().as_default():
        q = tf.FIFOQueue(3, tf.string)
        r = tf.WholeFileReader()
        k, _ = r.read(q)
        with tf.Session(config=tf.ConfigProto(operation_timeout_in_ms=100)) as s:
            with pytest.raises(tf.errors.DeadlineExceededError):
                s.run(k)
        s = tf.Session()
        err = []

        def reader():
            try:
                s.run(k)
            except tf.errors.OpError as e:
                err.append(e)
        # two threads on one reader: one waits in the dequeue, the other for the reader
        ths = [threading.Thread(target=reader) for _ in range(2)]
        for th in ths:
            th.start()
        time.sleep(0.2)
        s.close()
        for th in ths:
            th.join(10)
            assert not th.is_alive()
        assert len(err) == 2 and all(isinstance(e, tf.errors.CancelledError) for e in err)


def test_graph_time_checks_and_no_gradients():
    with tf.Graph().as_default():
        r = tf.TextLineReader()
        with pytest.raises(tf.errors.InvalidArgumentError, match="single strings"):
            r.read(tf.FIFOQueue(3, tf.int32))
        with pytest.raises(tf.errors.InvalidArgumentError, match="single strings"):
            r.read(tf.FIFOQueue(3, [tf.string, tf.string]))
        with pytest.raises(tf.errors.InvalidArgumentError, match="not a queue handle"):
            r.read(tf.constant(["a"]))
        k, v = r.read(tf.FIFOQueue(3, tf.string))
        ks, vs = r.read_up_to(tf.FIFOQueue(3, tf.string), 4)
        assert k.shape.as_list() == [] and ks.shape.as_list() == [None] and vs.dtype == tf.string
        assert r.supports_serialize is False and tf.WholeFileReader().supports_serialize is True
        assert isinstance(r, tf.ReaderBase) and r.reader_ref.dtype == tf.resource
    for name in ("ReaderReadV2", "ReaderReadUpToV2", "TFRecordReaderV2", "DecodeRaw", "DecodeCompressed",
                 "ReaderResetV2", "ReaderRestoreStateV2"):
        assert get_op_def(name).differentiable is False


# -- a CIFAR-10-like pipeline ---------------------------------------------------------------------


def test_cifar_like_pipeline_end_to_end(tmp_path):
    """CIFAR-10's binary layout (a label byte, then 3x32x32 pixels, channels first) in two
    files, read by FixedLengthRecordReader, decoded by decode_raw, batched by shuffle_batch
    in two threads sharing the reader, until the epochs end."""
    rng = np.random.default_rng(0)
    labels = np.arange(20) % 10
    images = rng.integers(0, 256, size=(20, 3, 32, 32), dtype=np.uint8)
    files = []
    for f in range(2):
        path = tmp_path / f"data_batch_{f}.bin"
        rows = [np.concatenate([[labels[i]], images[i].reshape(-1)]).astype(np.uint8).tobytes()
                for i in range(f * 10, f * 10 + 10)]
        path.write_bytes(b"".join(rows))
        files.append(str(path))
    with tf.Graph().as_default():
        q = tf.train.string_input_producer(files, num_epochs=2, shuffle=False)
        _, value = tf.FixedLengthRecordReader(record_bytes=1 + 3 * 32 * 32).read(q)
        record = tf.decode_raw(value, tf.uint8)
        label = tf.cast(tf.slice(record, [0], [1]), tf.int32)
        image = tf.transpose(tf.reshape(tf.slice(record, [1], [3072]), [3, 32, 32]), [1, 2, 0])
        label.set_shape([1])
        image.set_shape([32, 32, 3])
        bx, by = tf.train.shuffle_batch([image, label], batch_size=6, num_threads=2, capacity=30,
                                        min_after_dequeue=10, seed=1, allow_smaller_final_batch=True)
        seen_x, seen_y = [], []
        with tf.Session() as s:
            s.run(tf.local_variables_initializer())
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(s, coord)
            try:
                while not coord.should_stop():
                    x, y = s.run([bx, by])
                    seen_x.append(x)
                    seen_y.append(y)
            except tf.errors.OutOfRangeError:
                pass
            finally:
                coord.request_stop()
                coord.join(threads, stop_grace_period_secs=5)
    x, y = np.concatenate(seen_x), np.concatenate(seen_y)[:, 0]
    assert x.shape == (40, 32, 32, 3) and x.dtype == np.uint8
    assert sorted(y.tolist()) == sorted(labels.tolist() * 2)
    hwc = images.transpose(0, 2, 3, 1)
    found = sorted(int(np.flatnonzero((hwc == img).all(axis=(1, 2, 3)))[0]) for img in x)
    assert found == sorted(list(range(20)) * 2)          # every image twice, each with its own label
    for img, lab in zip(x, y):
        assert labels[int(np.flatnonzero((hwc == img).all(axis=(1, 2, 3)))[0])] == lab


# -- decode_raw, decode_compressed ----------------------------------------------------------------


def _decode_program(T):
    raw = [b"\x01\x02\x03\x04\x00\x00\x80\x3f", b"\x05\x06\x07\x08\x00\x00\x00\xc0"]
    p = T.placeholder(T.string, [None])
    outs = [T.decode_raw(p, dt, little_endian=le) for dt in (T.uint8, T.int8, T.int16, T.uint16, T.int32,
                                                              T.float32, T.float16, T.int64, T.float64, T.bool)
            for le in (True, False)]
    outs.append(T.io.decode_raw(T.constant([[b"ab", b"cd"]]), T.uint8))
    outs.append(T.decode_raw(bytes=T.constant(b"\x00\x01"), out_type=T.int16))
    outs.append(T.decode_compressed([gzip.compress(b"hello") + gzip.compress(b"!"), gzip.compress(b"")], "GZIP"))
    outs.append(T.io.decode_compressed(zlib.compress(b"abc" * 10), compression_type="ZLIB"))
    outs.append(T.decode_compressed([b"as is"]))
    return outs, {p: raw}


def test_decode_raw_and_decode_compressed():
    with tf.Graph().as_default():
        outs, feed = _decode_program(tf)
        with tf.Session() as s:
            got = s.run(outs, feed)
        assert outs[0].shape.as_list() == [None, None]
    raw = feed[next(iter(feed))]
    buf = np.frombuffer(b"".join(raw), np.uint8).reshape(2, 8)
    i = 0
    for dt in (np.uint8, np.int8, np.int16, np.uint16, np.int32, np.float32, np.float16, np.int64, np.float64):
        for order in ("<", ">"):
            want = buf.view(np.dtype(dt).newbyteorder(order)).astype(dt)
            assert got[i].dtype == dt and np.array_equal(got[i], want, equal_nan=True), (dt, order)
            i += 1
    assert got[i].dtype == np.bool_ and np.array_equal(got[i], buf != 0)
    assert got[20].tolist() == [[[97, 98], [99, 100]]] and got[21].tolist() == [256]
    assert [_b(x) for x in got[22]] == [b"hello!", b""] and _b(got[23]) == b"abc" * 10
    assert [_b(x) for x in got[24]] == [b"as is"]
    T = None
    try:
        T = tensorflow_v1()
    except pytest.skip.Exception:
        pass
    if T is not None:
        with T.Graph().as_default():
            outs_tf, feed_tf = _decode_program(T)
            with T.Session() as s:
                want = s.run(outs_tf, feed_tf)
        for a, b in zip(got[:22], want[:22]):
            assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
        assert [_bs(a) for a in got[22:]] == [_bs(b) for b in want[22:]]


def test_decode_raw_errors():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.string)
        d16 = tf.decode_raw(p, tf.int16)
        f32 = tf.decode_raw(p, tf.float32)
        with tf.Session() as s:
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match="DecodeRaw requires input strings to all be the same size, but element 1 has "
                                     "size 4 != 2"):
                s.run(d16, {p: [b"\x01\x02\x03\x04", b"\x05\x06"]})
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match="length 3 that is not a multiple of 2, the size of int16"):
                s.run(d16, {p: [b"\x01\x02\x03"]})
            with pytest.raises(tf.errors.InvalidArgumentError, match="multiple of 4, the size of float"):
                s.run(f32, {p: b"abc"})
            assert s.run(d16, {p: np.zeros((0, 3), object)}).shape == (0, 3, 0)
            assert s.run(d16, {p: [[b"", b""]]}).shape == (1, 2, 0)
        with pytest.raises(TypeError, match="not in list of allowed values"):
            tf.decode_raw(p, tf.string)
        with pytest.raises(TypeError):
            tf.decode_raw(tf.constant([1, 2]), tf.int32)
        with pytest.raises(tf.errors.InvalidArgumentError, match="ZLIB, GZIP"):
            tf.decode_compressed(p, "BZ2")
        bad = tf.decode_compressed(p, "ZLIB")
        with tf.Session() as s:
            with pytest.raises(tf.errors.DataLossError, match="not valid ZLIB"):
                s.run(bad, {p: [b"hello"]})
