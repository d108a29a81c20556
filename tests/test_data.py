"""collflow.data: datasets (digits, files, synthetic) and the batch iterator."""
import numpy as np
import pytest

import collflow as cf
from collflow import data


# -- digits ------------------------------------------------------------------------------

def test_digits_split_is_deterministic_stratified_and_scaled():
    ds = data.load_digits()
    assert ds.x_train.dtype == np.float32 and ds.y_train.dtype == np.int32
    assert ds.x_train.shape == (1438, 64) and ds.x_test.shape == (359, 64)
    assert ds.num_classes == 10 and ds.feature_shape == (64,) and ds.input_dim == 64
    assert 0.0 <= ds.x_train.min() and ds.x_train.max() == 1.0
    # stratified: each class gets about 20% of its examples in the test part
    assert np.all(np.abs(np.bincount(ds.y_test, minlength=10) - 36) <= 1)
    again = data.load_digits()
    np.testing.assert_array_equal(ds.x_train, again.x_train)
    np.testing.assert_array_equal(ds.y_test, again.y_test)
    other = data.load_digits(seed=1)
    assert not np.array_equal(ds.y_train, other.y_train)


def test_digits_split_is_a_partition_of_the_file():
    raw = np.load(data.DIGITS_PATH)
    ds = data.load_digits(test_fraction=0.25, seed=3)
    assert len(ds.y_train) + len(ds.y_test) == 1797
    both = np.concatenate([ds.x_train, ds.x_test]) * 16
    rows = {r.tobytes() for r in np.round(both).astype(np.uint8)}
    assert rows == {r.tobytes() for r in raw["x"]}


def test_digits_as_images_and_reshape():
    ds = data.load_digits(as_images=True)
    assert ds.x_train.shape == (1438, 8, 8, 1)
    flat = ds.flatten()
    assert flat.x_test.shape == (359, 64)
    with pytest.raises(cf.InvalidArgumentError, match="cannot reshape"):
        ds.reshape((7, 7))


def test_split_rejects_bad_fraction_and_allows_zero():
    x, y = np.zeros((10, 2), np.float32), np.arange(10) % 2
    with pytest.raises(cf.InvalidArgumentError, match="test_fraction"):
        data.split(x, y, 1.0)
    xtr, ytr, xte, yte = data.split(x, y, 0.0)
    assert len(ytr) == 10 and len(yte) == 0


# -- files -----------------------------------------------------------------------------

def _arrays(n=50, d=6, seed=0):
    rng = np.random.default_rng(seed)
    return rng.random((n, d)).astype(np.float64), rng.integers(0, 3, n)


def test_load_npz_splits_when_no_test_arrays(tmp_path):
    x, y = _arrays()
    p = tmp_path / "d.npz"
    np.savez(p, x=x, y=y)
    ds = data.load_file(str(p), test_fraction=0.2, seed=0)
    assert ds.x_train.dtype == np.float32 and ds.y_train.dtype == np.int32
    assert len(ds.y_train) + len(ds.y_test) == 50 and len(ds.y_test) > 0
    assert ds.num_classes == 3 and ds.name == "d"


def test_load_h5_with_test_arrays(tmp_path):
    h5py = pytest.importorskip("h5py")
    x, y = _arrays()
    xt, yt = _arrays(10, seed=1)
    p = tmp_path / "d.h5"
    with h5py.File(p, "w") as f:
        f["x"], f["y"], f["x_test"], f["y_test"] = x, y, xt, yt
    ds = data.load_file(p)
    np.testing.assert_allclose(ds.x_train, x.astype(np.float32))
    np.testing.assert_array_equal(ds.y_test, yt)


def test_load_file_scales_uint8_images(tmp_path):
    p = tmp_path / "img.npz"
    np.savez(p, x=np.full((4, 3, 3), 255, np.uint8), y=np.array([0, 1, 0, 1]))
    ds = data.load_file(p, test_fraction=0.5)
    assert ds.x_train.max() == 1.0 and ds.feature_shape == (3, 3)


def test_load_file_errors(tmp_path):
    with pytest.raises(cf.NotFoundError, match="does not exist"):
        data.load_file(tmp_path / "nope.npz")
    x, y = _arrays()
    p = tmp_path / "a.npz"
    np.savez(p, x=x, labels=y)
    with pytest.raises(cf.InvalidArgumentError, match="lacks 'y'.*has \\['labels', 'x'\\]"):
        data.load_file(p)
    np.savez(p, x=x, y=y[:-1])
    with pytest.raises(cf.InvalidArgumentError, match="x has 50 examples but y has 49"):
        data.load_file(p)
    np.savez(p, x=x, y=y, x_test=x)
    with pytest.raises(cf.InvalidArgumentError, match="has 'x_test' but not 'y_test'"):
        data.load_file(p)
    np.savez(p, x=x, y=y + 0.5)
    with pytest.raises(cf.InvalidArgumentError, match="integer class labels"):
        data.load_file(p)
    np.savez(p, x=x, y=y, x_test=x[:, :2], y_test=y)
    with pytest.raises(cf.InvalidArgumentError, match="x_test examples have shape"):
        data.load_file(p)
    q = tmp_path / "a.csv"
    q.write_text("1,2\n")
    with pytest.raises(cf.InvalidArgumentError, match="extension '.csv'"):
        data.load_file(q)
    bad = tmp_path / "bad.h5"
    bad.write_bytes(b"not hdf5")
    with pytest.raises(cf.InvalidArgumentError, match="as HDF5"):
        data.load_file(bad)


# -- synthetic -------------------------------------------------------------------------

def test_synthetic_is_deterministic_and_learnable():
    a = data.synthetic(2000, (20,), 4, seed=5)
    b = data.synthetic(2000, (20,), 4, seed=5)
    np.testing.assert_array_equal(a.x_train, b.x_train)
    assert a.x_train.dtype == np.float32 and a.y_train.dtype == np.int32
    assert set(np.unique(a.y_train)) == {0, 1, 2, 3}
    # labels are a (linear) function of x: least squares on one-hot targets recovers them
    onehot = np.eye(4)[a.y_train]
    w, *_ = np.linalg.lstsq(a.x_train, onehot, rcond=None)
    acc = np.mean(np.argmax(a.x_test @ w, 1) == a.y_test)
    assert acc > 0.8
    img = data.synthetic(10, (4, 4, 2), 3, test_fraction=0.2)
    assert img.x_train.shape == (8, 4, 4, 2)


# -- batching ----------------------------------------------------------------------------

def _xy(n):
    return np.arange(n, dtype=np.float32).reshape(n, 1), np.arange(n, dtype=np.int32)


def test_batches_cover_each_epoch_once_and_reshuffle():
    x, y = _xy(103)
    it = data.batches(x, y, 10, seed=7, num_epochs=2)
    assert len(it) == 11 and it.total_steps == 22
    got = list(it)
    assert len(got) == 22 and len(got[10][1]) == 3
    e0 = np.concatenate([b[1] for b in got[:11]])
    e1 = np.concatenate([b[1] for b in got[11:]])
    assert sorted(e0) == list(range(103)) and sorted(e1) == list(range(103))
    assert not np.array_equal(e0, e1)  # reshuffled
    for xb, yb in got:
        np.testing.assert_array_equal(xb[:, 0], yb)  # x and y stay paired
    assert it.position == (2, 0)


def test_epoch_order_is_a_function_of_seed_and_epoch():
    x, y = _xy(50)
    a = data.BatchIterator(x, y, 50, seed=3, num_epochs=5)
    orders = [b[1] for b in a]
    b = data.BatchIterator(x, y, 50, seed=3, num_epochs=5, epoch=3)
    np.testing.assert_array_equal(next(b)[1], orders[3])
    np.testing.assert_array_equal(a.epoch_indices(4), orders[4])
    c = data.BatchIterator(x, y, 50, seed=4, num_epochs=1)
    assert not np.array_equal(next(c)[1], orders[0])


def test_resume_from_position_reproduces_the_stream():
    x, y = _xy(37)
    full = [yb for _, yb in data.batches(x, y, 8, seed=1, num_epochs=3)]
    it = data.batches(x, y, 8, seed=1, num_epochs=3)
    first = [next(it)[1] for _ in range(7)]
    state = it.state_dict()
    assert state["epoch"] == 1 and state["offset"] == 16  # 5 batches of epoch 0, 2 of epoch 1
    resumed = data.batches(x, y, 8, seed=1, num_epochs=3)
    resumed.load_state_dict(state)
    rest = [yb for _, yb in resumed]
    for a, b in zip(first + rest, full):
        np.testing.assert_array_equal(a, b)
    assert len(first + rest) == len(full)
    other = data.batches(x, y, 8, seed=2)
    with pytest.raises(ValueError, match="seed=1"):
        other.load_state_dict(state)


def test_drop_remainder_and_no_shuffle():
    x, y = _xy(25)
    it = data.batches(x, y, 10, shuffle=False, drop_remainder=True, num_epochs=2)
    got = [yb for _, yb in it]
    assert [len(b) for b in got] == [10, 10, 10, 10]
    np.testing.assert_array_equal(got[0], np.arange(10))
    np.testing.assert_array_equal(got[2], np.arange(10))
    assert it.position == (2, 0)
    with pytest.raises(ValueError, match="no batches"):
        data.batches(x, y, 30, drop_remainder=True)


def test_infinite_iteration_rolls_over_epochs():
    x, y = _xy(10)
    it = data.batches(x, y, 4, num_epochs=None)
    assert it.total_steps is None
    sizes = [len(next(it)[1]) for _ in range(7)]
    assert sizes == [4, 4, 2, 4, 4, 2, 4] and it.position == (2, 4)


@pytest.mark.parametrize("shuffle", [True, False])
def test_shards_are_disjoint_equal_and_cover_the_epoch(shuffle):
    x, y = _xy(103)
    k = 4
    its = [data.batches(x, y, 8, shuffle=shuffle, seed=9, num_epochs=2, num_shards=k, shard_index=r)
           for r in range(k)]
    assert len({len(it) for it in its}) == 1  # every rank runs the same number of steps
    streams = [[yb for _, yb in it] for it in its]
    for epoch in range(2):
        per = [np.concatenate(s[epoch * len(its[0]):(epoch + 1) * len(its[0])]) for s in streams]
        assert all(len(p) == 103 // k for p in per)
        allv = np.concatenate(per)
        assert len(np.unique(allv)) == len(allv)  # disjoint
        # the union is the epoch's global order minus the remainder
        glob = data.BatchIterator(x, y, 103, shuffle=shuffle, seed=9).epoch_indices(epoch)
        np.testing.assert_array_equal(allv, glob[:k * (103 // k)])


def test_shard_resume_matches():
    x, y = _xy(60)
    full = [yb for _, yb in data.batches(x, y, 4, seed=2, num_epochs=2, num_shards=3, shard_index=2)]
    it = data.batches(x, y, 4, seed=2, num_epochs=2, num_shards=3, shard_index=2)
    head = [next(it)[1] for _ in range(6)]
    st = it.state_dict()
    again = data.batches(x, y, 4, seed=2, num_epochs=2, num_shards=3, shard_index=2)
    again.load_state_dict(st)
    tail = [yb for _, yb in again]
    assert all(np.array_equal(a, b) for a, b in zip(head + tail, full)) and len(head + tail) == len(full)
    wrong = data.batches(x, y, 4, seed=2, num_shards=2, shard_index=0)
    with pytest.raises(ValueError, match="num_shards"):
        wrong.load_state_dict(st)


def test_batch_iterator_argument_errors():
    x, y = _xy(10)
    with pytest.raises(ValueError, match="y has 9"):
        data.batches(x, y[:9], 2)
    with pytest.raises(ValueError, match="batch_size"):
        data.batches(x, y, 0)
    with pytest.raises(ValueError, match="shard_index"):
        data.batches(x, y, 2, num_shards=2, shard_index=2)
    with pytest.raises(ValueError, match="non-empty shards"):
        data.batches(x, y, 2, num_shards=11)
    with pytest.raises(ValueError, match="invalid position"):
        data.batches(x, y, 2, offset=11)


def test_unlabelled_batches():
    x, _ = _xy(5)
    got = list(data.batches(x, None, 2, shuffle=False))
    assert [b.shape for b in got] == [(2, 1), (2, 1), (1, 1)]
