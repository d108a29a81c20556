"""Checkpoints: the HDF5 file, Saver, CheckpointManager, exact resume, damage, kill -9, SIGTERM, graph ops."""
from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time

import h5py
import numpy as np
import pytest

import collflow as cf
from collflow.data import BatchIterator
from collflow.graph.ops import io_ops
from collflow.kernels.resources import LiveSnapshot, VariableState
from collflow.train import checkpoint_io as cio
from collflow.train import checkpoint_storage as cst
from collflow.train import checkpoint_manager as cm_mod
from collflow.train.checkpoint_manager import CheckpointManager
from collflow.train.saver import Saver, latest_checkpoint

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# -- a small model: Adam, dropout, a global step, shuffled batches ------------------------------------

def build_model(seed: int = 7):
    g = cf.Graph()
    with g.as_default():
        cf.set_random_seed(seed)
        x = cf.placeholder(cf.float32, (None, 6), name="x")
        y = cf.placeholder(cf.int32, (None,), name="y")
        w1 = cf.Variable(cf.random_normal((6, 16), stddev=0.4), name="dense/kernel")
        b1 = cf.Variable(cf.zeros((16,)), name="dense/bias")
        h = cf.nn.dropout(cf.nn.relu(cf.matmul(x, w1) + b1), rate=0.25)
        w2 = cf.Variable(cf.random_normal((16, 3), stddev=0.4), name="out/kernel")
        logits = cf.matmul(h, w2)
        loss = cf.reduce_mean(cf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        gs = cf.train.get_or_create_global_step()
        train = cf.train.AdamOptimizer(0.02).minimize(loss, global_step=gs)
        init = cf.global_variables_initializer()
    return dict(g=g, x=x, y=y, loss=loss, train=train, init=init, gs=gs)


def data(n: int = 40):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, 6)).astype(np.float32)
    Y = (X[:, 0] > 0).astype(np.int32) + (X[:, 1] > 0.5).astype(np.int32)
    return X, Y


def all_values(sess, g) -> dict:
    return {v.op.name: sess.run(v) for v in g.get_collection(cf.GraphKeys.GLOBAL_VARIABLES)}


def train_steps(m, sess, it, n):
    losses = []
    for _ in range(n):
        xb, yb = next(it)
        l, _ = sess.run([m["loss"], m["train"]], {m["x"]: xb, m["y"]: yb})
        losses.append(float(l))
    return losses


# -- the file ----------------------------------------------------------------------------------------


def test_roundtrip_every_dtype_and_nested_names(tmp_path):
    g = cf.Graph()
    vals = {
        "a": np.arange(12, dtype=np.float32).reshape(3, 4),
        "a/b": np.array([1.5, -2.5], dtype=np.float64),       # a slot-like name under another variable
        "a/b/Adam_1": np.array([[1, 2]], dtype=np.int32),
        "step": np.array(41, dtype=np.int64),                  # 0-d
        "flags": np.array([True, False, True]),
        "half": np.array([0.5, 2.0], dtype=np.float16),
        "bytes": np.array([255, 0], dtype=np.uint8),
        "empty": np.zeros((0, 5), dtype=np.float32),
        "odd.name.": np.array([3.0], dtype=np.float32),        # TF1 rejects '%' (not a valid node name)
    }
    with g.as_default():
        vs = {k: cf.Variable(np.zeros_like(v), name=k) for k, v in vals.items()}
    assert sorted(v.op.name for v in vs.values()) == sorted(vals)
    with cf.Session(graph=g) as s:
        for k, v in vs.items():
            v.load(vals[k], s)
        prefix = Saver().save(s, str(tmp_path / "model"), global_step=41)
    # TensorFlow's convention: save() returns the prefix; the data is in <prefix>.h5
    assert prefix == str(tmp_path / "model-41")
    path = prefix + ".h5"
    with cf.Session(graph=g) as s:
        res = Saver().restore(s, path)
        assert sorted(res.restored) == sorted(vals)
        for k, v in vs.items():
            got = s.run(v)
            assert got.dtype == vals[k].dtype and got.shape == vals[k].shape and np.array_equal(got, vals[k]), k
    # plain numeric HDF5: every dataset numeric, nothing pickled or opaque
    with h5py.File(path, "r") as f:
        kinds = []
        f.visititems(lambda n, o: kinds.append(o.dtype.kind) if isinstance(o, h5py.Dataset) else None)
        assert set(kinds) <= set("biuf")
        assert f.attrs["format"] == "collflow.checkpoint" and int(f.attrs["global_step"]) == 41


def test_file_holds_step_rng_pipeline_world_size_fingerprint_version(tmp_path):
    m = build_model()
    X, Y = data()
    it = BatchIterator(X, Y, 8, seed=3, num_epochs=None)
    with cf.Session(graph=m["g"]) as s:
        s.run(m["init"])
        train_steps(m, s, it, 3)
        path = Saver(world_size=4, rank=0).save(s, str(tmp_path / "ckpt"), global_step=m["gs"],
                                                pipeline=it.state_dict()) + ".h5"
        fp = m["g"].fingerprint()
        rng_state = s.resources.rng["dropout/mask"].get_state()
    with h5py.File(path, "r") as f:
        a = f.attrs
        assert int(a["global_step"]) == 3 and int(a["world_size"]) == 4
        assert a["graph_fingerprint"] == fp and a["collflow_version"] == cf.__version__
        names = {ds.attrs["name"] for ds in f["variables"].values()}
        # variables, Adam's slots and beta powers, the global step
        assert {"dense/kernel", "dense/kernel/Adam", "dense/kernel/Adam_1", "beta1_power", "global_step"} <= names
        assert dict(f["pipeline"].attrs) == {k: v for k, v in it.state_dict().items()}
        assert "dropout%2Fmask" in f["rng"]
    back = cio.read_checkpoint(path)
    assert back.rng["dropout/mask"] == rng_state
    assert back.pipeline["epoch"] == it.epoch and back.pipeline["offset"] == it.offset


def test_index_is_json_newest_last_and_latest_checkpoint(tmp_path):
    m = build_model()
    with cf.Session(graph=m["g"]) as s:
        s.run(m["init"])
        sv = Saver(max_to_keep=2)
        for step in (1, 2, 3):
            sv.save(s, str(tmp_path / "model"), global_step=step)
    doc = json.loads((tmp_path / "checkpoint.json").read_text())
    assert [e["path"] for e in doc["checkpoints"]] == ["model-2.h5", "model-3.h5"] and doc["latest"] == "model-3.h5"
    assert not (tmp_path / "model-1.h5").exists()
    assert latest_checkpoint(str(tmp_path)) == str(tmp_path / "model-3")  # a prefix, as in TensorFlow
    assert sv.last_checkpoints == [str(tmp_path / "model-2"), str(tmp_path / "model-3")]  # prefixes, as TF1
    assert latest_checkpoint(str(tmp_path / "nothing-here")) is None


# -- exact resume --------------------------------------------------------------------------------------


@pytest.mark.parametrize("async_save", [False, True])
def test_exact_resume_is_bit_identical(tmp_path, async_save):
    K, j = 14, 6
    X, Y = data()
    m = build_model()
    with cf.Session(graph=m["g"]) as s:
        s.run(m["init"])
        it = BatchIterator(X, Y, 8, seed=5, num_epochs=None)
        straight_losses = train_steps(m, s, it, K)
        straight = all_values(s, m["g"])

    m = build_model()
    with cf.Session(graph=m["g"]) as s:
        ck = CheckpointManager(str(tmp_path), checkpoint_every_steps=3, async_save=async_save)
        assert ck.restore_or_initialize(s, m["init"]) is None
        it = BatchIterator(X, Y, 8, seed=5, num_epochs=None)
        first = []
        for step in range(1, j + 1):
            first += train_steps(m, s, it, 1)
            ck.maybe_save(s, step, it.state_dict)
        # keep going past the checkpoint and then "crash": these steps must not matter
        train_steps(m, s, it, 2)
        ck.close()
    assert first == straight_losses[:j]
    assert [os.path.basename(p) for p in ck.checkpoints] == ["ckpt-3.h5", "ckpt-6.h5"]

    m = build_model()  # a new process would build the same graph again
    with cf.Session(graph=m["g"]) as s:
        ck = CheckpointManager(str(tmp_path), checkpoint_every_steps=3, async_save=async_save)
        res = ck.restore_or_initialize(s, m["init"])
        assert res.global_step == j and int(s.run(m["gs"])) == j
        assert set(res.rng_restored) >= {"dropout/mask"}
        it = BatchIterator(X, Y, 8, seed=5, num_epochs=None)
        it.load_state_dict(res.pipeline)
        rest = train_steps(m, s, it, K - j)
        resumed = all_values(s, m["g"])
        ck.close()
    assert rest == straight_losses[j:]
    assert resumed.keys() == straight.keys()
    for k in straight:
        assert resumed[k].dtype == straight[k].dtype and np.array_equal(resumed[k], straight[k]), k


def test_random_streams_continue_after_restore(tmp_path):
    def build():
        g = cf.Graph()
        with g.as_default():
            r = cf.random_uniform((5,), seed=11, name="noise")
            v = cf.Variable(cf.zeros((1,)), name="v")
        return g, r, v
    g, r, v = build()
    with cf.Session(graph=g) as s:
        s.run(v.initializer)
        s.run(r)
        path = Saver([v]).save(s, str(tmp_path / "r.h5"))
        want = [s.run(r) for _ in range(3)]
    g, r, v = build()
    with cf.Session(graph=g) as s:
        Saver([v]).restore(s, path)
        assert all(np.array_equal(s.run(r), w) for w in want)


# -- validation ------------------------------------------------------------------------------------------


def _graph(specs):
    g = cf.Graph()
    with g.as_default():
        vs = [cf.Variable(np.zeros(shape, dtype=dt), name=n) for n, dt, shape in specs]
    return g, vs


def test_strict_restore_lists_every_problem_in_one_error(tmp_path):
    g, vs = _graph([("w", np.float32, (3, 4)), ("b", np.float32, (4,)), ("c", np.float32, (2,)),
                    ("ok", np.float32, (2,))])
    with cf.Session(graph=g) as s:
        s.run([v.initializer for v in vs])
        path = Saver().save(s, str(tmp_path / "m.h5"))
    g2, vs2 = _graph([("w", np.float32, (3, 5)), ("b", np.float64, (4,)), ("d", np.float32, (1,)),
                      ("ok", np.float32, (2,))])
    with cf.Session(graph=g2) as s:
        with pytest.raises(cf.InvalidArgumentError) as ei:
            Saver().restore(s, path)
        msg = str(ei.value)
        assert path in msg and "4 problems" in msg
        assert "missing from the checkpoint (1): d" in msg
        assert "not in the graph (1): c" in msg
        assert "w: checkpoint float32[3, 4], graph float32[3, 5]" in msg
        assert "b: checkpoint float32[4], graph float64[4]" in msg
        assert "strict=False" in msg
        # nothing was restored
        assert s.resources.variables.get("ok") is None or s.resources.variables["ok"].value is None


def test_names_only_problems_are_not_found_errors(tmp_path):
    g, vs = _graph([("w", np.float32, (2,))])
    with cf.Session(graph=g) as s:
        s.run(vs[0].initializer)
        path = Saver().save(s, str(tmp_path / "m.h5"))
    g2, _ = _graph([("w", np.float32, (2,)), ("extra", np.float32, (2,))])
    with cf.Session(graph=g2) as s, pytest.raises(cf.NotFoundError, match="missing from the checkpoint"):
        Saver().restore(s, path)
    with cf.Session(graph=g2) as s, pytest.raises(cf.NotFoundError, match="does not exist"):
        Saver().restore(s, str(tmp_path / "absent.h5"))


def test_non_strict_restores_what_matches_and_reports_the_rest(tmp_path, caplog):
    g, vs = _graph([("w", np.float32, (2,)), ("b", np.float32, (3,)), ("gone", np.float32, (1,))])
    with cf.Session(graph=g) as s:
        for v in vs:
            v.load(np.full(v.shape.as_list(), 2.0, np.float32), s)
        path = Saver().save(s, str(tmp_path / "m.h5"))
    g2, (w, b, new) = _graph([("w", np.float32, (2,)), ("b", np.float32, (4,)), ("new", np.float32, (1,))])
    with cf.Session(graph=g2) as s, caplog.at_level(logging.WARNING, "collflow.checkpoint"):
        res = Saver().restore(s, path, strict=False)
        assert res.restored == ["w"] and res.missing == ["new"] and res.unexpected == ["gone"]
        assert len(res.mismatched) == 1 and res.mismatched[0].startswith("b:")
        assert np.array_equal(s.run(w), [2.0, 2.0])
    assert "skipped" in caplog.text and "new (missing from the checkpoint)" in caplog.text


def test_restore_or_initialize_initializes_what_a_lenient_restore_skipped(tmp_path):
    g, vs = _graph([("w", np.float32, (2,))])
    with cf.Session(graph=g) as s:
        vs[0].load(np.ones(2, np.float32), s)
        CheckpointManager(str(tmp_path)).save(s, 1)
    g2, (w, extra) = _graph([("w", np.float32, (2,)), ("extra", np.float32, (2,))])
    with cf.Session(graph=g2) as s:
        res = CheckpointManager(str(tmp_path)).restore_or_initialize(s, strict=False)
        assert res.missing == ["extra"]
        assert np.array_equal(s.run(w), [1, 1]) and np.array_equal(s.run(extra), [0, 0])


def test_saving_uninitialized_variables_names_them(tmp_path):
    g, vs = _graph([("w", np.float32, (2,)), ("u", np.float32, (2,))])
    with cf.Session(graph=g) as s:
        s.run(vs[0].initializer)
        with pytest.raises(cf.FailedPreconditionError, match="not initialized: u"):
            Saver().save(s, str(tmp_path / "m.h5"))
    assert os.listdir(tmp_path) == []


# -- damaged checkpoints ---------------------------------------------------------------------------------


def _truncate(p):
    with open(p, "r+b") as f:
        f.truncate(os.path.getsize(p) // 2)


def _flip_data_byte(p):
    with cio.CheckpointReader(p) as r:
        off = r.entries["w"].offset
    with open(p, "r+b") as f:
        f.seek(off + 5)
        b = f.read(1)
        f.seek(off + 5)
        f.write(bytes([b[0] ^ 0x40]))


def _garbage(p):
    with open(p, "wb") as f:
        f.write(b"not a checkpoint" * 100)


def _empty(p):
    open(p, "wb").close()


@pytest.mark.parametrize("damage, reason", [(_truncate, "truncated"), (_flip_data_byte, "checksum"),
                                            (_garbage, "not a readable HDF5"), (_empty, "not a readable HDF5")])
def test_damaged_latest_is_reported_and_the_previous_one_used(tmp_path, caplog, damage, reason):
    g, (w,) = _graph([("w", np.float32, (1000,))])
    with cf.Session(graph=g) as s:
        ck = CheckpointManager(str(tmp_path))
        for step in (1, 2):
            w.load(np.full(1000, step, np.float32), s)
            ck.save(s, step)
    damage(str(tmp_path / "ckpt-2.h5"))
    with cf.Session(graph=g) as s, caplog.at_level(logging.WARNING, "collflow.checkpoint"):
        res = CheckpointManager(str(tmp_path)).restore(s)
        assert res.global_step == 1 and np.all(s.run(w) == 1)
    assert "ckpt-2.h5" in caplog.text and reason in caplog.text


def test_every_checkpoint_damaged_is_an_error(tmp_path):
    g, (w,) = _graph([("w", np.float32, (10,))])
    with cf.Session(graph=g) as s:
        s.run(w.initializer)
        CheckpointManager(str(tmp_path)).save(s, 1)
    _garbage(str(tmp_path / "ckpt-1.h5"))
    with cf.Session(graph=g) as s, pytest.raises(cio.DataLossError, match="no usable checkpoint"):
        CheckpointManager(str(tmp_path)).restore(s)


def test_unindexed_checkpoint_is_found_and_tmp_files_are_ignored_and_removed(tmp_path):
    g, (w,) = _graph([("w", np.float32, (3,))])
    with cf.Session(graph=g) as s:
        ck = CheckpointManager(str(tmp_path))
        w.load(np.full(3, 1, np.float32), s)
        ck.save(s, 1)
        # a crash between the rename of ckpt-2 and the index update leaves it unlisted
        w.load(np.full(3, 2, np.float32), s)
        Saver([w]).save(s, str(tmp_path / "ckpt"), global_step=2, write_state=False)
        (tmp_path / "ckpt-3.h5.tmp").write_bytes(b"partial")
    with cf.Session(graph=g) as s:
        ck = CheckpointManager(str(tmp_path))
        assert not (tmp_path / "ckpt-3.h5.tmp").exists()
        assert ck.restore(s).global_step == 2 and np.all(s.run(w) == 2)


# -- retention and cadence -------------------------------------------------------------------------------


def test_max_to_keep_and_keep_every_n_hours(tmp_path, monkeypatch):
    clock = [1_000_000.0]
    monkeypatch.setattr(cm_mod, "_wall_time", lambda: clock[0])
    g, (w,) = _graph([("w", np.float32, (2,))])
    with cf.Session(graph=g) as s:
        s.run(w.initializer)
        ck = CheckpointManager(str(tmp_path), max_to_keep=2, keep_every_n_hours=1.0)
        for step in range(1, 10):
            clock[0] += 1500.0  # 25 minutes a checkpoint
            ck.save(s, step)
        ck.close()  # old files are deleted in the background
    names = sorted(p for p in os.listdir(tmp_path) if p.endswith(".h5"))
    # the newest two, plus for good the first to fall out of them at least an hour after the
    # last one kept that way: step 3 (75 min after the start), then step 6 (75 min after step 3)
    assert names == ["ckpt-3.h5", "ckpt-6.h5", "ckpt-8.h5", "ckpt-9.h5"]
    doc = json.loads((tmp_path / "checkpoint.json").read_text())
    assert [(e["path"], e["keep"]) for e in doc["checkpoints"]] == [
        ("ckpt-3.h5", True), ("ckpt-6.h5", True), ("ckpt-8.h5", False), ("ckpt-9.h5", False)]


def test_should_save_by_steps_and_seconds(tmp_path, monkeypatch):
    t = [100.0]
    monkeypatch.setattr(cm_mod, "_monotonic", lambda: t[0])
    ck = CheckpointManager(str(tmp_path), checkpoint_every_steps=5)
    assert [s for s in range(1, 13) if ck.should_save(s) and not setattr(ck, "_last_save_step", s)] == [5, 10]
    ck = CheckpointManager(str(tmp_path), checkpoint_every_secs=60)
    assert not ck.should_save(1)
    t[0] += 61
    assert ck.should_save(2)
    with pytest.raises(cf.InvalidArgumentError):
        CheckpointManager(str(tmp_path), checkpoint_every_steps=0)


# -- asynchronous saves ------------------------------------------------------------------------------------


def test_async_save_returns_at_once_and_writes_the_snapshot(tmp_path, monkeypatch):
    gate = __import__("threading").Event()
    real = cst._pwrite_all

    def slow(fd, buf, off):
        gate.wait(10)
        real(fd, buf, off)
    monkeypatch.setattr(cst, "_pwrite_all", slow)
    g = cf.Graph()
    with g.as_default():
        w = cf.Variable(np.zeros(4096, np.float32), name="w")
        bump = cf.assign_add(w, np.ones(4096, np.float32))
    with cf.Session(graph=g) as s:
        s.run(w.initializer)
        s.run(bump)
        ck = CheckpointManager(str(tmp_path), async_save=True)
        t0 = time.perf_counter()
        path = ck.save(s, 1)
        assert time.perf_counter() - t0 < 5 and ck.save_in_flight
        assert not os.path.exists(path)
        for _ in range(3):  # training goes on while the write is held up
            s.run(bump)
        gate.set()
        ck.wait()
        assert not ck.save_in_flight
    assert np.all(cio.read_checkpoint(path).variables["w"] == 1.0)


def test_async_save_error_is_raised_on_the_training_thread(tmp_path, monkeypatch):
    def boom(*a, **k):
        raise OSError("disk full")
    g, (w,) = _graph([("w", np.float32, (2,))])
    with cf.Session(graph=g) as s:
        s.run(w.initializer)
        ck = CheckpointManager(str(tmp_path), async_save=True)
        monkeypatch.setattr(cio, "write_checkpoint", boom)
        ck.save(s, 1)
        with pytest.raises(OSError, match="disk full"):
            ck.wait()
        ck.wait()  # reported once


# -- zero-copy snapshots of asynchronous saves ------------------------------------------------------------------


def test_running_checksum_equals_the_checksum_of_the_whole_buffer():
    data = np.random.default_rng(3).integers(0, 256, 3 * 4096 + 1234, dtype=np.uint8)
    whole = cio.checksum(memoryview(data))
    for cuts in ([], [1], [4095, 4096, 4097], [10, 5000, 9000, 13000], list(range(0, data.size, 777))):
        r = cst._RunningChecksum()
        for a, b in zip([0] + cuts, cuts + [data.size]):
            r.update(memoryview(data[a:b]))
        assert r.digest() == whole, cuts


def _state(a):
    st = VariableState("t", cf.float32, None)
    st.value = a
    return st


def _update_rows(st, rows, delta, sorted_unique=False):
    with st.lock:
        v = st.writable_rows(None, np.asarray(rows), sorted_unique)
        np.add.at(v, np.asarray(rows), delta)


def test_live_snapshot_reads_the_values_of_snapshot_time_while_rows_change():
    orig = np.arange(40, dtype=np.float32).reshape(10, 4)
    st = _state(orig.copy())
    arr_id = id(st.value)
    snap = st.live_snapshot()
    assert snap is not None and st.pending is snap and st.live_snapshot() is None  # one at a time
    out = np.empty_like(orig)
    _update_rows(st, [1, 3, 3], 100.0)            # duplicates; row 3 changed twice in one update
    _update_rows(st, [3, 5], 1000.0, True)         # row 3 touched again: its saved value stays the first
    assert [list(r) for r, _ in snap._chunks] == [[1, 3], [3, 5]]  # row 3 twice: the first value counts
    snap.read_rows(0, 4, out[0:4])                 # rows 1 and 3 come back from the undo buffer
    _update_rows(st, [2, 5, 9], 7.0)               # row 2 is read already: not saved; 5 saved again, 9 filed
    snap.read_rows(4, 7, out[4:7])
    _update_rows(st, [9], 1.0)
    snap.read_rows(7, 10, out[7:10])
    assert np.array_equal(out, orig)
    assert id(st.value) == arr_id                  # updated in place, never copied
    live = st.value.copy()
    assert live[3, 0] == orig[3, 0] + 1200 and live[9, 0] == orig[9, 0] + 8
    with pytest.raises(ValueError, match="in order"):
        snap.read_rows(3, 4, out[3:4])
    snap.release()
    assert st.pending is None and not snap._chunks and not snap.undo.pos.any()
    _update_rows(st, [0], 1.0)                     # no snapshot: nothing saved
    assert not snap._chunks and id(st.value) == arr_id


def test_live_snapshot_with_a_dense_update_or_an_outside_reader_copies_first():
    orig = np.arange(12, dtype=np.float32).reshape(6, 2)
    out = np.empty_like(orig)
    st = _state(orig.copy())
    snap = st.live_snapshot()
    held = st.snapshot()                           # a reader (a fetched value) holds the live array
    _update_rows(st, [2], 1.0)                     # so the update copies first, as without a snapshot
    assert np.array_equal(held, orig) and st.value is not snap.array
    snap.read_rows(0, 6, out)
    assert np.array_equal(out, orig)
    snap.release()
    del held

    st = _state(orig.copy())
    snap = st.live_snapshot()
    _update_rows(st, [4], 1.0)                     # saved, then updated in place
    assert st.value is snap.array
    with st.lock:                                  # a dense in-place update: copy-on-write
        v = st.writable()
        v += 10.0
    del v
    assert st.value is not snap.array
    _update_rows(st, [0, 4], 1.0)                  # the live array is no longer the snapshot's
    snap.read_rows(0, 3, out[:3])
    snap.read_rows(3, 6, out[3:])
    assert np.array_equal(out, orig)
    assert np.array_equal(st.value, orig + 10 + np.array([[1], [0], [0], [0], [2], [0]], np.float32))
    snap.release()


def _sparse_model(rows: int = 40):
    g = cf.Graph()
    with g.as_default():
        ids = cf.placeholder(cf.int32, (None,), name="ids")
        y = cf.placeholder(cf.int32, (None,), name="y")
        emb = cf.Variable(cf.random_uniform((rows, 6), -0.5, 0.5, seed=1), name="emb")
        w = cf.Variable(cf.random_normal((6, 3), stddev=0.3, seed=2), name="dense/kernel")
        counts = cf.Variable(np.zeros((rows, 2), np.float32), name="counts")
        logits = cf.matmul(cf.nn.embedding_lookup(emb, ids), w)
        loss = cf.reduce_mean(cf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        gs = cf.train.get_or_create_global_step()
        train = cf.train.MomentumOptimizer(0.1, 0.9).minimize(loss, global_step=gs)  # sparse slot updates too
        with cf.control_dependencies([train]):
            step = cf.scatter_add(counts, ids, cf.ones_like(cf.gather(counts, ids))).op  # ScatterAdd, repeated ids
        init = cf.global_variables_initializer()
    rng = np.random.default_rng(4)
    # few distinct ids: rows are touched again and again
    pool = rng.choice(rows, 12, replace=False)
    feeds = [{ids: rng.choice(pool, 7).astype(np.int32), y: rng.integers(0, 3, 7).astype(np.int32)}
             for _ in range(12)]
    return g, step, init, feeds


@pytest.mark.parametrize("rows,piece,direct", [
    (40, 3 * 24 - 8, False),       # pieces of 2 rows, not aligned to checksum blocks; through the page cache
    (40, 64 * 24, False),          # one piece per variable
    (4100, 2 * 12288 + 100, True),  # blocks of 512 rows through O_DIRECT, the last 4 rows buffered
])
def test_async_save_during_sparse_and_dense_updates_equals_a_sync_save(tmp_path, monkeypatch, rows, piece, direct):
    import threading
    from collflow.train import saver as saver_mod
    monkeypatch.setattr(saver_mod, "LIVE_SNAPSHOT_MIN_BYTES", 0)  # every variable of rank >= 1 is live
    monkeypatch.setattr(cst, "_SOURCE_PIECE", piece)
    direct_fds = []
    real_open_direct = cst.open_direct
    monkeypatch.setattr(cst, "open_direct", lambda p: direct_fds.append(real_open_direct(p)) or direct_fds[-1])
    g, step, init, feeds = _sparse_model(rows)
    with cf.Session(graph=g) as s:
        s.run(init)
        for f in feeds[:4]:
            s.run(step, f)
        sync_path = CheckpointManager(str(tmp_path / "sync")).save(s, 4)
        # the writer waits for a training step after each piece it writes
        wrote, stepped = threading.Semaphore(0), threading.Semaphore(0)
        real = cst._pwrite_all

        used = set()

        def slow(fd, buf, off):
            real(fd, buf, off)
            used.add(fd)
            wrote.release()
            assert stepped.acquire(timeout=30)
        monkeypatch.setattr(cst, "_pwrite_all", slow)
        emb = s.resources.variables["emb"]
        emb_id, dense_id = id(emb.value), id(s.resources.variables["dense/kernel"].value)
        saved_rows = []
        real_save = LiveSnapshot.save_rows
        monkeypatch.setattr(LiveSnapshot, "save_rows", lambda self, rows, old=None: (saved_rows.append(
            (self.state.name, len(rows))), real_save(self, rows, old))[1])
        ck = CheckpointManager(str(tmp_path / "async"), async_save=True)
        path = ck.save(s, 4)
        assert isinstance(emb.pending, LiveSnapshot)
        n = 0
        while ck.save_in_flight:
            if wrote.acquire(timeout=0.05):
                s.run(step, feeds[4 + n % 8])  # rows touched again and again, dense and slot updates
                n += 1
                stepped.release()
        ck.wait()
        assert n >= 4 and emb.pending is None
        assert id(emb.value) == emb_id  # the sparse updates changed the table in place: no copy
        assert id(s.resources.variables["dense/kernel"].value) != dense_id  # dense update: copied first
        assert {"emb", "emb/Momentum", "counts"} <= {name for name, k in saved_rows if k}
        assert bool(used & set(direct_fds) - {None}) == direct
    a, b = cio.read_checkpoint(path), cio.read_checkpoint(sync_path)
    assert a.global_step == b.global_step == 4 and sorted(a.variables) == sorted(b.variables)
    for k in b.variables:
        assert a.variables[k].dtype == b.variables[k].dtype and np.array_equal(a.variables[k], b.variables[k]), k
    with cf.Session(graph=g) as s2:
        CheckpointManager(str(tmp_path / "async")).restore(s2)
        for k, v in b.variables.items():
            assert np.array_equal(s2.resources.variables[k].value, v), k


def test_async_writer_failure_is_raised_and_ends_the_snapshots(tmp_path, monkeypatch):
    from collflow.train import saver as saver_mod
    monkeypatch.setattr(saver_mod, "LIVE_SNAPSHOT_MIN_BYTES", 0)
    monkeypatch.setattr(cst, "_SOURCE_PIECE", 5 * 6 * 4)
    g, step, init, feeds = _sparse_model()
    real = cst._pwrite_all
    calls = []

    def failing(fd, buf, off):
        calls.append(off)
        if len(calls) == 3:
            raise OSError("disk full")
        real(fd, buf, off)
    with cf.Session(graph=g) as s:
        s.run(init)
        ck = CheckpointManager(str(tmp_path), async_save=True)
        monkeypatch.setattr(cst, "_pwrite_all", failing)
        ck.save(s, 1)
        with pytest.raises(OSError, match="disk full"):
            ck.wait()
        assert all(st.pending is None for st in s.resources.variables.values())
        assert not os.listdir(tmp_path)  # no partial file left; nothing indexed
        monkeypatch.setattr(cst, "_pwrite_all", real)
        s.run(step, feeds[0])
        want = {k: st.value.copy() for k, st in s.resources.variables.items()}
        path = ck.save(s, 2)
        s.run(step, feeds[1])
        ck.close()
    got = cio.read_checkpoint(path).variables
    for k, v in want.items():
        assert np.array_equal(got[k], v), k


# -- ranks ----------------------------------------------------------------------------------------------------


def test_only_rank_0_writes_and_any_world_size_restores(tmp_path):
    g, (w,) = _graph([("w", np.float32, (2,))])
    with cf.Session(graph=g) as s:
        w.load(np.array([3, 4], np.float32), s)
        p1 = CheckpointManager(str(tmp_path), rank=1, world_size=4).save(s, 5)
        assert not os.path.exists(p1) and not os.path.exists(tmp_path / "checkpoint.json")
        p0 = CheckpointManager(str(tmp_path), rank=0, world_size=4).save(s, 5)
        assert p0 == p1 and os.path.exists(p0)
    for rank, size in ((0, 1), (1, 2)):
        with cf.Session(graph=g) as s:
            res = CheckpointManager(str(tmp_path), rank=rank, world_size=size).restore(s)
            assert res.world_size == 4 and np.array_equal(s.run(w), [3, 4])


# -- Save / Restore graph ops ----------------------------------------------------------------------------------


def test_save_and_restore_ops_inside_a_run(tmp_path):
    m = build_model()
    X, Y = data()
    with m["g"].as_default():
        saver = Saver()
        with cf.control_dependencies([m["train"]]):
            save_op = saver.build_save_op(str(tmp_path / "in_run.h5"))
        restore_op = saver.build_restore_op(str(tmp_path / "in_run.h5"))
    with cf.Session(graph=m["g"]) as s:
        s.run(m["init"])
        s.run(save_op, {m["x"]: X[:8], m["y"]: Y[:8]})  # one step, then the checkpoint
        after_step = all_values(s, m["g"])
        assert int(after_step["global_step"]) == 1
        s.run(m["init"])
        s.run(restore_op)
        back = all_values(s, m["g"])
    for k in after_step:
        assert np.array_equal(back[k], after_step[k]), k
    # the file is an ordinary checkpoint
    with cf.Session(graph=m["g"]) as s:
        Saver().restore(s, str(tmp_path / "in_run.h5"))


def test_restore_op_checks_names_dtypes_and_shapes(tmp_path):
    g = cf.Graph()
    with g.as_default():
        fn = cf.placeholder(cf.string, (), name="fn")
        save = io_ops.save(fn, ["a", "b"], [cf.constant([1.0, 2.0]), cf.constant([[1, 2]], dtype=cf.int64)])
        ok = io_ops.restore(fn, ["b", "a"], [cf.int64, cf.float32], [(1, 2), (None,)])
        bad_dtype = io_ops.restore(fn, ["a"], [cf.float64])
        bad_name = io_ops.restore(fn, ["zz"], [cf.float32])
    path = str(tmp_path / "ops.h5")
    with cf.Session(graph=g) as s:
        s.run(save, {fn: path})
        b, a = s.run(ok, {fn: path})
        assert a.dtype == np.float32 and np.array_equal(a, [1, 2]) and np.array_equal(b, [[1, 2]])
        with pytest.raises(cf.InvalidArgumentError, match="'a': checkpoint float32"):
            s.run(bad_dtype, {fn: path})
        with pytest.raises(cf.NotFoundError, match="'zz'"):
            s.run(bad_name, {fn: path})
    with g.as_default(), pytest.raises(cf.InvalidArgumentError, match="2 tensor names for 1"):
        g.create_op("Save", [fn, cf.constant(1.0)], {"tensor_names": ("a", "b")})


# -- SIGTERM --------------------------------------------------------------------------------------------------


def test_sigterm_saves_at_the_next_step_and_exits(tmp_path):
    g, (w,) = _graph([("w", np.float32, (2,))])
    before = signal.getsignal(signal.SIGTERM)
    with cf.Session(graph=g) as s:
        s.run(w.initializer)
        ck = CheckpointManager(str(tmp_path), checkpoint_every_steps=100)
        h = ck.install_signal_handler()
        assert ck.maybe_save(s, 1) is None
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(100):  # the handler runs on the main thread at the next bytecode boundary
            if h.requested:
                break
            time.sleep(0.01)
        with pytest.raises(SystemExit) as ei:
            ck.maybe_save(s, 7, {"epoch": 1})
        assert ei.value.code == 128 + signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) == before
    r = cio.read_checkpoint(str(tmp_path / "ckpt-7.h5"))
    assert r.global_step == 7 and r.pipeline == {"epoch": 1}


# -- kill -9 in the middle of a write -------------------------------------------------------------------------

_CHILD = textwrap.dedent("""
    import os, sys, time
    sys.path.insert(0, {root!r})
    import numpy as np
    import collflow as cf
    from collflow.train import checkpoint_storage as cst
    from collflow.train.checkpoint_manager import CheckpointManager
    n = int(sys.argv[2])
    g = cf.Graph()
    with g.as_default():
        w = cf.Variable(np.zeros(n, np.float32), name="w")
        v = cf.Variable(np.zeros(3, np.float32), name="v")
    with cf.Session(graph=g) as s:
        mode = sys.argv[3]
        ck = CheckpointManager(sys.argv[1], max_to_keep=2, async_save=(mode == "async_loop"))
        if mode == "stall":
            w.load(np.full(n, 1, np.float32), s); v.load(np.full(3, 1, np.float32), s)
            ck.save(s, 1)
            real = cst._pwrite_all
            def stall(fd, buf, off):
                real(fd, buf[: len(buf) // 2], off)   # half a variable on disk ...
                print("WRITING", flush=True)
                time.sleep(60)                        # ... and the kill comes now
            cst._pwrite_all = stall
            w.load(np.full(n, 2, np.float32), s); v.load(np.full(3, 2, np.float32), s)
            ck.save(s, 2)
        else:  # save one checkpoint after another until killed (async_loop: asynchronous saves)
            step = 0
            while True:
                step += 1
                w.load(np.full(n, step, np.float32), s); v.load(np.full(3, step, np.float32), s)
                ck.save(s, step)
                if step == 1:
                    ck.wait()  # the first one durable (an async save returns before)
                print("SAVED", step, flush=True)
""")


def _child(tmp_path, n, mode):
    script = tmp_path / "child.py"
    script.write_text(_CHILD.format(root=ROOT))
    d = tmp_path / "ck"
    p = subprocess.Popen([sys.executable, str(script), str(d), str(n), mode], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    return p, d


def _restore_w_v(d, n):
    g = cf.Graph()
    with g.as_default():
        w = cf.Variable(np.zeros(n, np.float32), name="w")
        v = cf.Variable(np.zeros(3, np.float32), name="v")
    with cf.Session(graph=g) as s:
        res = CheckpointManager(str(d)).restore(s)
        return res, s.run(w), s.run(v)


def test_kill_9_mid_write_leaves_the_previous_checkpoint_loadable(tmp_path):
    n = 1 << 20
    p, d = _child(tmp_path, n, "stall")
    try:
        line = p.stdout.readline()
        assert line.strip() == "WRITING", p.stderr.read()
        assert list(d.glob("ckpt-2.h5.*.tmp")) and not (d / "ckpt-2.h5").exists()
        os.kill(p.pid, signal.SIGKILL)
        assert p.wait(30) == -signal.SIGKILL
    finally:
        if p.poll() is None:
            p.kill()
        p.stdout.close()
        p.stderr.close()
    assert json.loads((d / "checkpoint.json").read_text())["latest"] == "ckpt-1.h5"
    res, w, v = _restore_w_v(d, n)
    assert res.global_step == 1 and np.all(w == 1) and np.all(v == 1)
    assert not list(d.glob("ckpt-2.h5*.tmp"))  # the manager removed the leftover


@pytest.mark.parametrize("delay,mode", [(0.12, "loop"), (0.3, "loop"), (0.2, "async_loop")])
def test_kill_9_at_any_moment_leaves_a_consistent_checkpoint(tmp_path, delay, mode):
    n = 8 << 20  # 32 MB: a save takes long enough to be caught in the middle
    p, d = _child(tmp_path, n, mode)
    try:
        assert p.stdout.readline().startswith("SAVED"), p.stderr.read()
        time.sleep(delay)
        os.kill(p.pid, signal.SIGKILL)
        p.wait(30)
    finally:
        if p.poll() is None:
            p.kill()
        p.stdout.close()
        p.stderr.close()
    res, w, v = _restore_w_v(d, n)
    step = res.global_step
    assert step >= 1 and np.all(w == step) and np.all(v == step)


# -- command-line flags -----------------------------------------------------------------------------------------


def test_checkpoint_flags_make_a_manager(tmp_path):
    import argparse
    from collflow.train.checkpoint_manager import add_checkpoint_arguments, manager_from_args
    p = argparse.ArgumentParser()
    add_checkpoint_arguments(p)
    a = p.parse_args([])
    assert manager_from_args(a) is None and a.resume is True
    a = p.parse_args(["--checkpoint-dir", str(tmp_path / "c"), "--checkpoint-every-steps", "50",
                      "--max-to-keep", "2", "--async-checkpoint", "--no-resume"])
    ck = manager_from_args(a, rank=0, world_size=2)
    assert (ck.every_steps, ck.max_to_keep, ck.async_save, ck.world_size, a.resume) == (50, 2, True, 2, False)
    assert os.path.isdir(tmp_path / "c")
    with pytest.raises(cf.InvalidArgumentError, match="--checkpoint-every-secs"):
        manager_from_args(p.parse_args(["--checkpoint-dir", str(tmp_path), "--checkpoint-every-secs", "-1"]))


def test_a_saver_of_chosen_variables_restores_them_from_a_larger_checkpoint(tmp_path):
    """TF1: Saver(var_list).restore reads the listed entries and ignores the rest of the file
    (fine-tuning a part of a model, restoring averaged weights); a listed entry the file lacks
    is still an error."""
    g, vs = _graph([("w", np.float32, (3, 4)), ("b", np.float32, (4,)), ("c", np.float32, (2,))])
    with cf.Session(graph=g) as s:
        s.run([v.initializer for v in vs])
        want = s.run(vs[0])
        path = Saver().save(s, str(tmp_path / "m.h5"))
    g2, vs2 = _graph([("w", np.float32, (3, 4)), ("d", np.float32, (1,))])
    with cf.Session(graph=g2) as s:
        res = Saver([vs2[0]]).restore(s, path)
        assert res.restored == ["w"] and res.unexpected == []
        np.testing.assert_array_equal(s.run(vs2[0]), want)
        with pytest.raises(cf.NotFoundError, match="missing from the checkpoint \\(1\\): d"):
            Saver([vs2[1]]).restore(s, path)
        with pytest.raises(cf.NotFoundError, match="not in the graph \\(2\\): b, c"):
            Saver().restore(s, path)  # the default Saver still says what does not match


def test_tf1_checkpoint_helpers(tmp_path):
    """get_checkpoint_state / list_variables / load_variable / NewCheckpointReader, as TF1
    scripts use them to find and inspect checkpoints."""
    d = str(tmp_path)
    assert cf.train.get_checkpoint_state(d) is None
    g, vs = _graph([("w", np.float32, (3, 4)), ("b", np.float64, (2,))])
    with cf.Session(graph=g) as s:
        s.run([v.initializer for v in vs])
        saver = Saver()
        p1 = saver.save(s, os.path.join(d, "model.ckpt"), global_step=1)
        p2 = saver.save(s, os.path.join(d, "model.ckpt"), global_step=2)
        w = s.run(vs[0])
    st = cf.train.get_checkpoint_state(d)
    assert st.model_checkpoint_path == os.path.abspath(p2) == cf.train.latest_checkpoint(d)
    assert st.all_model_checkpoint_paths == [os.path.abspath(p1), os.path.abspath(p2)]
    assert cf.train.list_variables(d) == [("b", [2]), ("w", [3, 4])]
    np.testing.assert_array_equal(cf.train.load_variable(d, "w"), w)
    np.testing.assert_array_equal(cf.train.load_variable(p1, "w:0"), w)
    r = cf.train.NewCheckpointReader(p2)
    assert r.has_tensor("b") and not r.has_tensor("nope")
    assert r.get_variable_to_shape_map() == {"w": [3, 4], "b": [2]}
    assert r.get_variable_to_dtype_map()["b"] == np.float64
    with pytest.raises(cf.NotFoundError, match="has no variable 'nope'"):
        r.get_tensor("nope")
    with pytest.raises(cf.NotFoundError, match="not found"):
        cf.train.load_checkpoint(os.path.join(d, "model.ckpt-7"))


def test_concurrent_saves_of_one_saver_keep_the_index_whole(tmp_path):
    """A Supervisor's checkpoint thread and the training loop save through one Saver at once:
    saves are serialized, so the index lists every kept checkpoint and the last one saved is
    the latest (a lost entry once made latest_checkpoint return the older step)."""
    import json
    import threading
    g = cf.Graph()
    with g.as_default():
        cf.Variable(np.arange(2000, dtype=np.float32), name="w")
        saver = cf.train.Saver(max_to_keep=100)
    prefix = str(tmp_path / "model.ckpt")
    with cf.Session(graph=g) as sess:
        sess.run(cf.global_variables_initializer())

        def work(offset):
            for i in range(10):
                saver.save(sess, prefix, global_step=offset + i)
        threads = [threading.Thread(target=work, args=(k * 100,)) for k in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    index = json.loads((tmp_path / "checkpoint.json").read_text())
    saved = {e["path"] for e in index["checkpoints"]}
    assert len(saved) == 30 and all((tmp_path / p).exists() for p in saved)
    assert index["latest"] == index["checkpoints"][-1]["path"]
