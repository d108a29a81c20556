"""tf.contrib.opt's decoupled weight decay (AdamWOptimizer, MomentumWOptimizer,
extend_with_decoupled_weight_decay) against TensorFlow: TF 2.x has no contrib.opt, so TF's
side is TF 1.15's construction from TF's own optimizers: each variable's
`assign_sub(weight_decay * var)` (a sparse gradient's rows through scatter_add) as a control
dependency of the base optimizer's update.  A dense model and an embedding trained for
several steps; losses, variables and slots compared.  Skipped cleanly without TensorFlow."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

import collflow.compat.v1 as cft  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()
pytestmark = pytest.mark.filterwarnings("ignore:.*deprecated:UserWarning")


def _tf_decoupled(base, wd, decay_vars=None):
    """TF 1.15's DecoupledWeightDecayExtension, built from TF's optimizer and state ops, its decay
    made to wait for the gradient (in TF 1.15 nothing orders it against the forward pass)."""
    class Decoupled(base):
        def _decays(self, var):
            return decay_vars is None or var in decay_vars

        def _resource_apply_dense(self, grad, var):
            with tft.control_dependencies([grad]):
                deps = [var.assign_sub(wd * var)] if self._decays(var) else []
            with tft.control_dependencies(deps):
                return super()._resource_apply_dense(grad, var)

        def _resource_apply_sparse(self, grad, var, indices):
            with tft.control_dependencies([grad, indices]):
                deps = [tft.scatter_add(var, indices, -wd * tft.gather(var, indices))] if self._decays(var) else []
            with tft.control_dependencies(deps):
                return super()._resource_apply_sparse(grad, var, indices)
    return Decoupled


def _make(tf, kind, wd, decay_vars=None):
    if tf is cft:
        if kind == "adam":
            return cft.contrib.opt.AdamWOptimizer(wd, learning_rate=0.05, beta1=0.8)
        if kind == "momentum":
            return cft.contrib.opt.MomentumWOptimizer(wd, 0.1, 0.9, use_nesterov=True)
        return cft.contrib.opt.extend_with_decoupled_weight_decay(cft.train.RMSPropOptimizer)(wd, 0.01)
    if kind == "adam":
        return _tf_decoupled(tft.train.AdamOptimizer, wd, decay_vars)(learning_rate=0.05, beta1=0.8, name="AdamW")
    if kind == "momentum":
        return _tf_decoupled(tft.train.MomentumOptimizer, wd, decay_vars)(0.1, 0.9, use_nesterov=True,
                                                                           name="MomentumW")
    return _tf_decoupled(tft.train.RMSPropOptimizer, wd, decay_vars)(0.01)


def _run(tf, kind, decay_some):
    rng = np.random.RandomState(0)
    ids = rng.randint(0, 6, (4, 8, 3)).astype(np.int32)
    ids[:, 0, :2] = 1  # a repeated row: it decays once
    xs = rng.randn(4, 8, 5).astype(np.float32)
    with tf.Graph().as_default():
        tf.set_random_seed(1)
        emb = tf.get_variable("emb", initializer=rng.randn(6, 5).astype(np.float32))
        w = tf.get_variable("w", initializer=rng.randn(5, 1).astype(np.float32))
        idp, xp = tf.placeholder(tf.int32, [8, 3]), tf.placeholder(tf.float32, [8, 5])
        h = tf.reduce_sum(tf.nn.embedding_lookup(emb, idp), 1) + xp
        loss = tf.reduce_mean(tf.square(tf.matmul(h, w) - 1.0))
        decay_vars = [w] if decay_some else None
        opt = _make(tf, kind, 0.05, set(decay_vars) if decay_vars else None)
        if tf is cft:
            train = opt.minimize(loss, decay_var_list=decay_vars)
        else:
            train = opt.minimize(loss)
        out = []
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            for i in range(4):
                out.append(s.run([loss, train], {idp: ids[i], xp: xs[i]})[0])
            out += s.run(tf.global_variables())
            return out, [v.name for v in tf.global_variables()]


@pytest.mark.parametrize("decay_some", [False, True])
@pytest.mark.parametrize("kind", ["adam", "momentum", "rmsprop"])
def test_decoupled_weight_decay_matches_tf(kind, decay_some):
    want, want_names = _run(tft, kind, decay_some)
    got, got_names = _run(cft, kind, decay_some)
    assert got_names == want_names
    for a, b in zip(got, want):  # float32 chains in other orders: 1e-5 of the tensor's largest value
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-5 * float(np.abs(b).max()) + 1e-6)
