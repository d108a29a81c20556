"""Random TF1 graph-building programs for tests/tf1/test_vs_tensorflow_names_fuzz.py.

`build(tf, seed)` builds one random program against `tf` (`tensorflow.compat.v1` or
`collflow.compat.v1`) in a fresh graph and returns a snapshot of every name a TF1 program
depends on: the variables of each variable collection (name, shape, dtype, trainable), the
GraphKeys collections, and the names of the tensors a user would fetch.  Every random choice
comes from `random.Random(seed)` and none depends on what the library returned, so both
libraries run the same program.  A step that raises is recorded as ("error", step) and the
program goes on, so one library refusing what the other accepts shows as a difference.
"""
import os
import random
import tempfile

import numpy as np

NAMES = ["a", "w", "dense", "fc", "a_1"]
SCOPES = ["s", "t", "dense", "a", "rnn"]
# collflow builds a partitioned variable of several parts only as one shard per rank, and its
# Keras layers make their variables through variable scopes, not name scopes: both left out
# (see the module doc of test_vs_tensorflow_names_fuzz.py)
PARTITIONED = False
KERAS = False
# tf.layers.Dense objects: one object called twice agrees (ops under dense/, dense/BiasAdd_1);
# unnamed objects made inside nested scopes do not always get TF 2's variable scope
LAYER_OBJECTS = False
COLLECTIONS = ["UPDATE_OPS", "REGULARIZATION_LOSSES", "LOSSES", "SUMMARIES", "MOVING_AVERAGE_VARIABLES",
               "TRAIN_OP", "GLOBAL_STEP", "GLOBAL_VARIABLES", "TRAINABLE_VARIABLES", "LOCAL_VARIABLES",
               "MODEL_VARIABLES"]


def _l2_regularizer(tf, scale):
    """tf.contrib.layers.l2_regularizer where the library has contrib; TF 2's compat.v1 has not,
    so the documented TF 1.15 behaviour is written out: `scale * l2_loss(w)` named by a name
    scope 'l2_regularizer' (the multiply op takes the scope's own name)."""
    contrib = getattr(tf, "contrib", None)
    if contrib is not None:
        return contrib.layers.l2_regularizer(scale)

    def reg(w):
        with tf.name_scope(None, "l2_regularizer", [w]) as name:
            s = tf.convert_to_tensor(scale, dtype=w.dtype.base_dtype, name="scale")
            return tf.multiply(s, tf.nn.l2_loss(w), name=name)
    return reg


def _name(x):
    n = getattr(x, "name", None)
    return n if isinstance(n, str) else repr(type(x).__name__)


def _var_rec(tf, v):
    trainable = any(v is t for t in tf.trainable_variables())
    return (v.name, tuple(v.get_shape().as_list()), v.dtype.base_dtype.name, trainable)


class _Prog:
    def __init__(self, tf, seed):
        self.tf = tf
        self.r = random.Random(seed)
        self.rec = []  # names fetched or errors, in program order
        self.scopes = []  # VariableScope objects to re-enter
        self.tensors = []  # float tensors of shape [B, F] to feed layers
        self.loss_terms = []
        self.step = 0
        self.has_rnn = False  # dynamic_rnn's gradient ops (a while loop in TF, one fused op here) differ

    def note(self, kind, x):
        self.rec.append((kind, _name(x)))

    def note_grad(self, kind, g):
        # the gradient's scope ("gradients/dense/MatMul_grad/tuple"): the ops a gradient
        # function builds inside it (Sum vs Reshape, AddN numbering) are not compared
        g = g.values if hasattr(g, "values") else g
        self.rec.append((kind, "(after dynamic_rnn)" if self.has_rnn else _name(g).rsplit("/", 1)[0]))

    # ---------------- steps ----------------
    def step_get_variable(self):
        tf, r = self.tf, self.r
        nm = r.choice(NAMES)
        kw = {}
        if r.random() < 0.3:
            kw["regularizer"] = _l2_regularizer(tf, 0.1)
        if r.random() < 0.2:
            kw["trainable"] = False
        if r.random() < 0.15:
            kw["collections"] = [tf.GraphKeys.LOCAL_VARIABLES]
        shape = [3, 3]
        if PARTITIONED and r.random() < 0.15:
            kw["partitioner"] = tf.fixed_size_partitioner(r.choice([2, 3]))
            shape = [6, 3]
        v = tf.get_variable(nm, shape, **kw)
        self.note("get_variable", v)
        if not kw.get("partitioner"):
            self.use_var(v)

    def use_var(self, v):
        tf = self.tf
        if v.get_shape().as_list() == [3, 3] and v.dtype.base_dtype == tf.float32:
            x = self.pick()
            y = tf.matmul(x, v)
            self.note("matmul", y)
            self.tensors.append(y)

    def step_variable(self):
        tf, r = self.tf, self.r
        nm = r.choice(NAMES + [None])
        kw = {}
        if r.random() < 0.2:
            kw["trainable"] = False
        v = tf.Variable(tf.ones([3, 3]) * 0.1, name=nm, **kw) if nm else tf.Variable(tf.ones([3, 3]) * 0.1, **kw)
        self.note("Variable", v)
        self.note("Variable.initializer", v.initializer)
        self.use_var(v)

    def pick(self):
        return self.r.choice(self.tensors)

    def step_dense(self):
        tf, r = self.tf, self.r
        kw = {}
        nm = r.choice([None, None, "fc", "dense", "a"])
        if nm:
            kw["name"] = nm
        if r.random() < 0.25:
            kw["reuse"] = r.choice([True, tf.AUTO_REUSE])
        if r.random() < 0.3:
            kw["kernel_regularizer"] = _l2_regularizer(tf, 0.01)
        if r.random() < 0.3:
            kw["activation"] = tf.nn.relu
        y = tf.layers.dense(self.pick(), 3, **kw)
        self.note("dense", y)
        self.tensors.append(y)

    def step_layer_object(self):
        tf, r = self.tf, self.r
        nm = r.choice([None, "fc", "dense"])
        layer = tf.layers.Dense(3, name=nm) if nm else tf.layers.Dense(3)
        for _ in range(r.randint(1, 2)):
            y = layer(self.pick())
            self.note("Dense()", y)
            self.tensors.append(y)
        for w in layer.weights:
            self.note("Dense().weight", w)

    def step_conv(self):
        tf, r = self.tf, self.r
        kw = {}
        nm = r.choice([None, "conv", "a"])
        if nm:
            kw["name"] = nm
        if r.random() < 0.2:
            kw["reuse"] = tf.AUTO_REUSE
        img = tf.reshape(self.pick(), [-1, 1, 3, 1], name=r.choice([None, "img"]))
        self.note("reshape", img)
        y = tf.layers.conv2d(img, 3, [1, 2], padding="same", **kw)
        self.note("conv2d", y)
        y = tf.reduce_mean(y, axis=[1, 2])
        self.note("reduce_mean", y)
        self.tensors.append(y)

    def step_bn(self):
        tf, r = self.tf, self.r
        kw = {}
        nm = r.choice([None, "bn", "a"])
        if nm:
            kw["name"] = nm
        if r.random() < 0.2:
            kw["reuse"] = tf.AUTO_REUSE
        y = tf.layers.batch_normalization(self.pick(), training=r.choice([True, False]), **kw)
        self.note("bn", y)
        self.tensors.append(y)

    def step_keras(self):
        tf, r = self.tf, self.r
        kind = r.choice(["Dense", "Dense", "BatchNormalization"])
        nm = r.choice([None, None, "kd"])
        kw = {"name": nm} if nm else {}
        layer = tf.keras.layers.Dense(3, **kw) if kind == "Dense" else tf.keras.layers.BatchNormalization(**kw)
        y = layer(self.pick())
        self.note("keras." + kind, y)
        for w in layer.weights:
            self.note("keras.weight", w)
        self.tensors.append(y)
        if r.random() < 0.3:
            y2 = layer(self.pick())
            self.note("keras.again", y2)
            self.tensors.append(y2)

    def step_rnn(self):
        tf, r = self.tf, self.r
        kind = r.choice(["LSTM", "GRU", "Basic"])
        cell = {"LSTM": lambda: tf.nn.rnn_cell.LSTMCell(4), "GRU": lambda: tf.nn.rnn_cell.GRUCell(4),
                "Basic": lambda: tf.nn.rnn_cell.BasicRNNCell(4)}[kind]()
        self.has_rnn = True
        seq = tf.stack([self.pick(), self.pick()], axis=1)
        self.note("stack", seq)
        kw = {}
        if r.random() < 0.4:
            kw["scope"] = r.choice(["rnn", "enc", "a"])
        out, _ = tf.nn.dynamic_rnn(cell, seq, dtype=tf.float32, **kw)
        self.note("dynamic_rnn", out)
        for w in cell.weights:
            self.note("cell.weight", w)
        y = tf.layers.dense(out[:, -1], 3, name=r.choice([None, "proj"]), reuse=tf.AUTO_REUSE)
        self.note("proj", y)
        self.tensors.append(y)

    def step_op(self):
        tf, r = self.tf, self.r
        nm = r.choice(["a", "a", "out", "a_1", None])
        x = self.pick()
        f = r.choice(["identity", "add", "tanh", "matmul"])
        if f == "identity":
            y = tf.identity(x, name=nm)
        elif f == "add":
            y = tf.add(x, self.pick(), name=nm)
        elif f == "tanh":
            y = tf.tanh(x, name=nm)
        else:
            y = tf.matmul(x, tf.ones([3, 3]), name=nm)
        self.note(f, y)
        self.tensors.append(y)

    def step_summary(self):
        tf, r = self.tf, self.r
        nm = r.choice(["loss", "a", "h"])
        fam = r.choice([None, None, "train", "a"])
        kw = {"family": fam} if fam else {}
        if r.random() < 0.5:
            s = tf.summary.scalar(nm, tf.reduce_mean(self.pick()), **kw)
        else:
            s = tf.summary.histogram(nm, self.pick(), **kw)
        self.note("summary", s)

    def step_loss(self):
        tf, r = self.tf, self.r
        kind = r.choice(["mse", "softmax", "abs", "sigmoid"])
        a, b = self.pick(), tf.zeros_like(self.pick())
        self.note("zeros_like", b)
        if kind == "mse":
            l = tf.losses.mean_squared_error(b, a)
        elif kind == "softmax":
            l = tf.losses.softmax_cross_entropy(tf.one_hot([0, 1], 3), a)
        elif kind == "abs":
            l = tf.losses.absolute_difference(b, a, scope=r.choice([None, "myloss"]))
        else:
            l = tf.losses.sigmoid_cross_entropy(tf.ones_like(a), a)
        self.note("loss." + kind, l)
        self.loss_terms.append(l)

    def step_scope(self, depth):
        tf, r = self.tf, self.r
        kind = r.choice(["vs", "vs", "vs_default", "ns", "reenter", "vs_reuse"])
        if kind == "reenter" and not self.scopes:
            kind = "vs"
        if kind == "vs":
            cm = tf.variable_scope(r.choice(SCOPES))
        elif kind == "vs_reuse":
            reuse = r.choice([True, "auto"])
            kind += ":" + str(reuse)
            cm = tf.variable_scope(r.choice(SCOPES), reuse=tf.AUTO_REUSE if reuse == "auto" else True)
        elif kind == "vs_default":
            cm = tf.variable_scope(None, default_name=r.choice(["dense", "block", "a"]))
        elif kind == "ns":
            cm = tf.name_scope(r.choice(SCOPES))
        else:
            reuse = r.choice([None, True, "auto"])
            kind += ":" + str(reuse)
            cm = tf.variable_scope(r.choice(self.scopes), reuse=tf.AUTO_REUSE if reuse == "auto" else reuse)
        with cm as sc:
            self.rec.append(("scope:" + kind, sc if isinstance(sc, str) else getattr(sc, "name", None)))
            if not kind.startswith("ns"):
                self.scopes.append(sc)
                self.rec.append(("get_variable_scope", tf.get_variable_scope().name))
            self.block(depth + 1)

    def block(self, depth):
        r = self.r
        steps = [self.step_get_variable, self.step_variable, self.step_dense, self.step_conv, self.step_bn,
                 self.step_rnn, self.step_op, self.step_summary, self.step_loss,
                 self.step_get_variable, self.step_dense, self.step_op]
        if LAYER_OBJECTS:
            steps.append(self.step_layer_object)
        if KERAS:
            steps.append(self.step_keras)
        for _ in range(r.randint(1, 4)):
            if depth < 3 and r.random() < 0.35:
                self.step_scope(depth)
                continue
            f = r.choice(steps)
            self.step += 1
            # each step draws from its own generator, so a step failing in one library after
            # fewer draws does not shift the rest of the program
            self.r = random.Random(r.getrandbits(32))
            try:
                f()
            except Exception as e:  # noqa: BLE001  (recorded: one library refusing is a difference)
                if os.environ.get("NAMES_FUZZ_TRACE"):
                    import traceback
                    traceback.print_exc()
                self.rec.append(("error", f.__name__, type(e).__name__))
            finally:
                self.r = r

    # ---------------- training tail ----------------
    def train(self):
        tf, r = self.tf, self.r
        terms = [tf.reduce_sum(t) for t in self.tensors[1:] if t.dtype == tf.float32] + self.loss_terms
        reg = tf.losses.get_regularization_losses()
        if r.random() < 0.5 and reg:
            total = tf.losses.get_total_loss(add_regularization_losses=True)
            self.note("total_loss", total)
            terms.append(total)
        if not terms or not tf.trainable_variables():
            return
        loss = tf.add_n(terms, name=r.choice([None, "loss"]))
        self.note("loss", loss)
        gs = None
        if r.random() < 0.5:
            gs = tf.train.get_or_create_global_step()
            self.note("global_step", gs)
        opt_kind = r.choice(["sgd", "adam", "momentum", "rmsprop", "adagrad", "ftrl", "adadelta"])
        opt = {"sgd": lambda: tf.train.GradientDescentOptimizer(0.1),
               "adam": lambda: tf.train.AdamOptimizer(0.1),
               "momentum": lambda: tf.train.MomentumOptimizer(0.1, 0.9, use_nesterov=r.random() < 0.5),
               "rmsprop": lambda: tf.train.RMSPropOptimizer(0.1, momentum=r.choice([0.0, 0.9]),
                                                            centered=r.random() < 0.5),
               "adagrad": lambda: tf.train.AdagradOptimizer(0.1),
               "ftrl": lambda: tf.train.FtrlOptimizer(0.1),
               "adadelta": lambda: tf.train.AdadeltaOptimizer(0.1)}[opt_kind]()
        tv = tf.trainable_variables()
        var_list = None
        if r.random() < 0.3 and len(tv) > 1:
            var_list = tv[: len(tv) // 2 + 1]
        how = r.choice(["minimize", "compute_apply", "gradients"])
        update = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
        with tf.control_dependencies(update):
            if how == "minimize":
                train_op = opt.minimize(loss, global_step=gs, var_list=var_list)
            elif how == "compute_apply":
                gv = opt.compute_gradients(loss, var_list=var_list)
                gv = [(g, v) for g, v in gv if g is not None]
                for g, v in gv:
                    self.note_grad("grad", g)
                train_op = opt.apply_gradients(gv, global_step=gs, name=r.choice([None, "train"]))
            else:
                vs = var_list or tv
                gr = tf.gradients(loss, vs)
                for g in gr:
                    if g is not None:
                        self.note_grad("tf.gradients", g)
                gv = [(g, v) for g, v in zip(gr, vs) if g is not None]
                train_op = opt.apply_gradients(gv, global_step=gs)
        self.note("train_op", train_op)
        tf.add_to_collection(tf.GraphKeys.TRAIN_OP, train_op)
        for v in tv:
            for sn in sorted(opt.get_slot_names()):
                s = opt.get_slot(v, sn)
                if s is not None:
                    self.note("slot:" + sn, s)
        if r.random() < 0.5:
            ema = tf.train.ExponentialMovingAverage(0.9, num_updates=gs if r.random() < 0.5 else None)
            targets = tv if r.random() < 0.5 else tv[:1]
            with tf.control_dependencies([train_op]):
                op = ema.apply(targets)
            self.note("ema.apply", op)
            for v in targets:
                self.note("ema.average", ema.average(v))
                self.rec.append(("ema.average_name", ema.average_name(v)))
            self.rec.append(("variables_to_restore", sorted(ema.variables_to_restore().keys())))


def _collection_names(tf, key):
    out = []
    for x in tf.get_collection(getattr(tf.GraphKeys, key)):
        if hasattr(x, "get_shape") and key.endswith("VARIABLES"):
            out.append(_var_rec(tf, x))
        elif key == "UPDATE_OPS":
            # TF 1.15 stores a ref variable's update tensor "bn/AssignMovingAvg:0"; TF 2's
            # resource variables the op "bn/AssignMovingAvg/AssignSubVariableOp"
            n = _name(x).split(":")[0]
            out.append(n[: -len("/AssignSubVariableOp")] if n.endswith("/AssignSubVariableOp") else n)
        else:
            out.append(_name(x))
    return out


def build(tf, seed, checkpoint=True):
    """Builds program `seed` in a fresh graph of `tf`; returns its snapshot (a dict)."""
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(1)
        p = _Prog(tf, seed)
        x = tf.placeholder(tf.float32, [2, 3], name="x")
        p.tensors.append(x)
        p.block(0)
        try:
            p.train()
        except Exception as e:  # noqa: BLE001
            p.rec.append(("error", "train", type(e).__name__))
        snap = {"rec": p.rec}
        for name in ("global_variables", "trainable_variables", "local_variables", "model_variables"):
            snap[name] = [_var_rec(tf, v) for v in getattr(tf, name)()]
        for key in COLLECTIONS:
            snap[key] = _collection_names(tf, key)
        if checkpoint and tf.global_variables():
            snap["saver"] = _saver_keys(tf, g)
    return snap


def _saver_keys(tf, g):
    """Checkpoint keys, shapes of tf.train.Saver() over the program's variables."""
    saver = tf.train.Saver()
    with tempfile.TemporaryDirectory() as d:
        with tf.Session(graph=g) as s:
            s.run([tf.global_variables_initializer(), tf.local_variables_initializer()],
                  {g.get_tensor_by_name("x:0"): np.ones([2, 3], np.float32)})
            path = saver.save(s, os.path.join(d, "ckpt"))
        return [(k, tuple(shape)) for k, shape in tf.train.list_variables(path)]
