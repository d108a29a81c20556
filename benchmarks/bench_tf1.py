"""TF1 programs from one source: collflow against TensorFlow 1.x's graph runtime and PyTorch.

    python benchmarks/bench_tf1.py [--repeats 5] [--steps 10] [--threads 1] [--only conv,lstm,...]

Each model is written once against TensorFlow 1.x's API, `build(tf)`, and built twice: with
`import collflow.compat.v1 as tf` and with `import tensorflow.compat.v1 as tf` (graph mode,
a Session with intra_op_parallelism_threads = --threads, inter_op 1), twice: with TF's default
kernels and with its oneDNN kernels forced on (TF_ENABLE_ONEDNN_OPTS=1; TF turns them on by
itself only on CPUs with AVX-512 or newer); "x TF1 best" compares with the faster of the two,
the peer's strongest configuration on the host.  PyTorch (eager, CPU,
torch.set_num_threads(--threads)) runs the same computation written the PyTorch way.
The models:

- conv: the MNIST tutorial's convolutional net ("Deep MNIST for experts"): 28x28x1 input,
  5x5 conv 32 + ReLU + 2x2 max pool, 5x5 conv 64 + ReLU + pool, dense 1024 + ReLU, dropout
  (keep 0.5), dense 10; softmax cross-entropy, Adam 1e-4, batch 50.
- lstm / lstm-small: a character model: embedding 64, one LSTM layer (hidden 256, batch 64,
  35 steps; small: hidden 128, batch 32, 50 steps) through tf.nn.dynamic_rnn with
  tf.nn.rnn_cell.LSTMCell (torch: nn.LSTM), softmax over 100 symbols, Adam.
- gru: the lstm model with tf.nn.rnn_cell.GRUCell (torch: nn.GRU, which applies the reset
  gate after the recurrent product instead of before: the same work).
- lstm-peephole: the lstm model with LSTMCell(use_peepholes=True, cell_clip=3.0) (no torch
  row: nn.LSTM has no peepholes).
- lstm-proj: the lstm model with LSTMCell(num_proj=128) (torch: nn.LSTM(proj_size=128)).
- mlp: 784-1024-1024-10 ReLU, sparse softmax cross-entropy, SGD, batch 256.
- loop: tf.while_loop whose body is v = v * 0.5 + 1 on 16 floats, 200 iterations, forward only
  and with the gradient (per-iteration microseconds; no torch row).

Every row is the median over --repeats repeats of the median step time of --steps steps; the
repeats go round-robin over the implementations, and each block of steps starts after a
short pause and two untimed steps, so one library's spinning threads do not slow the next
(see bench_step.py).  Each library runs each model in a process of its own
(common.IsolatedRunner), as a user trains one model: none runs with another's process-wide
settings (collflow fixes glibc malloc's thresholds), and none is sped up by what ran before
it in the process (glibc's dynamic thresholds: TF1's LSTM step took 68 ms alone and 58 ms
after the conv net had run in its process).  TensorFlow needs `pip install tensorflow-cpu tf_keras` and
TF_USE_LEGACY_KERAS=1 (set here) for TF1's RNN cells; its rows are skipped without it.
Results: benchmarks/results/bench_tf1.json.
"""
from __future__ import annotations

import argparse
import os
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import sys  # noqa: E402

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")      # TF1's rnn_cell.LSTMCell lives in tf_keras
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# BLAS reads its thread count when NumPy loads: set it before (threadpoolctl, when installed,
# would limit it later too)
_THREADS = next((sys.argv[i + 1] for i, a in enumerate(sys.argv[:-1]) if a == "--threads"), "1")
for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = _THREADS

import common  # noqa: E402  (sets sys.path, disables output checking)
import numpy as np  # noqa: E402

QUIET_S = 0.3


# -- the models, written once against TF1's API ------------------------------------------------

def build_conv(tf: Any) -> Dict[str, Any]:
    x = tf.placeholder(tf.float32, [None, 784])
    y_ = tf.placeholder(tf.float32, [None, 10])
    keep_prob = tf.placeholder(tf.float32)

    def weight(shape: List[int], seed: int) -> Any:
        return tf.Variable(tf.truncated_normal(shape, stddev=0.1, seed=seed))

    def bias(shape: List[int]) -> Any:
        return tf.Variable(tf.constant(0.1, shape=shape))

    def conv2d(a: Any, w: Any) -> Any:
        return tf.nn.conv2d(a, w, strides=[1, 1, 1, 1], padding="SAME")

    def pool(a: Any) -> Any:
        return tf.nn.max_pool(a, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")

    img = tf.reshape(x, [-1, 28, 28, 1])
    h1 = pool(tf.nn.relu(conv2d(img, weight([5, 5, 1, 32], 1)) + bias([32])))
    h2 = pool(tf.nn.relu(conv2d(h1, weight([5, 5, 32, 64], 2)) + bias([64])))
    flat = tf.reshape(h2, [-1, 7 * 7 * 64])
    fc = tf.nn.relu(tf.matmul(flat, weight([7 * 7 * 64, 1024], 3)) + bias([1024]))
    drop = tf.nn.dropout(fc, keep_prob)
    logits = tf.matmul(drop, weight([1024, 10], 4)) + bias([10])
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y_, logits=logits))
    train = tf.train.AdamOptimizer(1e-4).minimize(loss)
    rng = np.random.default_rng(0)
    xs = rng.uniform(0, 1, (50, 784)).astype(np.float32)
    ys = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 50)]
    return {"fetch": [loss, train], "feed": {x: xs, y_: ys, keep_prob: 0.5}}


def build_lstm(tf: Any, hidden: int = 256, batch: int = 64, seq: int = 35, cell: str = "lstm") -> Dict[str, Any]:
    vocab, embed = 100, 64
    ids = tf.placeholder(tf.int32, [batch, seq])
    targets = tf.placeholder(tf.int32, [batch, seq])
    emb = tf.get_variable("embedding", [vocab, embed], initializer=tf.random_uniform_initializer(-0.1, 0.1, seed=1))
    inputs = tf.nn.embedding_lookup(emb, ids)
    rnn_cell = (tf.nn.rnn_cell.LSTMCell(hidden) if cell == "lstm" else
                tf.nn.rnn_cell.LSTMCell(hidden, use_peepholes=True, cell_clip=3.0) if cell == "peephole" else
                tf.nn.rnn_cell.LSTMCell(hidden, num_proj=hidden // 2) if cell == "projection" else
                tf.nn.rnn_cell.GRUCell(hidden))
    outputs, _ = tf.nn.dynamic_rnn(rnn_cell, inputs, dtype=tf.float32)
    out_depth = hidden // 2 if cell == "projection" else hidden
    w = tf.get_variable("softmax_w", [out_depth, vocab], initializer=tf.random_uniform_initializer(-0.1, 0.1, seed=2))
    b = tf.get_variable("softmax_b", [vocab], initializer=tf.zeros_initializer())
    logits = tf.matmul(tf.reshape(outputs, [-1, out_depth]), w) + b
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.reshape(targets, [-1]),
                                                                         logits=logits))
    train = tf.train.AdamOptimizer(1e-3).minimize(loss)
    rng = np.random.default_rng(0)
    data = rng.integers(0, vocab, (batch, seq + 1)).astype(np.int32)
    return {"fetch": [loss, train], "feed": {ids: data[:, :-1], targets: data[:, 1:]}}


def build_mlp(tf: Any) -> Dict[str, Any]:
    x = tf.placeholder(tf.float32, [None, 784])
    y = tf.placeholder(tf.int32, [None])
    h = x
    for k, (i, o) in enumerate([(784, 1024), (1024, 1024)]):
        w = tf.Variable(tf.truncated_normal([i, o], stddev=0.05, seed=10 + k))
        h = tf.nn.relu(tf.matmul(h, w) + tf.Variable(tf.zeros([o])))
    logits = tf.matmul(h, tf.Variable(tf.truncated_normal([1024, 10], stddev=0.05, seed=20))) + tf.Variable(tf.zeros([10]))
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    train = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
    rng = np.random.default_rng(0)
    return {"fetch": [loss, train], "feed": {x: rng.normal(size=(256, 784)).astype(np.float32),
                                              y: rng.integers(0, 10, 256).astype(np.int32)}}


LOOP_ITERS = 200


def build_loop(tf: Any, grad: bool) -> Dict[str, Any]:
    x = tf.placeholder(tf.float32, [16])
    v = tf.while_loop(lambda i, v: i < LOOP_ITERS, lambda i, v: (i + 1, v * 0.5 + 1.0), [tf.constant(0), x])[1]
    fetch = [v, tf.gradients(tf.reduce_sum(v), x)[0]] if grad else v
    return {"fetch": fetch, "feed": {x: np.ones(16, np.float32)}}


MODELS: Dict[str, Callable[[Any], Dict[str, Any]]] = {
    "conv": build_conv,
    "lstm": build_lstm,
    "lstm-small": lambda tf: build_lstm(tf, hidden=128, batch=32, seq=50),
    "gru": lambda tf: build_lstm(tf, cell="gru"),
    "lstm-peephole": lambda tf: build_lstm(tf, cell="peephole"),
    "lstm-proj": lambda tf: build_lstm(tf, cell="projection"),
    "mlp": build_mlp,
    "loop": lambda tf: build_loop(tf, False),
    "loop fwd+bwd": lambda tf: build_loop(tf, True),
}


# -- runners ----------------------------------------------------------------------------------------

def collflow_step(name: str, threads: int) -> Callable[[], Any]:
    import collflow.compat.v1 as tf
    g = tf.Graph()
    with g.as_default():
        m = MODELS[name](tf)
        init = tf.global_variables_initializer()
    sess = tf.Session(graph=g)
    sess.run(init)
    return lambda: sess.run(m["fetch"], m["feed"])


def tf_step(name: str, threads: int, onednn: Optional[bool] = None) -> Optional[Callable[[], Any]]:
    """TF1's step; onednn True/False forces TF's oneDNN kernels on/off (TF_ENABLE_ONEDNN_OPTS,
    read when TensorFlow loads: each runner is a process of its own), None leaves TF's
    default (on only where the CPU has AVX-512 or newer: off on AVX2 hosts such as AMD EPYC,
    where forcing it on made the conv step 131 -> 66 ms)."""
    if onednn is not None:
        os.environ["TF_ENABLE_ONEDNN_OPTS"] = "1" if onednn else "0"
    try:
        import tensorflow.compat.v1 as tf
    except ImportError:
        return None
    tf.disable_eager_execution()
    g = tf.Graph()
    with g.as_default():
        m = MODELS[name](tf)
        init = tf.global_variables_initializer()
    cfg = tf.ConfigProto(intra_op_parallelism_threads=threads, inter_op_parallelism_threads=1)
    sess = tf.Session(graph=g, config=cfg)
    sess.run(init)
    return lambda: sess.run(m["fetch"], m["feed"])


def tf_onednn_step(name: str, threads: int) -> Optional[Callable[[], Any]]:
    return tf_step(name, threads, onednn=True)


def torch_step(name: str, threads: int) -> Optional[Callable[[], Any]]:
    torch = common.try_import_torch()
    if torch is None or name.startswith("loop"):
        return None
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    nn = torch.nn
    rng = np.random.default_rng(0)
    if name == "conv":
        class Net(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.c1, self.c2 = nn.Conv2d(1, 32, 5, padding=2), nn.Conv2d(32, 64, 5, padding=2)
                self.f1, self.f2, self.drop = nn.Linear(7 * 7 * 64, 1024), nn.Linear(1024, 10), nn.Dropout(0.5)

            def forward(self, a: Any) -> Any:
                a = torch.max_pool2d(torch.relu(self.c1(a)), 2)
                a = torch.max_pool2d(torch.relu(self.c2(a)), 2)
                return self.f2(self.drop(torch.relu(self.f1(a.flatten(1)))))
        model = Net()
        opt = torch.optim.Adam(model.parameters(), 1e-4)
        xb = torch.tensor(rng.uniform(0, 1, (50, 1, 28, 28)).astype(np.float32))
        yb = torch.tensor(rng.integers(0, 10, 50))
        lossf = nn.CrossEntropyLoss()
    elif name in ("lstm", "lstm-small", "gru", "lstm-proj"):  # torch's LSTM has no peepholes
        hidden, batch, seq = (128, 32, 50) if name == "lstm-small" else (256, 64, 35)
        rnn_type = nn.GRU if name == "gru" else nn.LSTM
        extra = {"proj_size": hidden // 2} if name == "lstm-proj" else {}
        out_depth = hidden // 2 if name == "lstm-proj" else hidden

        class Char(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.emb, self.rnn, self.out = nn.Embedding(100, 64), rnn_type(64, hidden, batch_first=True, **extra), \
                    nn.Linear(out_depth, 100)

            def forward(self, a: Any) -> Any:
                return self.out(self.rnn(self.emb(a))[0].reshape(-1, out_depth))
        model = Char()
        opt = torch.optim.Adam(model.parameters(), 1e-3)
        data = torch.tensor(rng.integers(0, 100, (batch, seq + 1)))
        xb, yb = data[:, :-1], data[:, 1:].reshape(-1)
        lossf = nn.CrossEntropyLoss()
    elif name == "mlp":
        model = nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
        opt = torch.optim.SGD(model.parameters(), 0.01)
        xb = torch.tensor(rng.normal(size=(256, 784)).astype(np.float32))
        yb = torch.tensor(rng.integers(0, 10, 256))
        lossf = nn.CrossEntropyLoss()
    else:
        return None

    def step() -> Any:
        opt.zero_grad()
        loss = lossf(model(xb), yb)
        loss.backward()
        opt.step()
        return loss
    return step


# -- main -------------------------------------------------------------------------------------------

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--steps", type=int, default=10, help="timed steps per block (median taken)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--only", default="", help="comma-separated model names (default: all)")
    args = ap.parse_args()
    limiter = None
    try:
        from threadpoolctl import threadpool_limits
        limiter = threadpool_limits(limits=args.threads, user_api="blas")
    except ImportError:
        print("note: threadpoolctl is not installed; BLAS uses its default thread count")
    names = [n for n in MODELS if not args.only or n in args.only.split(",")]
    notes = []
    # each library and model in a process of its own (common.IsolatedRunner): collflow's
    # allocator policy would otherwise speed up its peers too, and glibc's dynamic malloc
    # thresholds make a model faster after a bigger one ran in the same process (TF1's LSTM
    # step: 68 ms alone, 58 ms after the conv net); the blocks still interleave
    workers: Dict[Tuple[str, str], common.IsolatedRunner] = {}
    times: Dict[str, Dict[str, List[float]]] = {n: {} for n in names}
    try:
        for n in names:
            for impl, factory in (("collflow", collflow_step), ("tf1", tf_step), ("tf1-onednn", tf_onednn_step),
                                  ("torch", torch_step)):
                w = common.IsolatedRunner(factory, [n], (args.threads,))
                if w.names:
                    workers[(n, impl)] = w
                    times[n][impl] = []
                else:
                    w.close()
                    if impl.startswith("tf1"):
                        notes.append("tensorflow is not installed: no TF1 rows")
        for _ in range(args.repeats):
            for n in names:
                for impl in times[n]:
                    time.sleep(QUIET_S)
                    times[n][impl].append(common.median(workers[(n, impl)].time(n, args.steps)))
    finally:
        for w in workers.values():
            w.close()
    rows, out = [], []
    for n in names:
        per = LOOP_ITERS if n.startswith("loop") else 1
        unit = "us/iter" if per > 1 else "ms/step"
        scale = 1e6 / per if per > 1 else 1e3
        res = {k: common.summarize([v * scale for v in vs]) for k, vs in times[n].items()}
        c = res["collflow"]["median"]
        tf_default = res.get("tf1", {}).get("median")
        tf_onednn = res.get("tf1-onednn", {}).get("median")
        # the peer's strongest configuration: the faster of TF's default and oneDNN forced on
        tfm = min((t for t in (tf_default, tf_onednn) if t), default=None)
        tom = res.get("torch", {}).get("median")
        rows.append([n, unit, c, tf_default, tf_onednn, tom, c / tfm if tfm else None, c / tom if tom else None])
        out.append({"model": n, "unit": unit, **{k: v for k, v in res.items()}, "tf1_best_median": tfm,
                    "x_tf1": c / tfm if tfm else None, "x_torch": c / tom if tom else None})
    path = common.save_results("bench_tf1", {"config": vars(args), "rows": out, "notes": sorted(set(notes)),
                                             "versions": _versions()})
    print(f"\nresults: {path}\n")
    print(f"Same-source TF1 programs, {args.threads} thread(s), median of {args.repeats} repeats x {args.steps} steps")
    print(common.fmt_table(["model", "unit", "collflow", "TF1 default", "TF1 oneDNN", "torch", "x TF1 best", "x torch"],
                           rows))


def _versions() -> Dict[str, Optional[str]]:
    out: Dict[str, Optional[str]] = {}
    for mod in ("tensorflow", "torch", "numpy"):
        try:
            out[mod] = __import__(mod).__version__
        except ImportError:
            out[mod] = None
    return out


if __name__ == "__main__":
    main()
