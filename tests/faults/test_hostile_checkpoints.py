"""Hostile checkpoint files and indexes: each is built for real with h5py and must be refused
with an error naming the file, the entry and the cause, quickly and without allocating what
the file declares; nothing outside the checkpoint directory is read or deleted."""
from __future__ import annotations

import importlib.util
import json
import logging
import os
import re
import subprocess
import sys
import textwrap
import time

import h5py
import numpy as np
import pytest

import collflow as cf
from collflow.train import checkpoint_io as cio
from collflow.train.checkpoint_manager import CheckpointManager, add_checkpoint_arguments, manager_from_args
from collflow.train.saver import Saver, latest_checkpoint

pytestmark = pytest.mark.timeout(60)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GOOD = np.arange(1000, dtype=np.float32)
SECRET = b"TOP-SECRET-" * 400  # 4400 bytes, more than w's 4000


# -- building files ------------------------------------------------------------------------------------


def write_good(path, w=GOOD, step=1):
    """A checkpoint as collflow writes it: variable w, a random state, an input position."""
    rng = np.random.default_rng(0).bit_generator.state
    cio.write_checkpoint(str(path), cio.CheckpointData(variables={"w": w}, rng={"drop/mask": rng},
                                                       pipeline={"epoch": 1}, global_step=step))
    return str(path)


def edit(path, fn):
    with h5py.File(path, "r+") as f:
        fn(f)


def replace_w(f, **dataset_kwargs):
    """Re-creates /variables/w with other storage, keeping its attributes (name, crc_index)."""
    attrs = dict(f["variables/w"].attrs)
    del f["variables/w"]
    ds = f.create_dataset("variables/w", **dataset_kwargs)
    for k, v in attrs.items():
        ds.attrs[k] = v


def secret_file(tmp_path):
    p = tmp_path / "outside" / "secret.bin"
    p.parent.mkdir(exist_ok=True)
    p.write_bytes(SECRET)
    return str(p)


def external_storage(tmp_path, drop_checksums):
    secret = secret_file(tmp_path)

    def fn(f):
        replace_w(f, shape=(1000,), dtype=np.float32, external=[(secret, 0, 4000)])
        if drop_checksums:
            del f["checksums"]
    return fn


def outside_h5(tmp_path):
    p = str(tmp_path / "outside" / "data.h5")
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with h5py.File(p, "w") as f:
        f["x"] = np.frombuffer(SECRET[:4000], dtype=np.float32)
    return p


def virtual_dataset(tmp_path):
    src = outside_h5(tmp_path)

    def fn(f):
        layout = h5py.VirtualLayout(shape=(1000,), dtype=np.float32)
        layout[:] = h5py.VirtualSource(src, "x", shape=(1000,))
        attrs = dict(f["variables/w"].attrs)
        del f["variables/w"]
        ds = f.create_virtual_dataset("variables/w", layout)
        for k, v in attrs.items():
            ds.attrs[k] = v
    return fn


def vlen_ints():
    a = np.empty(2, dtype=object)
    a[0], a[1] = np.arange(3, dtype=np.int32), np.arange(2, dtype=np.int32)
    return a


# (name, edit(tmp_path) -> fn(f), what the error must say)
HOSTILE = [
    ("external storage", lambda t: external_storage(t, False), r"/variables/w uses HDF5 external storage.*secret\.bin"),
    ("external storage, no checksums", lambda t: external_storage(t, True), r"/variables/w uses HDF5 external storage"),
    ("soft link", lambda t: lambda f: f.__setitem__("variables/v", h5py.SoftLink("/variables/w")),
     r"entry /variables/v is a soft link to /variables/w"),
    ("soft link as checksums", lambda t: lambda f: (f.__delitem__("checksums"),
                                                    f.__setitem__("checksums", h5py.SoftLink("/variables"))),
     r"entry /checksums is a soft link"),
    ("external link", lambda t: lambda f: f.__setitem__("variables/v", h5py.ExternalLink(outside_h5(t), "/x")),
     r"entry /variables/v is an external link to /x in file .*data\.h5"),
    ("virtual dataset", virtual_dataset, r"dataset /variables/w is a virtual dataset"),
    ("vlen string dataset", lambda t: lambda f: f.create_dataset("variables/s", data=["a", "bb"],
                                                                dtype=h5py.string_dtype()),
     r"dataset /variables/s has HDF5 type class string"),
    ("vlen int dataset", lambda t: lambda f: f.create_dataset("rng/drop%2Fmask/v", shape=(2,),
                                                             dtype=h5py.vlen_dtype(np.int32)),
     r"dataset /rng/drop%2Fmask/v has HDF5 type class vlen"),
    ("object reference dataset", lambda t: lambda f: f.create_dataset("variables/r", shape=(1,),
                                                                     dtype=h5py.ref_dtype),
     r"dataset /variables/r has HDF5 type class reference"),
    ("compound dataset", lambda t: lambda f: f.create_dataset("variables/c", shape=(2,),
                                                             dtype=np.dtype([("a", "<i4"), ("b", "<f4")])),
     r"dataset /variables/c has HDF5 type class compound"),
    ("vlen attribute", lambda t: lambda f: f["variables/w"].attrs.create("name", vlen_ints(),
                                                                        dtype=h5py.vlen_dtype(np.int32)),
     r"attribute 'name' of /variables/w has HDF5 type class vlen"),
    ("gzip filter", lambda t: lambda f: replace_w(f, data=GOOD, compression="gzip", chunks=(100,)),
     r"dataset /variables/w uses HDF5 filter\(s\) deflate"),
    ("a dataset linked many times", lambda t: lambda f: [f.__setitem__(f"variables/alias{i}", f["variables/w"])
                                                         for i in range(100)],
     r"dataset /variables/alias\d+ declares float32\[1000\].*more than the file's \d+ bytes"),
    ("checksums removed", lambda t: lambda f: f.__delitem__("checksums"),
     r"cannot be verified: it has no checksums.*allow_unverified=True.*--allow-unverified-checkpoint"),
    ("crc_index removed", lambda t: lambda f: f["variables/w"].attrs.__delitem__("crc_index"),
     r"cannot be verified: variable\(s\) 'w' \(/variables/w\) have no checksum"),
    ("crc_index out of range", lambda t: lambda f: f["variables/w"].attrs.__setitem__("crc_index", np.int64(7)),
     r"variable 'w' \(/variables/w\) has crc_index 7, outside /checksums/block_crc32"),
]


@pytest.mark.parametrize("name, make, says", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_file_is_refused_naming_the_entry_and_the_cause(tmp_path, name, make, says):
    path = write_good(tmp_path / "ckpt-1.h5")
    edit(path, make(tmp_path))
    t0 = time.perf_counter()
    with pytest.raises(cio.UnsafeCheckpointError, match=says) as err:
        cio.read_checkpoint(path)
    assert time.perf_counter() - t0 < 2.0
    assert path in str(err.value)
    assert isinstance(err.value, cio.DataLossError)  # restores fall back past it like past a damaged file
    assert os.path.exists(path)  # refused, not deleted


_UNVERIFIED_ONLY = {"checksums removed", "crc_index removed"}  # what allow_unverified does accept
STRUCTURAL = [h for h in HOSTILE if h[0] not in _UNVERIFIED_ONLY]


@pytest.mark.parametrize("name, make, says", STRUCTURAL, ids=[h[0] for h in STRUCTURAL])
def test_allow_unverified_does_not_relax_the_structure_checks(tmp_path, name, make, says):
    path = write_good(tmp_path / "ckpt-1.h5")
    edit(path, make(tmp_path))
    with pytest.raises(cio.UnsafeCheckpointError, match=says):
        cio.read_checkpoint(path, allow_unverified=True)


def test_unverified_file_is_read_only_when_allowed_and_then_loudly(tmp_path, caplog):
    path = write_good(tmp_path / "ckpt-1.h5")
    edit(path, lambda f: f.__delitem__("checksums"))
    with caplog.at_level(logging.WARNING, "collflow.checkpoint"):
        back = cio.read_checkpoint(path, allow_unverified=True)
    assert np.array_equal(back.variables["w"], GOOD)
    assert "UNVERIFIED" in caplog.text and path in caplog.text and "no checksums" in caplog.text


def test_hard_link_cycle_ends(tmp_path):
    path = write_good(tmp_path / "ckpt-1.h5")
    edit(path, lambda f: f["variables"].__setitem__("loop", f["/"]))  # /variables/loop is the root group
    assert np.array_equal(cio.read_checkpoint(path).variables["w"], GOOD)


def test_files_collflow_writes_pass_every_check(tmp_path):
    vals = {"f16": np.ones(3, np.float16), "b": np.array([True, False]), "s": np.array(5, np.int64),
            "e": np.zeros((0, 4), np.float32), "u": np.arange(7, dtype=np.uint8), "w/Adam": GOOD}
    path = str(tmp_path / "all.h5")
    cio.write_checkpoint(path, cio.CheckpointData(variables=vals, global_step=3))
    back = cio.read_checkpoint(path).variables
    assert all(np.array_equal(back[k], v) and back[k].dtype == v.dtype for k, v in vals.items())


# -- memory bombs: a small file declaring 2**28 entries --------------------------------------------------

_MEASURE = textwrap.dedent("""
    import json, resource, sys, time
    import h5py  # imported before measuring: only the reads count
    from collflow.train import checkpoint_io as cio
    out = []
    for path in sys.argv[1:]:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t0 = time.perf_counter()
        try:
            cio.read_checkpoint(path)
            msg = "accepted"
        except cio.DataLossError as e:
            msg = type(e).__name__ + ": " + str(e)
        dt = time.perf_counter() - t0
        grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
        out.append({"path": path, "error": msg, "seconds": dt, "peak_rss_growth_kb": grew})
    print(json.dumps(out))
""")


def _chunked_never_written(f, name, n=2 ** 28):
    f.create_dataset(name, shape=(n,), dtype=np.uint32, chunks=(1 << 16,))


def test_declared_sizes_beyond_the_file_are_refused_before_any_allocation(tmp_path):
    table = write_good(tmp_path / "table.h5")
    edit(table, lambda f: (f.__delitem__("checksums/block_crc32"),
                           _chunked_never_written(f, "checksums/block_crc32")))
    rng = write_good(tmp_path / "rng.h5")
    edit(rng, lambda f: _chunked_never_written(f, "rng/drop%2Fmask/big"))
    for p in (table, rng):
        assert os.path.getsize(p) < 1 << 20  # small files declaring 1 GiB each
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", _MEASURE, table, rng], capture_output=True, text=True, timeout=60,
                       env=env, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    got = {os.path.basename(d["path"]): d for d in json.loads(r.stdout)}
    assert re.search(r"UnsafeCheckpointError: checkpoint .*table\.h5: dataset /checksums/block_crc32 declares "
                     r"uint32\[268435456\], 1073741824 bytes .* more than the file's \d+ bytes can hold",
                     got["table.h5"]["error"])
    assert re.search(r"UnsafeCheckpointError: checkpoint .*rng\.h5: dataset /rng/drop%2Fmask/big declares "
                     r"uint32\[268435456\]", got["rng.h5"]["error"])
    for d in got.values():
        assert d["peak_rss_growth_kb"] < 32 * 1024, d  # the 1 GiB is never allocated
        assert d["seconds"] < 1.0, d


# -- the index: entries are plain file names inside the directory ------------------------------------------

def _graph():
    g = cf.Graph()
    with g.as_default():
        w = cf.Variable(np.zeros(1000, np.float32), name="w")
    return g, w


def _save_steps(directory, steps, max_to_keep=5):
    g, w = _graph()
    with cf.Session(graph=g) as s:
        ck = CheckpointManager(str(directory), max_to_keep=max_to_keep)
        for step in steps:
            w.load(np.full(1000, step, np.float32), s)
            ck.save(s, step)
        ck.close()


def _index_add(directory, path, step, first=True):
    p = os.path.join(directory, "checkpoint.json")
    with open(p) as f:
        doc = json.load(f)
    e = {"path": path, "step": step, "time": 0.0 if first else time.time() + 1000, "keep": False}
    doc["checkpoints"] = [e] + doc["checkpoints"] if first else doc["checkpoints"] + [e]
    with open(p, "w") as f:
        json.dump(doc, f)


@pytest.mark.parametrize("entry", ["ckpt-/../../victim.txt", "/abs/ckpt-1.h5", "..", ".", "ckpt-1.h5\x00.x",
                                   "ckpt-a\\b.h5", "", 5])
def test_index_entries_that_are_not_plain_names_are_dropped_and_logged(tmp_path, caplog, entry):
    _save_steps(tmp_path, [1])
    _index_add(str(tmp_path), entry, 9, first=False)
    with caplog.at_level(logging.WARNING, "collflow.checkpoint"):
        entries = cio.read_index(str(tmp_path))
    assert [e.path for e in entries] == ["ckpt-1.h5"]
    assert "checkpoint.json" in caplog.text and repr(entry) in caplog.text and "refused" in caplog.text


def test_traversal_entry_is_never_deleted_by_retention(tmp_path, caplog):
    d = tmp_path / "ck"
    _save_steps(d, [1, 2])
    (d / "ckpt-").mkdir()  # makes "ckpt-/../../victim.txt" resolve, and it starts with the prefix
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    _index_add(str(d), "ckpt-/../../victim.txt", 0, first=True)  # the oldest: retention's first pick
    with caplog.at_level(logging.WARNING, "collflow.checkpoint"):
        _save_steps(d, [3, 4, 5], max_to_keep=1)
    assert victim.read_text() == "keep me"
    assert sorted(os.listdir(d)) == ["checkpoint.json", "ckpt-", "ckpt-5.h5"]
    assert "'ckpt-/../../victim.txt' refused" in caplog.text and "path separator" in caplog.text


def test_restore_never_reads_outside_the_directory(tmp_path, caplog):
    d = tmp_path / "ck"
    _save_steps(d, [1, 2])
    (d / "ckpt-").mkdir()
    write_good(tmp_path / "evil.h5", w=np.full(1000, 666, np.float32), step=999)
    _index_add(str(d), "ckpt-/../../evil.h5", 999, first=False)  # listed as the newest
    os.symlink(tmp_path / "evil.h5", d / "ckpt-998.h5")  # found by the directory scan
    g, w = _graph()
    with cf.Session(graph=g) as s, caplog.at_level(logging.WARNING, "collflow.checkpoint"):
        res = CheckpointManager(str(d)).restore(s)
        assert res.global_step == 2 and np.all(s.run(w) == 2)
    assert "'ckpt-/../../evil.h5' refused" in caplog.text
    assert "'ckpt-998.h5'" in caplog.text and "outside the checkpoint directory" in caplog.text
    assert latest_checkpoint(str(d)) == str(d / "ckpt-2")


def test_retention_never_follows_a_symlink_out(tmp_path):
    d = tmp_path / "ck"
    _save_steps(d, [2])
    target = tmp_path / "precious.h5"
    write_good(target)
    os.symlink(target, d / "ckpt-1.h5")  # an "old checkpoint" that is a link out of the directory
    _save_steps(d, [3, 4], max_to_keep=1)
    assert target.exists() and os.path.islink(d / "ckpt-1.h5")


# -- the manager: refused files are logged, skipped, kept -------------------------------------------------


def test_manager_falls_back_past_a_hostile_newest_and_never_saves_its_bytes(tmp_path, caplog):
    d = tmp_path / "ck"
    _save_steps(d, [1, 2])
    hostile = str(d / "ckpt-2.h5")
    edit(hostile, external_storage(tmp_path, drop_checksums=True))
    g, w = _graph()
    with cf.Session(graph=g) as s, caplog.at_level(logging.WARNING, "collflow.checkpoint"):
        ck = CheckpointManager(str(d), max_to_keep=10)
        assert ck.restore(s).global_step == 1 and np.all(s.run(w) == 1)
        ck.save(s, 3)
        ck.close()
    assert "ckpt-2.h5" in caplog.text and "external storage" in caplog.text
    assert os.path.exists(hostile) and os.path.exists(d / "ckpt-1.h5")  # nothing lost
    assert np.all(cio.read_checkpoint(str(d / "ckpt-3.h5")).variables["w"] == 1)
    assert SECRET[:64] not in (d / "ckpt-3.h5").read_bytes()


def test_manager_refuses_unverified_unless_the_flag_says_so(tmp_path, caplog):
    d = tmp_path / "ck"
    _save_steps(d, [1])
    edit(str(d / "ckpt-1.h5"), lambda f: f.__delitem__("checksums"))
    g, w = _graph()
    with cf.Session(graph=g) as s, pytest.raises(cio.DataLossError, match=r"ckpt-1\.h5 cannot be verified"):
        CheckpointManager(str(d)).restore(s)
    p = argparse_parser()
    args = p.parse_args(["--checkpoint-dir", str(d), "--allow-unverified-checkpoint"])
    with cf.Session(graph=g) as s, caplog.at_level(logging.WARNING, "collflow.checkpoint"):
        ck = manager_from_args(args, rank=0, world_size=1)
        assert ck.allow_unverified and ck.restore(s).global_step == 1 and np.all(s.run(w) == 1)
    assert "WITHOUT CHECKSUMS WILL BE RESTORED UNVERIFIED" in caplog.text
    assert "RESTORING AN UNVERIFIED CHECKPOINT" in caplog.text
    assert not p.parse_args([]).allow_unverified_checkpoint


def argparse_parser():
    import argparse
    p = argparse.ArgumentParser()
    add_checkpoint_arguments(p)
    return p


def test_train_script_has_the_flag():
    spec = importlib.util.spec_from_file_location("collflow_train_script_faults", os.path.join(ROOT, "scripts",
                                                                                             "train.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.build_parser().parse_args(["--allow-unverified-checkpoint"]).allow_unverified_checkpoint


def test_saver_restore_takes_allow_unverified(tmp_path):
    path = write_good(tmp_path / "m.h5")
    edit(path, lambda f: f.__delitem__("checksums"))
    g, w = _graph()
    with cf.Session(graph=g) as s:
        with pytest.raises(cio.UnsafeCheckpointError, match="cannot be verified"):
            Saver([w], save_rng=False).restore(s, path)
        Saver([w], save_rng=False).restore(s, path, allow_unverified=True)
        assert np.array_equal(s.run(w), GOOD)


def test_deleted_newest_checkpoint_is_named_in_the_log(tmp_path, caplog):
    _save_steps(tmp_path, [1, 2])
    os.remove(tmp_path / "ckpt-2.h5")
    g, w = _graph()
    with cf.Session(graph=g) as s, caplog.at_level(logging.WARNING, "collflow.checkpoint"):
        assert CheckpointManager(str(tmp_path)).restore(s).global_step == 1
    assert re.search(r"skipping checkpoint .*ckpt-2\.h5 \(step 2\): listed in checkpoint\.json but the file does "
                     r"not exist", caplog.text)
    assert re.search(r"restored .*ckpt-1\.h5; skipped 1 checkpoint", caplog.text)
