"""Differential tests of the mutable lookup tables against TensorFlow's graph mode: the same
program (inserts, lookups, removes, sizes, exports, vector values, string keys, errors, a Saver
round trip) run in collflow and in tensorflow.compat.v1, results compared.  A MutableHashTable's
export is compared sorted (TF's order is its hash map's); a dense table's bucket arrays are
compared as they are.  Skipped cleanly without TensorFlow."""
import os

import numpy as np
import pytest

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import collflow.compat.v1 as cft  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()


def _norm(x):
    """Results as plain Python: bytes decoded, arrays as lists."""
    if isinstance(x, (list, tuple)):
        return [_norm(y) for y in x]
    if isinstance(x, np.ndarray):
        if x.dtype == object:
            return _norm(x.tolist())
        return x.tolist()
    if isinstance(x, bytes):
        return x.decode()
    if isinstance(x, np.generic):
        return x.item()
    return x


def _sorted_export(kv):
    k, v = _norm(kv)
    return sorted(zip(k, v))


def _steps(T, build):
    """build(T) -> list of ("run", fetch) / ("export", (keys, values)) steps, run in order in one Session."""
    out = []
    with T.Graph().as_default():
        steps = build(T)
        with T.Session() as s:
            for kind, f in steps:
                if kind == "err":
                    try:
                        s.run(f)
                        out.append("no error")
                    except Exception as e:  # the class and TF's message line
                        msg = getattr(e, "message", str(e))
                        out.append((type(e).__name__, [ln for ln in msg.splitlines() if "not allowed" in ln
                                                       or "Expected" in ln or "must" in ln or "cannot" in ln][:1]))
                    continue
                got = s.run(f)
                out.append(_sorted_export(got) if kind == "export" else _norm(got))
    return out


def _both(build):
    cf, tf = _steps(cft, build), _steps(tft, build)
    assert len(cf) == len(tf)
    for i, (a, b) in enumerate(zip(cf, tf)):
        # errors: the same class and TF's message line, exactly
        assert a == b and (not isinstance(a, tuple) or a[1]), (i, a, b)
    return cf


def _i64(T, x):
    return T.constant(x, T.int64)


def test_string_keys_insert_lookup_remove_export():
    def build(T):
        t = T.lookup.experimental.MutableHashTable(T.string, T.int64, -1)
        ins = t.insert(["a", "b", "c"], _i64(T, [1, 2, 3]))
        with T.control_dependencies([ins]):
            first = t.lookup(T.constant([["a", "z"], ["c", "b"]]))
        return [("run", first), ("run", t.size()), ("run", t.remove(T.constant(["b", "q"]))),
                ("run", t.lookup(T.constant(["a", "b"]))), ("run", t.insert(T.constant("d"), _i64(T, 4))),
                ("run", t.insert(T.constant([["e", "a"]]), _i64(T, [[5, 6]]))), ("run", t.size()),
                ("export", t.export()), ("run", t.lookup(T.constant("e")))]
    _both(build)


def test_vector_values_and_int_keys():
    def build(T):
        t = T.lookup.experimental.MutableHashTable(T.int64, T.float32, [0.0, -1.0], name="emb")
        t32 = T.lookup.experimental.MutableHashTable(T.int32, T.float64, 0.5, name="small")
        return [("run", t.insert(_i64(T, [1, 3, 5]), [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])),
                ("run", t.lookup(_i64(T, [[1, 2], [3, 5]]))), ("run", t.remove(_i64(T, [3]))),
                ("run", t.size()), ("export", t.export()), ("run", t.lookup(_i64(T, 5))),
                ("run", t32.insert(T.constant([7, 8]), T.constant([1.25, 2.5], T.float64))),
                ("run", t32.lookup(T.constant([8, 9, 7]))), ("export", t32.export())]
    _both(build)


def test_string_values_and_bool_values():
    def build(T):
        t = T.lookup.experimental.MutableHashTable(T.int64, T.string, "UNK")
        b = T.lookup.experimental.MutableHashTable(T.string, T.bool, False, name="flags")
        return [("run", t.insert(_i64(T, [1, 2]), ["one", "two"])), ("run", t.lookup(_i64(T, [2, 3, 1]))),
                ("export", t.export()), ("run", b.insert(["x"], [True])), ("run", b.lookup(["x", "y"]))]
    _both(build)


def test_dense_table_buckets():
    def build(T):
        d = T.lookup.experimental.DenseHashTable(T.int64, T.int64, -1, empty_key=0, deleted_key=-1,
                                                 initial_num_buckets=4)
        ds = T.lookup.experimental.DenseHashTable(T.string, T.float32, -1.0, empty_key="", deleted_key="$",
                                                  initial_num_buckets=8, name="words")
        dv = T.lookup.experimental.DenseHashTable(T.int64, T.float32, [0.0, 0.0], empty_key=[0, 0],
                                                  deleted_key=[-1, -1], initial_num_buckets=8, name="pairs")
        return [("run", d.insert(_i64(T, [4, 8, 12]), _i64(T, [1, 2, 3]))), ("run", d.export()),
                ("run", d.insert(_i64(T, [4]), _i64(T, [9]))), ("run", d.export()), ("run", d.size()),
                ("run", d.remove(_i64(T, [4, 77]))), ("run", d.export()),
                ("run", d.insert(_i64(T, [-5, 100, 3]), _i64(T, [7, 8, 9]))), ("run", d.export()),
                ("run", d.lookup(_i64(T, [100, 4, 8, -5, 6]))), ("run", d.size()), ("run", d.lookup(_i64(T, 8))),
                ("run", ds.insert(["x", "y", "zz", "hello world!", "abcdefgh"], [1.0, 2.0, 3.0, 4.0, 5.0])),
                ("run", ds.export()), ("run", ds.remove(T.constant(["zz"]))), ("run", ds.lookup(["zz", "x", "nope"])),
                ("run", ds.insert(["q", "r", "s"], [6.0, 7.0, 8.0])), ("run", ds.export()), ("run", ds.size()),
                ("run", dv.insert(_i64(T, [[1, 2], [3, 4], [5, 6]]), [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])),
                ("run", dv.export()), ("run", dv.lookup(_i64(T, [[1, 2], [3, 5]])))]
    _both(build)


def test_errors_match():
    def build(T):
        E = T.lookup.experimental
        t = E.MutableHashTable(T.string, T.int64, -1)
        v = E.MutableHashTable(T.int64, T.float32, [0.0, 1.0], name="vec")
        d = E.DenseHashTable(T.int64, T.int64, -1, empty_key=0, deleted_key=-1, initial_num_buckets=8)
        return [("err", t.insert(["a", "b"], _i64(T, [1, 2, 3]))),
                ("err", t.insert(T.constant(["a", "b"]), _i64(T, [[1, 2]]))),
                ("err", v.insert(_i64(T, [1]), [[5.0, 6.0, 7.0]])), ("err", v.insert(_i64(T, [1]), [5.0])),
                ("err", d.insert(_i64(T, [0]), _i64(T, [1]))), ("err", d.insert(_i64(T, [-1]), _i64(T, [1]))),
                ("err", d.lookup(_i64(T, [0]))), ("err", d.remove(_i64(T, [-1]))),
                ("err", d.lookup(_i64(T, [[1, 2]]))), ("run", t.size()), ("run", d.size())]
    _both(build)
    for T in (cft, tft):  # a Tensor of the wrong dtype: ValueError when the op is built
        with T.Graph().as_default():
            t = T.lookup.experimental.MutableHashTable(T.string, T.int64, -1)
            with pytest.raises(ValueError, match="Tensor conversion requested dtype string"):
                t.insert(T.constant([1]), _i64(T, [1]))


def test_construction_errors():
    def build(T):
        E = T.lookup.experimental
        return [("err", E.DenseHashTable(T.int64, T.int64, -1, empty_key=0, deleted_key=0).size()),
                ("err", E.DenseHashTable(T.int64, T.int64, -1, empty_key=0, deleted_key=1,
                                         initial_num_buckets=6, name="b6").size()),
                ("err", E.MutableHashTable(T.int64, T.float32, [[0.0, 1.0]], name="mat").size())]
    _both(build)


def _save_restore(T, tmp):
    E = T.lookup.experimental

    def build():
        v = T.Variable(2.5, name="v")
        t = E.MutableHashTable(T.string, T.float32, [0.0, 0.0], name="emb")
        d = E.DenseHashTable(T.int64, T.int64, -1, 0, -1, 8, name="dense")
        return v, t, d
    with T.Graph().as_default():
        v, t, d = build()
        saver = T.train.Saver()
        with T.Session() as s:
            s.run(T.global_variables_initializer())
            s.run([t.insert(["a", "b"], [[1.0, 2.0], [3.0, 4.0]]), d.insert(_i64(T, [3, 11, 19]), _i64(T, [1, 2, 3]))])
            s.run(d.remove(_i64(T, [11])))
            path = saver.save(s, os.path.join(tmp, "model"))
    names = sorted(n for n, _ in T.train.list_variables(path) if not n.endswith("@lengths"))
    with T.Graph().as_default():
        v, t, d = build()
        saver = T.train.Saver()
        with T.Session() as s:
            s.run(d.insert(_i64(T, [42]), _i64(T, [42])))
            saver.restore(s, path)
            return names, [_sorted_export(s.run(t.export()))] + _norm(s.run([d.export(), d.size(), v,
                                                                                 d.lookup(_i64(T, [3, 11, 19, 42]))]))


def test_saver_round_trip(tmp_path):
    cf_dir, tf_dir = tmp_path / "cf", tmp_path / "tf"
    cf_dir.mkdir()
    tf_dir.mkdir()
    cf_names, cf_vals = _save_restore(cft, str(cf_dir))
    tf_names, tf_vals = _save_restore(tft, str(tf_dir))
    assert cf_names == tf_names == ["dense-keys", "dense-values", "emb-keys", "emb-values", "v"]
    assert cf_vals == tf_vals
