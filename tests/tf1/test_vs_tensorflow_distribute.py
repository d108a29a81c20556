"""tf.distribute against TensorFlow: the same TF 1.x custom training loop (MirroredStrategy,
experimental_distribute_dataset / make_dataset_iterator, experimental_run, strategy.reduce,
ReplicaContext.all_reduce) run by TF with 1 and with 2 replicas (two virtual CPUs) and by
collflow in one process: with the loss scaled by the global batch TF's answers for 1 and 2
replicas agree, and collflow's matches them (its N-rank runs are checked against one process in
tests/test_distribute_two_worlds.py).  TF runs in a subprocess of its own (the virtual devices
must be configured before TF starts).  Skipped cleanly without TensorFlow."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

pytestmark = pytest.mark.timeout(300)

PROGRAM = r'''
import json, sys
import numpy as np
LIB = sys.argv[1]
REPLICAS = int(sys.argv[2])
OPT = sys.argv[3]
if LIB == "tf":
    import tensorflow as tf2
    cpu = tf2.config.list_physical_devices("CPU")[0]
    tf2.config.set_logical_device_configuration(cpu, [tf2.config.LogicalDeviceConfiguration()] * 2)
    import tensorflow.compat.v1 as tf
    tf.disable_eager_execution()
    devices = ["/cpu:%d" % i for i in range(REPLICAS)]
    config = tf.ConfigProto(device_count={"CPU": 2})
else:
    import collflow.compat.v1 as tf
    devices, config = None, None
rng = np.random.RandomState(5)
X = rng.randn(40, 3).astype(np.float32)
Y = (X @ rng.randn(3, 2)).astype(np.float32)
IDS = rng.randint(0, 6, size=(40,)).astype(np.int32)
GLOBAL = 10
strategy = tf.distribute.MirroredStrategy(devices) if devices else tf.distribute.MirroredStrategy()
with strategy.scope():
    ds = tf.data.Dataset.from_tensor_slices((X, Y, IDS)).batch(GLOBAL)
    it = strategy.make_dataset_iterator(ds)
    w = tf.get_variable("w", [3, 2], initializer=tf.constant_initializer(np.linspace(-1, 1, 6).reshape(3, 2)))
    emb = tf.get_variable("emb", [6, 2], initializer=tf.constant_initializer(np.linspace(0, 1, 12).reshape(6, 2)))
    opt = {"adam": lambda: tf.train.AdamOptimizer(0.05), "sgd": lambda: tf.train.GradientDescentOptimizer(0.1),
           "rmsprop": lambda: tf.train.RMSPropOptimizer(0.01, momentum=0.5)}[OPT]()

    def step(inputs):
        xb, yb, ib = inputs
        pred = tf.matmul(xb, w) + tf.gather(emb, ib)
        per_example = tf.reduce_sum(tf.square(pred - yb), axis=1)
        loss = tf.reduce_sum(per_example) * (1.0 / GLOBAL)
        train = opt.minimize(loss)
        ctx = tf.distribute.get_replica_context()
        rows = ctx.all_reduce(tf.distribute.ReduceOp.SUM, tf.cast(tf.shape(xb)[0], tf.float32))
        with tf.control_dependencies([train]):
            return tf.identity(loss), rows, per_example
    loss, rows, per_example = strategy.experimental_run(step, it)
    total = strategy.reduce(tf.distribute.ReduceOp.SUM, loss)
    rows_seen = strategy.reduce(tf.distribute.ReduceOp.MEAN, rows)
    mean_example = strategy.reduce(tf.distribute.ReduceOp.MEAN, per_example, axis=0)
    init = it.initialize()
with tf.Session(config=config) as sess:
    sess.run(tf.global_variables_initializer())
    sess.run(init)
    out = [sess.run([total, rows_seen, mean_example]) for _ in range(4)]
    ws = sess.run([w, emb])
print("RESULT" + json.dumps({"loss": [float(o[0]) for o in out], "rows": [float(o[1]) for o in out],
                             "mean_example": [float(o[2]) for o in out],
                             "w": np.asarray(ws[0]).tolist(), "emb": np.asarray(ws[1]).tolist()}))
'''


def _run(lib, replicas, opt, tmp_path):
    path = tmp_path / "prog.py"
    path.write_text(PROGRAM)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    p = subprocess.run([sys.executable, str(path), lib, str(replicas), opt], capture_output=True, text=True,
                       env=env, timeout=240)
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT")]
    assert p.returncode == 0 and line, p.stderr[-3000:]
    return json.loads(line[0][len("RESULT"):])


@pytest.mark.parametrize("opt", ["adam", "sgd", "rmsprop"])
def test_custom_loop_matches_tensorflow_one_and_two_replicas(opt, tmp_path):
    cf = _run("collflow", 1, opt, tmp_path)
    for replicas in (1, 2):
        tf = _run("tf", replicas, opt, tmp_path)
        for k in ("loss", "rows", "mean_example", "w", "emb"):
            np.testing.assert_allclose(np.asarray(cf[k]), np.asarray(tf[k]), rtol=2e-5, atol=1e-6,
                                       err_msg=f"{k} ({replicas} TF replicas)")
