"""Invalid op names (TF1's rule), checkpoint directories that are read-only or in use by another
job (collflow.train.dir_lock), found when a job starts rather than at its first save."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import collflow as cf
from collflow.train import dir_lock

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRAIN = os.path.join(ROOT, "scripts", "train.py")
pytestmark = pytest.mark.timeout(60)


# -- names -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["a b", "a\nb", "x:0", "a\n", "-x", "_x", "/x", "a%b"])
def test_invalid_names_are_refused_as_tf1_does(bad):
    g = cf.Graph()
    with g.as_default():
        for make in (lambda: cf.placeholder(cf.float32, (2,), name=bad),
                     lambda: cf.Variable(np.zeros(2, np.float32), name=bad),
                     lambda: cf.constant(1.0, name=bad)):
            # TF1 raises ValueError; a Variable's name is the scope of its ops
            with pytest.raises(ValueError, match="is not a valid (node|scope) name") as e:
                make()
            assert isinstance(e.value, cf.InvalidArgumentError) and str(e.value).startswith(repr(bad))
        if ":" in bad:
            assert "output index" in str(e.value)
        # the refused name left nothing behind
        assert g.get_operations() == []


def test_valid_names_scopes_and_generated_names_still_work():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (None, 3), name="in.put-1")
        with cf.name_scope("layer_1"):
            w = cf.Variable(np.ones((3, 2), np.float32), name="w")
            y = cf.matmul(x, w, name="_mm")  # inside a scope a leading '_' is fine (TF1 too)
        loss = cf.reduce_sum(y)
        grads = cf.gradients(loss, [w])  # internal names with '/'
        cf.train.AdamOptimizer(0.1).minimize(loss)
    assert x.op.name == "in.put-1" and w.op.name == "layer_1/w" and y.op.name == "layer_1/_mm"
    assert grads[0] is not None
    with g.as_default(), pytest.raises(cf.InvalidArgumentError, match="'a b' is not a valid scope name"):
        with cf.name_scope("a b"):
            pass


# -- read-only checkpoint directory ------------------------------------------------------------------


def _read_only_dir(tmp_path):
    """A directory this process cannot create files in (chmod when not root; as root, a sysfs
    directory), or None."""
    d = tmp_path / "ro"
    d.mkdir()
    os.chmod(d, 0o555)
    for cand in (str(d), "/sys/kernel"):
        try:
            with open(os.path.join(cand, ".probe-test"), "wb"):
                pass
            os.remove(os.path.join(cand, ".probe-test"))
        except OSError:
            return cand
    return None


def test_read_only_checkpoint_dir_is_refused_at_start(tmp_path):
    ro = _read_only_dir(tmp_path)
    if ro is None:
        pytest.skip("no directory here is read-only to this process")
    with pytest.raises(OSError, match="is not writable"):
        dir_lock.check_writable(ro)
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, TRAIN, "--no-progress", "--steps", "3", "--checkpoint-dir", ro],
                       capture_output=True, text=True, timeout=60, env=dict(os.environ, PYTHONPATH=ROOT))
    assert p.returncode == 2 and not p.stdout
    line = next(ln for ln in p.stderr.splitlines() if "error:" in ln)
    assert f"checkpoint directory {ro!r} is not writable" in line and "--checkpoint-dir" in line
    assert "mlp on digits" not in p.stderr  # refused before anything was built or trained
    assert time.monotonic() - t0 < 20
    os.chmod(tmp_path / "ro", 0o755)


# -- one job per directory --------------------------------------------------------------------------


HOLD = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {root!r})
    from collflow.train import dir_lock
    lock = dir_lock.DirLock(sys.argv[1], "test").acquire()
    print("locked", flush=True)
    time.sleep(60)
""")


@pytest.fixture
def holder(tmp_path):
    """A process holding tmp_path/ckpt's lock (killed at the end)."""
    d = tmp_path / "ckpt"
    p = subprocess.Popen([sys.executable, "-c", HOLD.format(root=ROOT), str(d)], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "locked"
    yield d, p
    if p.poll() is None:
        p.kill()
    p.wait()
    p.stdout.close()


def test_a_second_holder_is_refused_naming_the_first(holder):
    d, p = holder
    with pytest.raises(dir_lock.DirectoryLocked) as e:
        dir_lock.DirLock(str(d)).acquire()
    assert e.value.holder_pid == p.pid
    assert f"is held by pid {p.pid} on host" in e.value.message and "another --checkpoint-dir" in e.value.message
    # the holder's own supervisor: its job goes on under that lock
    os.environ[dir_lock.SUPERVISOR_ENV] = str(p.pid)
    try:
        assert dir_lock.lock_directory(str(d)) is None
    finally:
        del os.environ[dir_lock.SUPERVISOR_ENV]
    # the kernel releases the lock of a killed holder: nothing stale to clean up
    p.send_signal(signal.SIGKILL)
    p.wait()
    lock = dir_lock.lock_directory(str(d))
    assert lock is not None and lock.held
    with open(lock.path) as f:
        assert f"pid={os.getpid()}" in f.read()
    lock.release()
    assert not lock.held and dir_lock.DirLock(str(d)).acquire().held


def test_train_refuses_a_checkpoint_dir_in_use(holder):
    d, p = holder
    r = subprocess.run([sys.executable, TRAIN, "--no-progress", "--steps", "3", "--checkpoint-dir", str(d)],
                       capture_output=True, text=True, timeout=60, env=dict(os.environ, PYTHONPATH=ROOT))
    assert r.returncode == 2 and not r.stdout
    assert f"is in use: its lock {os.path.join(str(d), 'collflow.lock')!r} is held by pid {p.pid}" in r.stderr
    assert not [f for f in os.listdir(d) if f.endswith(".h5")]  # nothing written over the other job's
