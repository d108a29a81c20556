"""scripts/train.py's command line: the flags, their checks and defaults (`build_parser`,
`parse_args`).  train.py re-exports these names."""
from __future__ import annotations

import argparse
import math
import os
from typing import Optional, Sequence, Tuple

import collflow as cf
from collflow import models

DEFAULT_EPOCHS = 30
DEFAULT_BATCH = 64
DEFAULT_OPTIMIZER = "adam"
DEFAULT_HIDDEN = (128,)


# -- arguments ---------------------------------------------------------------------------

def _positive_int(s: str) -> int:
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {s!r}") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {v}")
    return v


def _positive_float(s: str) -> float:
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {s!r}") from None
    if not v > 0 or not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {s}")
    return v


def _int_list(s: str) -> Tuple[int, ...]:
    try:
        vals = tuple(int(p) for p in s.replace(" ", "").split(",") if p != "")
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated positive integers like 128,64, got {s!r}") from None
    if not vals or any(v <= 0 for v in vals):
        raise argparse.ArgumentTypeError(f"expected comma-separated positive integers like 128,64, got {s!r}")
    return vals


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="train.py", description="Train a collflow model (an MLP or CNN classifier, a char-LSTM language model, "
                                     "or the wide_deep click model with sharded embedding tables); prints one JSON "
                                     "line of metrics.")
    p.add_argument("--model", choices=("mlp", "cnn", "lstm", "wide_deep"), default="mlp",
                   help="model family (default mlp)")
    p.add_argument("--dataset", default="digits",
                   help="'digits' (bundled UCI 8x8 digits), 'synthetic', or a path to .h5/.hdf5/.npz "
                        "with x, y [, x_test, y_test] (default digits)")
    p.add_argument("--batch-size", type=_positive_int, default=DEFAULT_BATCH, help=f"default {DEFAULT_BATCH}")
    p.add_argument("--lr", type=_positive_float, default=None,
                   help="learning rate (default per optimizer: " +
                        ", ".join(f"{k} {v:g}" for k, v in models.DEFAULT_LEARNING_RATES.items()) + ")")
    p.add_argument("--optimizer", choices=models.OPTIMIZERS, default=DEFAULT_OPTIMIZER,
                   help=f"default {DEFAULT_OPTIMIZER}; with --model wide_deep, adam is LazyAdamOptimizer (only the batch's embedding rows move)")
    run = p.add_mutually_exclusive_group()
    run.add_argument("--epochs", type=_positive_int, default=None,
                     help=f"passes over the data (default {DEFAULT_EPOCHS})")
    run.add_argument("--steps", type=_positive_int, default=None, help="train for exactly this many steps instead")
    p.add_argument("--seed", type=int, default=0, help="seed of the weights and the shuffling (default 0)")
    p.add_argument("--num-classes", type=_positive_int, default=None,
                   help="classes of the data: labels must be 0..N-1 (default: the dataset's; for a file, its "
                        "largest label + 1, with a warning when most of those classes never occur)")
    p.add_argument("--metrics-out", metavar="FILE", default=None, help="also write the JSON metrics here")
    p.add_argument("--hidden", type=_int_list, default=None,
                   help="hidden layer sizes of the MLP, comma-separated (default 128)")
    p.add_argument("--filters", type=_int_list, default=None, help="conv filters per CNN block (default 16,32)")
    p.add_argument("--test-fraction", type=float, default=0.2,
                   help="fraction held out for testing when the data has no test split (default 0.2)")
    p.add_argument("--synthetic-size", type=_positive_int, default=10000, help="examples in --dataset synthetic")
    p.add_argument("--synthetic-shape", type=_int_list, default=None,
                   help="example shape for --dataset synthetic (default 784 for mlp, 28,28,1 for cnn)")
    p.add_argument("--seq-len", type=_positive_int, default=50, help="lstm: characters per example (default 50)")
    p.add_argument("--embed", type=_positive_int, default=64, help="lstm: embedding size (default 64)")
    p.add_argument("--corpus-chars", type=_positive_int, default=None,
                   help="lstm: use only the first N characters of the stdlib corpus")
    p.add_argument("--device", default="auto", help="'auto', '/cpu:0' or '/gpu:0' (default auto)")
    w = p.add_argument_group("wide_deep (click-through model on synthetic Zipf-distributed ids)")
    w.add_argument("--vocab-size", type=_positive_int, default=100_000, help="rows of each embedding table")
    w.add_argument("--embedding-dim", type=_positive_int, default=16, help="embedding width")
    w.add_argument("--mode", choices=("allreduce", "ps"), default="ps",
                   help="ps: tables sharded over the ranks (parameter server); allreduce: replicated tables")
    w.add_argument("--ps-prefetch", action="store_true",
                   help="ps mode: the next batch's route rides in this step's gradient push (one all-to-all a step "
                        "fewer; the same parameters)")
    d = p.add_argument_group("data parallelism (under mpirun; --batch-size is per rank)")
    d.add_argument("--fusion-mb", type=float, default=64.0,
                   help="gradient fusion bucket size in MiB (0: one all-reduce per gradient; default 64)")
    d.add_argument("--compression", choices=("none", "fp16", "bf16"), default="none",
                   help="gradient compression on the wire (default none)")
    d.add_argument("--backup-ranks", type=int, default=0,
                   help="each step aggregates the first (world size - b) ranks to finish (default 0)")
    d.add_argument("--elastic", type=int, default=0, metavar="K",
                   help="survive a dead rank without a restart: commit the state in memory every K steps and, "
                        "when a rank dies, go on with the others from the last commit (needs `mpirun --with-ft "
                        "ulfm`, Open MPI 5; `collflowrun --elastic` adds it; default 0: off)")
    d.add_argument("--elastic-respawn", action="store_true",
                   help="with --elastic: the survivors start a new process for each dead rank (MPI_Comm_spawn "
                        "of this program), which joins at the commit they roll back to: the world stays whole")
    d.add_argument("--no-average-parameters", dest="average_parameters", action="store_false",
                   help="plain SGD: all-reduce the gradients, then apply them (default: each rank steps, "
                        "then the updated variables are averaged in place, the same update)")
    d.add_argument("--straggler-rank", type=int, default=None, help="inject a delay into this rank's every step")
    d.add_argument("--straggler-delay", type=float, default=0.0, help="seconds of injected delay (with --straggler-rank)")
    d.add_argument("--straggler-random", type=float, default=None, metavar="MAX_S",
                   help="each step a random rank (same draw on every rank) is delayed by U(0, MAX_S) seconds")
    d.add_argument("--timeline", default=None, metavar="PATH",
                   help="write a Chrome-trace timeline of each rank's collectives (negotiation, MPI calls, "
                        "fusion packing) to PATH ('{rank}' in it becomes the rank; else rank R>0 writes "
                        "PATH with .rankR before the extension); also $COLLFLOW_TIMELINE")
    d.add_argument("--trace-step", type=int, default=None, metavar="N",
                   help="trace training step N (1-based): every op's start and end, written as a Chrome trace "
                        "to --trace-path (RunOptions/RunMetadata, as TensorFlow's timeline)")
    d.add_argument("--trace-path", default="step_trace.json", metavar="PATH",
                   help="where --trace-step writes ('{rank}' in it becomes the rank; default step_trace.json, "
                        "rank R>0 adds .rankR before the extension)")
    d.add_argument("--check-replicas", action="store_true",
                   help="at the end, verify every rank's variables are bit-identical to rank 0's")
    cf.train.add_checkpoint_arguments(p)
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bar on a terminal, and no progress lines (every 10 s / 10%% of steps) otherwise")
    p.add_argument("--logdir", metavar="DIR", default=None,
                   help="TensorBoard event files from rank 0: loss per step, samples/s, learning rate, the graph, "
                        "test loss and accuracy (tensorboard --logdir DIR)")
    return p


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = build_parser()
    a = p.parse_args(argv)
    if a.hidden is not None and a.model == "cnn":
        p.error("--hidden applies to --model mlp only (use --filters for the cnn)")
    if a.filters is not None and a.model != "cnn":
        p.error("--filters applies to --model cnn only (use --hidden for the mlp)")
    if not 0.0 <= a.test_fraction < 1.0:
        p.error(f"--test-fraction must be in [0, 1), got {a.test_fraction}")
    if a.seed < 0:
        p.error(f"--seed must be non-negative, got {a.seed}")
    if a.model == "wide_deep" and a.dataset != "digits":
        p.error("--model wide_deep trains on synthetic Zipf-distributed click data (see --vocab-size, "
                "--embedding-dim, --mode); leave --dataset out")
    if a.model == "lstm":
        if a.dataset not in ("digits", "stdlib"):
            p.error("--model lstm trains on the Python stdlib source corpus: leave --dataset out or pass stdlib")
        a.dataset = "stdlib"
        if a.num_classes is not None:
            p.error("--num-classes does not apply to --model lstm (its classes are the corpus' characters)")
    elif a.dataset not in ("digits", "synthetic"):
        if not os.path.exists(a.dataset):
            p.error(f"--dataset {a.dataset!r}: no such file; expected 'digits', 'synthetic' or the path of an "
                    ".h5/.hdf5/.npz file with arrays x and y")
        if os.path.isdir(a.dataset):
            p.error(f"--dataset {a.dataset!r} is a directory; expected an .h5/.hdf5/.npz file")
    if a.trace_step is not None:
        if a.trace_step < 1:
            p.error(f"--trace-step counts steps from 1, got {a.trace_step}")
        if a.backup_ranks:
            p.error("--trace-step cannot trace a step with --backup-ranks (those steps run through "
                    "SyncReplicasOptimizer.run_step); use --timeline for the collectives")
        if a.model == "wide_deep":
            p.error("--trace-step is not available for --model wide_deep")
    if a.elastic < 0:
        p.error(f"--elastic K commits every K >= 1 steps (0: off), got {a.elastic}")
    if a.elastic and a.model == "wide_deep":
        # the sharded tables of a dead rank are gone from memory: wide_deep rolls back to its last
        # sharded checkpoint, which restores onto the survivors' number of ranks
        if not a.checkpoint_dir:
            p.error("--elastic with --model wide_deep needs --checkpoint-dir: a dead rank's table shards "
                    "come back from the last sharded checkpoint (written every K steps)")
        if a.checkpoint_every_steps is None:
            a.checkpoint_every_steps = a.elastic
    if a.elastic_respawn and not a.elastic:
        p.error("--elastic-respawn goes with --elastic K")
    if a.elastic and a.backup_ranks:
        p.error("--elastic with --backup-ranks is not supported yet (use one or the other)")
    if a.epochs is None and a.steps is None:
        a.epochs = DEFAULT_EPOCHS
    if a.hidden is None:
        a.hidden = DEFAULT_HIDDEN
    if a.filters is None:
        a.filters = (16, 32)
    if a.lr is None:
        a.lr = models.DEFAULT_LEARNING_RATES[a.optimizer]
    return a
