"""tf.keras.utils (Progbar, the custom-object registry, serialize/deserialize_keras_object,
normalize, get_source_inputs, get_file, the enqueuers, plot_model), the callbacks BaseLogger /
ProgbarLogger / RemoteMonitor, models.clone_model / model_from_yaml: by hand, no TensorFlow."""
import contextlib
import hashlib
import http.server
import io
import json
import os
import tarfile
import threading
import zipfile

import numpy as np
import pytest

import collflow.compat.v1 as tf

keras = tf.keras


def _out(fn):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        fn()
    return buf.getvalue()


# -- Progbar ---------------------------------------------------------------------------------------

def test_progbar_bar_and_averages():
    def run():
        bar = keras.utils.Progbar(10, interval=0)
        bar.update(5, [("loss", 1.0)])
        bar.update(10, [("loss", 3.0)])
    text = _out(run)
    first, last = text.split("\r")[1], text.split("\r")[-1]
    assert first.startswith(" 5/10 [==============>...............] - ETA: ")
    assert first.rstrip("\b").endswith(" - loss: 1.0000")
    # values are averaged over the steps: (1 * 5 + 3 * 5) / 10
    assert last.startswith("10/10 [==============================] - 0s ") and last.endswith(" - loss: 2.0000\n")


def test_progbar_verbose2_stateful_add_and_unknown_target():
    def run():
        bar = keras.utils.Progbar(4, verbose=2, stateful_metrics=["acc"])
        bar.add(2, [("loss", 0.5), ("acc", 0.1)])
        bar.add(2, [("loss", 0.0001), ("acc", 0.7)])
    text = _out(run)
    assert text.startswith("4/4 - 0s - loss: 0.2500 - acc: 0.7000") and text.endswith("\n")
    text = _out(lambda: keras.utils.Progbar(None, interval=0).update(3, [("x", 1e-5)]))
    assert "      3/Unknown - 0s" in text and "x: 1.0000e-05" in text


# -- custom objects ----------------------------------------------------------------------------------

class MyDense(keras.layers.Dense):
    pass


def _my_act(x):
    return tf.nn.relu(x) * 2.0


def _model_json():
    with tf.Graph().as_default():
        m = keras.Sequential([MyDense(3, input_shape=(2,), activation="relu")])
        return m.to_json()


def test_custom_object_scope_with_model_from_json_and_load_model(tmp_path):
    text = _model_json()
    assert '"class_name": "MyDense"' in text
    with pytest.raises(ValueError, match="Unknown layer: MyDense"):
        with tf.Graph().as_default():
            keras.models.model_from_json(text)
    with keras.utils.CustomObjectScope({"MyDense": MyDense}):
        with tf.Graph().as_default():
            m = keras.models.model_from_json(text)
            assert isinstance(m.layers[0], MyDense)
            path = str(tmp_path / "m.h5")
            m.save(path)
    assert "MyDense" not in keras.utils.get_custom_objects()  # the scope restored the registry
    with keras.utils.custom_object_scope({"MyDense": MyDense}):
        with tf.Graph().as_default():
            assert isinstance(keras.models.load_model(path).layers[0], MyDense)
    keras.utils.get_custom_objects()["MyDense"] = MyDense
    try:
        with tf.Graph().as_default():
            assert isinstance(keras.models.model_from_json(text).layers[0], MyDense)
    finally:
        del keras.utils.get_custom_objects()["MyDense"]


def test_custom_activation_by_name_in_a_config():
    cfg = {"class_name": "Sequential", "config": {"name": "s", "layers": [
        {"class_name": "Dense", "config": {"units": 2, "activation": "my_act", "batch_input_shape": [None, 2],
                                           "name": "d"}}]}}
    with keras.utils.custom_object_scope({"my_act": _my_act}):
        with tf.Graph().as_default():
            m = keras.models.model_from_config(cfg)
            m.set_weights([np.eye(2, dtype=np.float32), np.zeros(2, np.float32)])
            out = m.predict(np.array([[1.0, -1.0]], np.float32))
    np.testing.assert_allclose(out, [[2.0, 0.0]])


def test_serialize_and_deserialize_keras_object():
    assert keras.utils.serialize_keras_object(None) is None
    assert keras.utils.serialize_keras_object(_my_act) == "_my_act"
    assert keras.utils.deserialize_keras_object("_my_act", custom_objects={"_my_act": _my_act}) is _my_act
    with pytest.raises(ValueError, match="Unknown activation: nope"):
        keras.utils.deserialize_keras_object("nope", printable_module_name="activation")
    with pytest.raises(ValueError, match="Could not interpret serialized object: 3"):
        keras.utils.deserialize_keras_object(3)

    class Thing:
        def __init__(self, a=1):
            self.a = a

        def get_config(self):
            return {"a": self.a}

        @classmethod
        def from_config(cls, cfg):
            return cls(**cfg)
    ser = keras.utils.serialize_keras_object(Thing(5))
    assert ser == {"class_name": "Thing", "config": {"a": 5}}
    assert keras.utils.deserialize_keras_object(ser, module_objects={"Thing": Thing}).a == 5
    with tf.Graph().as_default():
        layer = keras.utils.deserialize_keras_object(keras.utils.serialize_keras_object(keras.layers.Dense(7)))
        assert isinstance(layer, keras.layers.Dense) and layer.units == 7


def test_register_keras_serializable():
    @keras.utils.register_keras_serializable(package="T")
    def f(x):
        return x
    try:
        assert keras.utils.get_registered_name(f) == "T>f"
        assert keras.utils.get_registered_object("T>f") is f
        assert keras.utils.deserialize_keras_object("T>f") is f
    finally:
        del keras.utils.get_custom_objects()["T>f"]


def test_normalize_and_get_source_inputs():
    x = np.array([[3.0, 4.0], [0.0, 0.0]])
    np.testing.assert_allclose(keras.utils.normalize(x), [[0.6, 0.8], [0.0, 0.0]])
    np.testing.assert_allclose(keras.utils.normalize(x, axis=0, order=1), [[1.0, 1.0], [0.0, 0.0]])
    with tf.Graph().as_default():
        a, b = keras.Input((2,)), keras.Input((2,))
        h = keras.layers.Dense(2)(a)
        out = keras.layers.Add()([h, keras.layers.Dense(2)(b)])
        assert keras.utils.get_source_inputs(out) == [a, b]
        assert keras.utils.get_source_inputs(a) == [a]


# -- get_file --------------------------------------------------------------------------------------

def _read(path):
    with open(path) as f:
        return f.read()


def test_get_file_from_file_url_with_hashes_and_extract(tmp_path, capsys):
    src = tmp_path / "src"
    src.mkdir()
    payload = src / "data.txt"
    payload.write_text("hello keras")
    md5 = hashlib.md5(b"hello keras").hexdigest()
    sha = hashlib.sha256(b"hello keras").hexdigest()
    cache = tmp_path / "cache"
    cache.mkdir()  # Keras falls back to /tmp/.keras for a cache_dir it cannot write (a missing one too)
    path = keras.utils.get_file("data.txt", "file://" + str(payload), cache_dir=str(cache), md5_hash=md5)
    assert path == str(cache / "datasets" / "data.txt") and _read(path) == "hello keras"
    assert "Downloading data from file://" in capsys.readouterr().out
    # a cached file with the right hash is not fetched again; a wrong one is
    keras.utils.get_file("data.txt", "file://" + str(payload), cache_dir=str(cache), file_hash=sha)
    assert "Downloading" not in capsys.readouterr().out
    with open(path, "w") as f:
        f.write("stale")  # an outdated cached copy
    keras.utils.get_file("data.txt", "file://" + str(payload), cache_dir=str(cache), file_hash=sha,
                         cache_subdir="datasets")
    assert ("A local file was found, but it seems to be incomplete or outdated because the auto file hash does not "
            "match the original value of " + sha) in capsys.readouterr().out
    assert _read(path) == "hello keras"
    # archives: tar (untar=True) and zip (extract=True)
    tar_path = src / "arch.tar.gz"
    with tarfile.open(tar_path, "w:gz") as t:
        t.add(payload, arcname="inner/data.txt")
    out_dir = keras.utils.get_file("arch", "file://" + str(tar_path), untar=True, cache_dir=str(cache))
    assert out_dir == str(cache / "datasets" / "arch")
    assert (cache / "datasets" / "inner" / "data.txt").read_text() == "hello keras"
    zip_path = src / "z.zip"
    with zipfile.ZipFile(zip_path, "w") as z:
        z.writestr("zipped.txt", "zz")
    keras.utils.get_file("z.zip", "file://" + str(zip_path), extract=True, cache_dir=str(cache),
                         cache_subdir="other")
    assert (cache / "other" / "zipped.txt").read_text() == "zz"


def test_get_file_unreachable_origin_raises_keras_message(tmp_path):
    (tmp_path / "datasets").mkdir()
    with pytest.raises(Exception, match="URL fetch failure on file:///nonexistent/x"):
        keras.utils.get_file("x", "file:///nonexistent/x", cache_dir=str(tmp_path))
    assert not os.path.exists(tmp_path / "datasets" / "x")


# -- enqueuers ---------------------------------------------------------------------------------------

class _Seq(keras.utils.Sequence):
    def __init__(self):
        self.epochs = 0

    def __len__(self):
        return 5

    def __getitem__(self, i):
        return np.full((2, 1), i), np.full((2,), i)

    def on_epoch_end(self):
        self.epochs += 1


def test_ordered_enqueuer_keeps_order_across_epochs():
    seq = _Seq()
    enq = keras.utils.OrderedEnqueuer(seq)
    enq.start(workers=3, max_queue_size=4)
    gen = enq.get()
    got = [int(next(gen)[1][0]) for _ in range(12)]
    enq.stop()
    assert got == [0, 1, 2, 3, 4] * 2 + [0, 1]
    assert seq.epochs >= 2 and not enq.is_running()


def test_ordered_enqueuer_shuffle_and_errors():
    np.random.seed(0)
    seq = _Seq()
    enq = keras.utils.OrderedEnqueuer(seq, shuffle=True)
    enq.start(workers=2, max_queue_size=2)
    gen = enq.get()
    first = sorted(int(next(gen)[1][0]) for _ in range(5))
    enq.stop()
    assert first == [0, 1, 2, 3, 4]

    class Bad(_Seq):
        def __getitem__(self, i):
            raise KeyError("boom")
    enq = keras.utils.OrderedEnqueuer(Bad())
    enq.start()
    with pytest.raises(KeyError, match="boom"):
        next(enq.get())
    enq.stop()


def test_generator_enqueuer_yields_every_item_then_stops():
    def gen():
        for i in range(7):
            yield i
    enq = keras.utils.GeneratorEnqueuer(gen())
    enq.start(workers=2, max_queue_size=3)
    assert sorted(enq.get()) == list(range(7))
    assert not enq.is_running()

    def bad():
        yield 1
        raise RuntimeError("gen failed")
    enq = keras.utils.GeneratorEnqueuer(bad())
    enq.start()
    with pytest.raises(RuntimeError, match="gen failed"):
        list(enq.get())


# -- plot_model ----------------------------------------------------------------------------------

def test_plot_model_without_pydot_raises_keras_import_error(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "pydot", None)
    with tf.Graph().as_default():
        m = keras.Sequential([keras.layers.Dense(2, input_shape=(3,))])
        with pytest.raises(ImportError, match="Failed to import pydot. You must install pydot and graphviz"):
            keras.utils.plot_model(m, to_file="x.png")
        with pytest.raises(ImportError, match="pydot"):
            keras.utils.model_to_dot(m)


def test_model_to_dot_with_a_stand_in_pydot(monkeypatch):
    import sys
    import types

    class Dot:
        def __init__(self):
            self.nodes, self.edges, self.attrs = [], [], {}

        def create(self):
            return b""

        def set(self, k, v):
            self.attrs[k] = v

        def set_node_defaults(self, **kw):
            pass

        def add_node(self, n):
            self.nodes.append(n)

        def add_edge(self, e):
            self.edges.append(e)

        def write(self, path, format):  # noqa: A002
            with open(path, "w") as f:
                f.write(format)
    fake = types.SimpleNamespace(Dot=Dot, Node=lambda name, label: (name, label), Edge=lambda a, b: (a, b))
    monkeypatch.setitem(sys.modules, "pydot", fake)
    with tf.Graph().as_default():
        i = keras.Input((3,), name="inp")
        o = keras.layers.Dense(2, name="d2")(keras.layers.Dense(4, name="d1")(i))
        dot = keras.utils.model_to_dot(keras.Model(i, o), show_shapes=True)
    labels = [n[1] for n in dot.nodes]
    assert labels[0].startswith("inp: InputLayer") and any(la.startswith("d1: Dense") for la in labels)
    assert "(?, 4)" in labels[1] and len(dot.edges) == 2


# -- callbacks -------------------------------------------------------------------------------------

def _data():
    r = np.random.RandomState(0)
    return r.rand(40, 3).astype(np.float32), r.rand(40, 1).astype(np.float32)


def _model():
    m = keras.Sequential([keras.layers.Dense(4, input_shape=(3,)), keras.layers.Dense(1)])
    m.compile(keras.optimizers.SGD(0.1), "mse", metrics=["mae"])
    return m


def test_base_logger_averages_batch_logs():
    x, y = _data()
    seen = []

    class Grab(keras.callbacks.Callback):
        def on_batch_end(self, batch, logs=None):
            seen.append((logs["size"], logs["loss"]))
    with tf.Graph().as_default():
        m = _model()
        logger = keras.callbacks.BaseLogger()
        logs_at_end = {}
        grab_end = keras.callbacks.LambdaCallback(on_epoch_end=lambda e, logs: logs_at_end.update(logs))
        m.fit(x, y, batch_size=16, epochs=1, verbose=0, shuffle=False, callbacks=[Grab(), logger, grab_end])
    expected = sum(s * v for s, v in seen) / sum(s for s, _ in seen)
    assert logger.seen == 40
    np.testing.assert_allclose(logs_at_end["loss"], expected, rtol=1e-6)


def test_fit_verbose_uses_the_progbar_logger():
    x, y = _data()
    with tf.Graph().as_default():
        m = _model()
        text = _out(lambda: m.fit(x, y, batch_size=16, epochs=2, verbose=1, validation_split=0.25))
        assert text.startswith("Train on 30 samples, validate on 10 samples\nEpoch 1/2\n") and "Epoch 2/2\n" in text
        assert "30/30 [==============================] - 0s" in text and "us/sample" in text or "ms/sample" in text
        assert " - val_loss: " in text and " - val_" + m.metrics_names[1] + ": " in text
        text = _out(lambda: m.fit(x, y, batch_size=16, epochs=1, verbose=2))
        assert "Epoch" not in text and text.startswith("Train on 40 samples\n40/40 - 0s - loss: ")
        assert text.count("\n") == 2
        assert _out(lambda: m.fit(x, y, batch_size=16, epochs=1, verbose=0)) == ""


def test_progbar_logger_counts_steps_of_a_sequence():
    class Seq(keras.utils.Sequence):
        def __len__(self):
            return 3

        def __getitem__(self, i):
            return _data()[0][:8], _data()[1][:8]
    with tf.Graph().as_default():
        m = _model()
        text = _out(lambda: m.fit_generator(Seq(), epochs=1, verbose=1))
    assert "3/3 [==============================]" in text and "/step" in text


class _Handler(http.server.BaseHTTPRequestHandler):
    received = []

    def do_POST(self):  # noqa: N802
        body = self.rfile.read(int(self.headers["Content-Length"]))
        _Handler.received.append((self.path, self.headers["Content-Type"], body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_remote_monitor_posts_each_epoch_and_survives_no_server():
    server = http.server.HTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    root = f"http://127.0.0.1:{server.server_address[1]}"
    x, y = _data()
    _Handler.received.clear()
    try:
        with tf.Graph().as_default():
            m = _model()
            m.fit(x, y, epochs=2, verbose=0, callbacks=[keras.callbacks.RemoteMonitor(root=root)])
            m.fit(x, y, epochs=1, verbose=0,
                  callbacks=[keras.callbacks.RemoteMonitor(root=root, path="/j", send_as_json=True)])
    finally:
        server.shutdown()
        server.server_close()
    assert len(_Handler.received) == 3
    path, ctype, body = _Handler.received[0]
    from urllib.parse import parse_qs
    data = json.loads(parse_qs(body.decode())["data"][0])
    assert path == "/publish/epoch/end/" and ctype == "application/x-www-form-urlencoded"
    assert data["epoch"] == 0 and set(data) == {"epoch"} | set(m.metrics_names)
    path, ctype, body = _Handler.received[2]
    assert path == "/j" and ctype == "application/json" and json.loads(body)["epoch"] == 0
    # nobody listening: a logged warning, training goes on
    with tf.Graph().as_default():
        m = _model()
        h = m.fit(x, y, epochs=1, verbose=0, callbacks=[keras.callbacks.RemoteMonitor(root=root)])
    assert len(h.history["loss"]) == 1


# -- clone_model -----------------------------------------------------------------------------------

def test_clone_sequential_new_weights_same_structure():
    x, _ = _data()
    with tf.Graph().as_default():
        m = _model()
        c = keras.models.clone_model(m)
        assert [type(la) for la in c.layers] == [type(la) for la in m.layers]
        assert [w.shape for w in c.get_weights()] == [w.shape for w in m.get_weights()]
        assert not np.allclose(c.get_weights()[0], m.get_weights()[0])  # new, freshly initialized
        assert not set(map(id, c.weights)) & set(map(id, m.weights))
        c.set_weights(m.get_weights())
        np.testing.assert_allclose(c.predict(x), m.predict(x), rtol=1e-6)


def test_clone_functional_shared_layer_input_tensors_and_clone_function():
    r = np.random.RandomState(1)
    xa, xb = r.rand(5, 3).astype(np.float32), r.rand(5, 3).astype(np.float32)
    with tf.Graph().as_default():
        a, b = keras.Input((3,)), keras.Input((3,))
        shared = keras.layers.Dense(4, activation="tanh")
        out = keras.layers.Dense(1)(keras.layers.Concatenate()([shared(a), shared(b)]))
        m = keras.Model([a, b], out)
        c = keras.models.clone_model(m)
        assert len(c.layers) == len(m.layers) and len(c.weights) == len(m.weights)
        c.set_weights(m.get_weights())
        np.testing.assert_allclose(c.predict([xa, xb]), m.predict([xa, xb]), rtol=1e-6)
        ta, tb = tf.placeholder(tf.float32, [None, 3]), tf.placeholder(tf.float32, [None, 3])
        c2 = keras.models.clone_model(m, input_tensors=[ta, tb])
        assert c2.inputs == [ta, tb]
        # clone_function: keep (share) the Dense layers, remake the rest
        c3 = keras.models.clone_model(m, clone_function=lambda la: la if isinstance(la, keras.layers.Dense)
                                      else keras.utils.deserialize_keras_object(keras.utils.serialize_keras_object(la)))
        assert set(map(id, c3.weights)) == set(map(id, m.weights))
        np.testing.assert_allclose(c3.predict([xa, xb]), m.predict([xa, xb]), rtol=1e-6)


def test_clone_sequential_on_input_tensor():
    with tf.Graph().as_default():
        m = _model()
        t = keras.Input((3,))
        c = keras.models.clone_model(m, input_tensors=t)
        assert c.inputs == [t] and c.outputs[0].shape.as_list() == [None, 1]
        with pytest.raises(ValueError, match="at most one tensor"):
            keras.models.clone_model(m, input_tensors=[t, t])
        with pytest.raises(ValueError, match="Expected `model` argument to be a `Model` instance"):
            keras.models.clone_model(keras.layers.Dense(2))


def test_yaml_needs_pyyaml():
    try:
        import yaml  # noqa: F401
        pytest.skip("PyYAML is installed")
    except ImportError:
        pass
    with tf.Graph().as_default():
        m = _model()
        with pytest.raises(ImportError, match=r"Requires yaml module installed \(`pip install pyyaml`\)."):
            m.to_yaml()
    with pytest.raises(ImportError, match="pyyaml"):
        keras.models.model_from_yaml("a: 1")


def test_to_ordinal_and_interactive_logging(caplog):
    np.testing.assert_array_equal(keras.utils.to_ordinal([0, 2, 1], 3), [[0, 0], [1, 1], [1, 0]])
    assert keras.utils.to_ordinal([[1], [3]]).shape == (2, 3)
    assert keras.utils.is_interactive_logging_enabled()
    keras.utils.disable_interactive_logging()
    try:
        assert _out(lambda: keras.utils.Progbar(2, verbose=2).update(2, [("loss", 1.0)])) == ""
    finally:
        keras.utils.enable_interactive_logging()
    assert keras.utils.legacy.serialize_keras_object(_my_act) == "_my_act"


def _my_loss(y, p):
    return keras.backend.mean(keras.backend.abs(y - p))


def test_load_model_compiles_with_a_scoped_custom_loss(tmp_path):
    path = str(tmp_path / "m.h5")
    with tf.Graph().as_default():
        m = keras.Sequential([keras.layers.Dense(1, input_shape=(2,))])
        m.compile("sgd", _my_loss)
        m.save(path)
    with tf.Graph().as_default():
        with keras.utils.custom_object_scope({"_my_loss": _my_loss}):
            assert keras.models.load_model(path).loss is _my_loss


def test_convert_all_kernels_and_multi_gpu_model():
    with tf.Graph().as_default():
        m = keras.Sequential([keras.layers.Conv2D(2, 3, input_shape=(5, 5, 1)), keras.layers.Flatten(),
                              keras.layers.Dense(1)])
        before = m.get_weights()
        keras.utils.convert_all_kernels_in_model(m)
        after = m.get_weights()
        np.testing.assert_array_equal(after[0], before[0][::-1, ::-1])
        np.testing.assert_array_equal(after[2], before[2])  # Dense kernels stay
        with pytest.raises(ValueError, match="call `multi_gpu_model` with `gpus >= 2`"):
            keras.utils.multi_gpu_model(m, 1)
        with pytest.raises(ValueError, match="we expect the following devices to be available"):
            keras.utils.multi_gpu_model(m, 2)


def test_clone_model_with_nested_models():
    x = np.random.RandomState(5).rand(4, 2).astype(np.float32)
    with tf.Graph().as_default():
        inner = keras.Sequential([keras.layers.Dense(3, input_shape=(2,), activation="relu")])
        i = keras.Input((2,))
        m = keras.Model(i, keras.layers.Dense(1)(inner(i)))
        c = keras.models.clone_model(m)
        assert [type(la).__name__ for la in c.layers] == ["InputLayer", "Sequential", "Dense"]
        assert c.layers[1] is not inner
        c.set_weights(m.get_weights())
        np.testing.assert_allclose(c.predict(x), m.predict(x), rtol=1e-6)
        s = keras.Sequential([inner, keras.layers.Dense(2)])
        cs = keras.models.clone_model(s)
        cs.set_weights(s.get_weights())
        np.testing.assert_allclose(cs.predict(x), s.predict(x), rtol=1e-6)


def test_saving_namespace_names():
    for name in ("custom_object_scope", "get_custom_objects", "serialize_keras_object", "deserialize_keras_object",
                 "register_keras_serializable", "get_registered_name", "get_registered_object"):
        assert getattr(keras.saving, name) is getattr(keras.utils, name)
