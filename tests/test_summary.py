"""tf.summary: summary ops' serialized protos, FileWriter's TensorBoard event files.

The event files are checked by a decoder written here from the formats' definitions
(TFRecord framing with a bitwise CRC-32C, protobuf wire format), independent of collflow's
encoder; when the tensorboard package is installed, TensorBoard's own reader must find the
same values.
"""
import os
import re
import struct
import sys
import types
import zlib

import numpy as np
import pytest

import collflow as cf
from collflow.platform import tfrecord as records
from collflow.summary.summary_ops import histogram_proto, to_uint8_image
from crc_reference import crc32c_bitwise, masked  # noqa: E402


# -- an independent reader ------------------------------------------------------------------------------

def read_tfrecords(path):
    out = []
    with open(path, "rb") as f:
        blob = f.read()
    pos = 0
    while pos < len(blob):
        header = blob[pos:pos + 8]
        (n,) = struct.unpack("<Q", header)
        assert struct.unpack("<I", blob[pos + 8:pos + 12])[0] == masked(header)
        data = blob[pos + 12:pos + 12 + n]
        assert struct.unpack("<I", blob[pos + 12 + n:pos + 16 + n])[0] == masked(data)
        out.append(data)
        pos += 16 + n
    assert pos == len(blob)
    return out


def varint(buf, pos):
    shift = val = 0
    while True:
        b = buf[pos]
        pos += 1
        val |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return val, pos


def fields(buf):
    """{field number: [raw values]} of a protobuf message."""
    out, pos = {}, 0
    while pos < len(buf):
        key, pos = varint(buf, pos)
        num, wire = key >> 3, key & 7
        if wire == 0:
            v, pos = varint(buf, pos)
        elif wire == 1:
            v, pos = buf[pos:pos + 8], pos + 8
        elif wire == 5:
            v, pos = buf[pos:pos + 4], pos + 4
        else:
            n, pos = varint(buf, pos)
            v, pos = buf[pos:pos + n], pos + n
        out.setdefault(num, []).append(v)
    return out


def decode_event(data):
    """(wall_time, step, what, payload) with Event's field numbers: 1 wall_time, 2 step,
    3 file_version, 4 graph_def, 5 summary, 7 session_log."""
    f = fields(data)
    wall = struct.unpack("<d", f[1][0])[0]
    step = f.get(2, [0])[0]
    for num, what in ((3, "file_version"), (4, "graph_def"), (5, "summary"), (7, "session_log")):
        if num in f:
            return wall, step, what, f[num][0]
    raise AssertionError("event without payload")


def summary_values(data):
    """[(tag, {field: raw})] of a Summary (value = 1; Value: tag = 1, simple_value = 2,
    image = 4, histo = 5, tensor = 8, metadata = 9)."""
    return [(fields(v)[1][0].decode(), fields(v)) for v in fields(data).get(1, [])]


def event_files(d):
    return [os.path.join(d, n) for n in os.listdir(d) if "tfevents" in n]


# -- CRC and framing ------------------------------------------------------------------------------------------

def test_crc32c_matches_the_standard_check_values():
    assert records.crc32c(b"123456789") == 0xE3069283
    assert records.crc32c(bytes(32)) == 0x8A9136AA          # RFC 3720 B.4 vectors
    assert records.crc32c(b"\xff" * 32) == 0x62A8AB43
    assert records.crc32c(bytes(range(32))) == 0x46DD794E
    blob = bytes(range(256)) * 3
    assert records.crc32c(blob) == crc32c_bitwise(blob)
    assert records.masked_crc32c(blob) == masked(blob)


def test_record_framing_roundtrips_and_detects_corruption(tmp_path):
    # written by tensorboardX (FileWriter's framing), read by this file's decoder and by platform/tfrecord.py
    from tensorboardX.record_writer import RecordWriter
    p = tmp_path / "r"
    w = RecordWriter(str(p))
    w.write(b"abc")
    w.write(b"")
    w.close()
    assert read_tfrecords(str(p)) == [b"abc", b""]
    with open(p, "rb") as f:
        assert list(records.read_records(f)) == [b"abc", b""]
    raw = bytearray(p.read_bytes())
    raw[12] ^= 1
    p.write_bytes(bytes(raw))
    with open(p, "rb") as f, pytest.raises(cf.errors.DataLossError, match="data CRC mismatch"):
        list(records.read_records(f, str(p)))


# -- summary ops ---------------------------------------------------------------------------------------------

def _graph_with_summaries():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (None,), name="x")
        cf.summary.scalar("loss", cf.reduce_mean(x))
        cf.summary.histogram("values", x)
        cf.summary.image("img", cf.reshape(x, (1, 2, 2, 1)), max_outputs=1)
        cf.summary.text("note", cf.constant(["hello", "wörld"]))
        merged = cf.summary.merge_all()
    return g, x, merged


def test_tags_follow_name_scopes_uniquification_and_family():
    g = cf.Graph()
    with g.as_default():
        a = cf.summary.scalar("loss", 1.0)
        b = cf.summary.scalar("loss", 2.0)
        with cf.name_scope("train"):
            c = cf.summary.scalar("loss", 3.0)
            d = cf.summary.scalar("acc", 4.0, family="metrics")
        e = cf.summary.scalar("bad name!", 5.0)
    assert [t.op.get_attr("tag") for t in (a, b, c, d, e)] == [
        "loss", "loss_1", "train/loss", "metrics/train/metrics/acc", "bad_name_"]
    assert a.dtype == cf.string and a.shape.rank == 0
    assert g.get_collection(cf.GraphKeys.SUMMARIES) == [a, b, c, d, e]


def test_summary_op_values_decode_to_the_protos():
    g, x, merged = _graph_with_summaries()
    vals = np.array([1.0, 2.0, 3.0, -4.0], np.float32)
    with cf.Session(graph=g) as s:
        out = s.run(merged, {x: vals})
    assert isinstance(out, bytes)
    got = dict(summary_values(out))
    assert list(got) == ["loss", "values", "img/image", "note"]
    assert struct.unpack("<f", got["loss"][2][0])[0] == 0.5
    histo = fields(got["values"][5][0])
    assert [struct.unpack("<d", histo[k][0])[0] for k in (1, 2, 3, 4, 5)] == [-4.0, 3.0, 4.0, 2.0, 30.0]
    image = fields(got["img/image"][4][0])
    assert (image[1][0], image[2][0], image[3][0]) == (2, 2, 1)  # height, width, colorspace
    assert image[4][0].startswith(b"\x89PNG\r\n\x1a\n")
    tensor = fields(got["note"][8][0])
    assert tensor[1][0] == 7 and tensor[8] == [b"hello", "wörld".encode()]  # DT_STRING, string_val
    plugin = fields(fields(got["note"][9][0])[1][0])
    assert plugin[1][0] == b"text"


def test_scalar_zero_is_written():
    g = cf.Graph()
    with g.as_default():
        s0 = cf.summary.scalar("z", 0.0)
    with cf.Session(graph=g) as s:
        (tag, f), = summary_values(s.run(s0))
    assert tag == "z" and struct.unpack("<f", f[2][0])[0] == 0.0


def test_histogram_buckets_follow_tensorflows_layout():
    v = np.array([0.5, 0.5, 2.0, -3.0, 0.0, 1e-13])
    h = histogram_proto(v)
    assert (h.min, h.max, h.num, h.sum) == (-3.0, 2.0, 6.0, v.sum())
    assert h.sum_squares == pytest.approx(float(v @ v))
    counts = np.array(h.bucket)
    assert counts.sum() == 6
    limits = np.array(h.bucket_limit)
    assert np.all(np.diff(limits) > 0)
    # each non-empty entry [prev limit, limit) holds exactly the values in it
    for i in np.flatnonzero(counts):
        lo = limits[i - 1] if i else -np.inf
        assert counts[i] == np.sum((v >= lo) & (v < limits[i]))
    # 0.0 has its own bucket [-1e-12, 0) ... [0, 1e-12): the value 0.0 lies in [0, 1e-12)
    assert 1e-12 in limits
    empty = histogram_proto(np.zeros(0))
    assert empty.bucket == [0.0] and empty.bucket_limit == [np.finfo(np.float64).max]


def test_histogram_of_nan_is_an_error_naming_the_tag():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (2,))
        h = cf.summary.histogram("weights", x)
    with cf.Session(graph=g) as s:
        with pytest.raises(cf.errors.InvalidArgumentError, match="Nan in summary histogram for: weights"):
            s.run(h, {x: [1.0, np.nan]})
        with pytest.raises(cf.errors.InvalidArgumentError, match="Infinity in summary histogram for: weights"):
            s.run(h, {x: [1.0, np.inf]})


def test_float_images_are_rescaled_as_tensorflow_does():
    pos = np.array([0.0, 0.5, 1.0, 2.0], np.float32).reshape(2, 2, 1)
    assert to_uint8_image(pos).ravel().tolist() == [0, 63, 127, 255]          # 255 / max
    mixed = np.array([-2.0, 0.0, 1.0, 2.0], np.float32).reshape(2, 2, 1)
    assert to_uint8_image(mixed).ravel().tolist() == [1, 128, 191, 255]       # 128 + 127 / max|x|
    bad = np.array([[[0.0, 0.0, 1.0], [np.nan, 0.0, 0.0]]], np.float32)
    assert to_uint8_image(bad).reshape(-1, 3).tolist() == [[0, 0, 255], [255, 0, 0]]  # red for non-finite


def _decode_png(data):
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        assert struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])[0] == zlib.crc32(kind + body)
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, color = ihdr[:4]
    channels = {0: 1, 2: 3, 6: 4}[color]
    rows = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, 1 + w * channels)
    assert np.all(rows[:, 0] == 0)  # filter type None
    return rows[:, 1:].reshape(h, w, channels)


def test_image_summary_encodes_pngs_with_tensorflows_tags():
    imgs = np.random.default_rng(0).integers(0, 256, (3, 4, 5, 3), dtype=np.uint8)
    g = cf.Graph()
    with g.as_default():
        s2 = cf.summary.image("pics", cf.constant(imgs), max_outputs=2)
        bad = cf.placeholder(cf.float32, (1, 2, 2, 2))
    with pytest.raises(cf.errors.InvalidArgumentError, match="1, 3 or 4 channels"):
        with g.as_default():
            cf.summary.image("two_channels", bad)
    with cf.Session(graph=g) as s:
        vals = summary_values(s.run(s2))
    assert [t for t, _ in vals] == ["pics/image/0", "pics/image/1"]
    for i, (_, f) in enumerate(vals):
        np.testing.assert_array_equal(_decode_png(fields(f[4][0])[4][0]), imgs[i])


def test_merge_rejects_duplicate_tags_and_merge_all_of_nothing_is_none():
    g = cf.Graph()
    with g.as_default():
        assert cf.summary.merge_all() is None
        a = cf.summary.scalar("a", 1.0, collections=[])
        m = cf.summary.merge([a, a])
        with pytest.raises(cf.errors.InvalidArgumentError, match="needs a scalar"):
            cf.summary.scalar("v", cf.constant([1.0, 2.0]))
    assert g.get_collection(cf.GraphKeys.SUMMARIES) == []
    with cf.Session(graph=g) as s:
        with pytest.raises(cf.errors.InvalidArgumentError, match="Duplicate tag a found in summary inputs"):
            s.run(m)


# -- FileWriter ----------------------------------------------------------------------------------------------

def test_file_writer_writes_a_real_event_file(tmp_path):
    g, x, merged = _graph_with_summaries()
    w = cf.summary.FileWriter(str(tmp_path), graph=g)
    with cf.Session(graph=g) as s:
        for step in range(3):
            w.add_summary(s.run(merged, {x: np.array([1, 2, 3, step], np.float32)}), global_step=step)
    w.add_summary(cf.Summary(value=[cf.Summary.Value(tag="manual", simple_value=7.5)]), 10)
    w.add_session_log(cf.SessionLog(status=cf.SessionLog.CHECKPOINT, checkpoint_path="x.h5"), 11)
    w.close()
    (path,) = event_files(str(tmp_path))
    assert re.fullmatch(r"events\.out\.tfevents\.\d{10}\.[^/]+", os.path.basename(path))
    events = [decode_event(r) for r in read_tfrecords(path)]
    assert events[0][2:] == ("file_version", b"brain.Event:2")
    assert events[1][2] == "graph_def"
    nodes = [fields(n) for n in fields(events[1][3])[1]]
    by_name = {n[1][0].decode(): n for n in nodes}
    assert by_name["loss"][2][0] == b"ScalarSummary" and by_name["loss"][3] == [b"Mean"]
    losses = [(step, struct.unpack("<f", dict(summary_values(p))["loss"][2][0])[0])
              for _, step, what, p in events if what == "summary" and "loss" in dict(summary_values(p))]
    assert losses == [(0, 1.5), (1, 1.75), (2, 2.0)]
    assert events[-2][1:3] == (10, "summary")
    assert events[-1][1:3] == (11, "session_log") and fields(events[-1][3])[1] == [3]
    assert all(abs(e[0] - events[0][0]) < 60 for e in events)


def test_file_writer_flushes_closes_and_reopens(tmp_path):
    w = cf.summary.FileWriter(str(tmp_path / "run"), max_queue=1)
    w.add_summary(cf.Summary(value=[cf.Summary.Value(tag="a", simple_value=1.0)]), 1)
    # max_queue=1: on disk before close
    assert [decode_event(r)[2] for r in read_tfrecords(w.path)] == ["file_version", "summary"]
    first = w.path
    w.close()
    w.add_summary(cf.Summary(value=[cf.Summary.Value(tag="a", simple_value=2.0)]), 2)  # logged, ignored
    assert len(read_tfrecords(first)) == 2
    w.reopen()
    assert w.path != first and len(event_files(str(tmp_path / "run"))) == 2
    w.close()
    with pytest.raises(TypeError, match="add_summary takes"):
        w.add_summary(3.0)


def test_summary_iterator_reads_back_events(tmp_path):
    with cf.summary.FileWriter(str(tmp_path)) as w:
        w.add_summary(cf.Summary(value=[cf.Summary.Value(tag="q", simple_value=-1.25)]), 4)
    (path,) = event_files(str(tmp_path))
    evs = list(cf.train.summary_iterator(path))
    assert evs[0].file_version == "brain.Event:2"
    assert evs[1].step == 4 and evs[1].summary.value[0].tag == "q" and evs[1].summary.value[0].simple_value == -1.25


def test_tensorboard_reads_the_event_file(tmp_path, monkeypatch):
    # TensorBoard's own pure-Python reader (its TensorFlow stub), never a TensorFlow install
    monkeypatch.setitem(sys.modules, "tensorboard.compat.notf", types.ModuleType("tensorboard.compat.notf"))
    ea = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    g, x, merged = _graph_with_summaries()
    with cf.summary.FileWriter(str(tmp_path), graph=g) as w, cf.Session(graph=g) as s:
        for step in range(3):
            w.add_summary(s.run(merged, {x: np.array([1, 2, 3, step], np.float32)}), step)
    acc = ea.EventAccumulator(str(tmp_path), size_guidance={ea.TENSORS: 0, ea.HISTOGRAMS: 0, ea.IMAGES: 0})
    acc.Reload()
    assert [(e.step, e.value) for e in acc.Scalars("loss")] == [(0, 1.5), (1, 1.75), (2, 2.0)]
    assert acc.Histograms("values")[2].histogram_value.num == 4
    assert acc.Images("img/image")[0].width == 2
    assert list(acc.Tensors("note")[0].tensor_proto.string_val) == [b"hello", "wörld".encode()]
    assert {n.name for n in acc.Graph().node} >= {"x", "loss", "values", "img", "note"}
