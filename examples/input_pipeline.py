"""Train a tiny linear regression from a queue fed by a producer thread.

A Python generator makes minibatches of (x, y) with y = x @ w_true + b_true + noise; a
FeedingQueueRunner thread enqueues them into a cf.FIFOQueue (its capacity bounds how far
the producer runs ahead); the training loop dequeues batches of 32 and takes plain SGD
steps built from cf.gradients and cf.assign_sub, until the generator is exhausted and the
queue drained (OutOfRangeError).

    python examples/input_pipeline.py [--epochs 20] [--lr 0.1]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import collflow as cf  # noqa: E402
from collflow.data.pipeline import Coordinator, FeedingQueueRunner  # noqa: E402

FEATURES = 4


def make_data(n: int, seed: int = 0):
    """A synthetic regression set: x (n, 4) float32, y (n, 1) float32, and the true weights."""
    rng = np.random.default_rng(seed)
    w_true = rng.normal(size=(FEATURES, 1)).astype(np.float32)
    b_true = np.float32(0.5)
    x = rng.normal(size=(n, FEATURES)).astype(np.float32)
    y = (x @ w_true + b_true + 0.01 * rng.normal(size=(n, 1))).astype(np.float32)
    return x, y, w_true, b_true


def batches(x: np.ndarray, y: np.ndarray, epochs: int, batch: int, seed: int = 1):
    """Yields shuffled (x_batch, y_batch) pairs for `epochs` epochs (the producer's source)."""
    rng = np.random.default_rng(seed)
    for _ in range(epochs):
        order = rng.permutation(len(x))
        for i in range(0, len(x), batch):
            idx = order[i:i + batch]
            yield x[idx], y[idx]


def main(argv=None) -> float:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=1024)
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=0.1)
    args = ap.parse_args(argv)

    x_all, y_all, w_true, b_true = make_data(args.examples)
    g = cf.Graph()
    with g.as_default():
        queue = cf.FIFOQueue(capacity=8 * args.batch, dtypes=[cf.float32, cf.float32],
                             shapes=[(FEATURES,), (1,)], name="examples")
        # the producer feeds whole generator batches (of any size) with enqueue_many
        runner = FeedingQueueRunner(queue, lambda: batches(x_all, y_all, args.epochs, 50))
        # the trainer takes fixed batches; the last, smaller one too
        xb, yb = queue.dequeue_up_to(args.batch)
        w = cf.Variable(np.zeros((FEATURES, 1), np.float32), name="w")
        b = cf.Variable(np.zeros((1,), np.float32), name="b")
        pred = cf.matmul(xb, w) + b
        loss = cf.reduce_mean(cf.square(pred - yb))
        gw, gb = cf.gradients(loss, [w, b])
        lr = np.float32(args.lr)
        train_op = cf.group(cf.assign_sub(w, lr * gw), cf.assign_sub(b, lr * gb))
        init = cf.global_variables_initializer()
        g.finalize()

    t0 = time.perf_counter()
    with cf.Session(graph=g) as sess:
        sess.run(init)
        coord = Coordinator()
        threads = runner.create_threads(sess, coord, daemon=True, start=True)
        step, last = 0, float("nan")
        try:
            while not coord.should_stop():
                last, _ = sess.run([loss, train_op])
                step += 1
                if step % 100 == 0:
                    print(f"step {step:5d}  loss {last:.5f}")
        except cf.errors.OutOfRangeError:
            pass  # the generator is exhausted and the queue drained
        finally:
            coord.request_stop()
        coord.join(threads)
        w_fit, b_fit = sess.run([w, b])
    dt = time.perf_counter() - t0
    err = float(np.abs(w_fit - w_true).max())
    print(f"{step} steps in {dt:.2f} s; final loss {last:.5f}; max |w - w_true| = {err:.4f}; "
          f"b = {float(b_fit[0]):.3f} (true {float(b_true):.3f})")
    return float(last)


if __name__ == "__main__":
    main()
