"""TensorFlow 1.x's documented behaviour, one test per rule (the TF1-fidelity issue, part 2).

Each test states what TF1 does and checks collflow does the same; the values are closed forms.
"""
import numpy as np
import pytest

import collflow as cf
from session_helpers import run as _run


# -- dropout: the second positional argument is keep_prob ------------------------------------

def test_dropout_second_positional_argument_is_keep_prob(graph):
    x = cf.ones([200, 500])
    kept = cf.reduce_mean(cf.cast(cf.not_equal(cf.nn.dropout(x, 0.9, seed=1), 0.0), cf.float32))
    kept_kw = cf.reduce_mean(cf.cast(cf.not_equal(cf.nn.dropout(x, keep_prob=0.9, seed=2), 0.0), cf.float32))
    kept_rate = cf.reduce_mean(cf.cast(cf.not_equal(cf.nn.dropout(x, rate=0.9, seed=3), 0.0), cf.float32))
    scale = cf.reduce_max(cf.nn.dropout(x, 0.8, seed=4))
    k, kk, kr, sc = _run([kept, kept_kw, kept_rate, scale])
    assert abs(k - 0.9) < 0.01 and abs(kk - 0.9) < 0.01   # dropout(x, 0.9) keeps 90%
    assert abs(kr - 0.1) < 0.01                            # rate=0.9 keeps 10% (TF 1.13+)
    assert sc == pytest.approx(1 / 0.8)                    # kept values scaled by 1/keep_prob
    with pytest.raises(cf.InvalidArgumentError, match="exactly one of rate= and keep_prob="):
        cf.nn.dropout(x, 0.5, rate=0.5)


# -- dtypes ------------------------------------------------------------------------------------

def test_float_is_float32_and_the_other_tf_names(graph):
    assert cf.placeholder("float").dtype == cf.float32
    assert cf.constant(1.0, dtype="float").dtype == cf.float32
    assert cf.as_dtype("double") == cf.float64 and cf.as_dtype("half") == cf.float16
    assert cf.double is cf.float64 and cf.half is cf.float16
    assert cf.bool is cf.bool_ and cf.placeholder(cf.bool, ()).dtype.name == "bool"


# -- Session.run of a scalar ---------------------------------------------------------------------

def test_run_returns_numpy_scalars_for_scalars(graph):
    a = cf.constant(2.0) * 3.0
    i = cf.constant(7, dtype=cf.int64)
    v, iv, vec = _run([a, i, cf.constant([1.0, 2.0])])
    assert type(v) is np.float32 and v == 6.0
    assert type(iv) is np.int64 and iv == 7
    assert isinstance(vec, np.ndarray) and vec.shape == (2,)


# -- get_variable and variable scopes ------------------------------------------------------------

def test_get_variable_of_an_existing_name_without_reuse_raises(graph):
    cf.get_variable("w", [2, 3])
    with pytest.raises(ValueError, match="Variable w already exists, disallowed"):
        cf.get_variable("w", [2, 3])


def test_variable_scope_reuse_true_shares_and_missing_names_raise(graph):
    with cf.variable_scope("model"):
        w = cf.get_variable("w", [2, 3])
        assert w.name == "model/w:0"
    with cf.variable_scope("model", reuse=True):
        assert cf.get_variable("w") is w
        with pytest.raises(ValueError, match="Variable model/v does not exist"):
            cf.get_variable("v", [1])
        with pytest.raises(ValueError, match="specified shape"):
            cf.get_variable("w", [3, 2])
        with cf.variable_scope("inner", reuse=False):  # reuse cannot be switched off inside
            assert cf.get_variable_scope().reuse is True
    with cf.variable_scope("model") as sc:
        sc.reuse_variables()
        assert cf.get_variable("w") is w


def test_auto_reuse_creates_then_shares(graph):
    def make():
        with cf.variable_scope("shared", reuse=cf.AUTO_REUSE):
            return cf.get_variable("b", [4], initializer=cf.initializers.zeros())
    assert make() is make()
    assert [v.name for v in cf.global_variables()] == ["shared/b:0"]


def test_name_scopes_do_not_name_get_variable(graph):
    with cf.name_scope("ns"):
        v = cf.get_variable("v", [1])
        c = cf.constant(1.0, name="c")
    with cf.variable_scope("vs"):
        u = cf.get_variable("u", [1])
        d = cf.constant(1.0, name="d")
    assert v.name == "v:0" and c.name == "ns/c:0"
    assert u.name == "vs/u:0" and d.name == "vs/d:0"


def test_scope_defaults_initializer_and_regularizer(graph):
    with cf.variable_scope("s", initializer=cf.initializers.ones(), regularizer=lambda w: cf.reduce_sum(w) * 0.5):
        w = cf.get_variable("w", [3])
    reg = cf.get_collection(cf.GraphKeys.REGULARIZATION_LOSSES)
    wv, rv = _run([w, reg[0]])
    np.testing.assert_array_equal(wv, np.ones(3, np.float32))
    assert rv == 1.5


def test_get_variable_default_initializer_is_glorot_uniform(graph):
    w = cf.get_variable("w", [300, 200])
    wv = _run(w)
    limit = np.sqrt(6.0 / (300 + 200))
    assert np.abs(wv).max() <= limit and np.abs(wv).max() > 0.95 * limit
    assert _run(cf.get_variable("n", [3], dtype=cf.int32)).tolist() == [0, 0, 0]


def test_layers_share_variables_in_a_reused_scope(graph):
    x = cf.placeholder(cf.float32, (None, 2))

    def discriminator(inp, reuse):
        with cf.variable_scope("disc", reuse=reuse):
            return cf.layers.dense(cf.layers.dense(inp, 3, activation=cf.nn.relu), 1)
    d_real = discriminator(x, False)
    d_fake = discriminator(x * 2.0, True)
    names = [v.name for v in cf.trainable_variables()]
    assert names == ["disc/dense/kernel:0", "disc/dense/bias:0", "disc/dense_1/kernel:0", "disc/dense_1/bias:0"]
    a, b = _run([d_real, d_fake], {x: np.ones((1, 2), np.float32)})
    assert a.shape == b.shape == (1, 1)
    with pytest.raises(ValueError, match="already exists"):
        cf.layers.dense(x, 1, name="disc/dense")


def test_two_unnamed_layers_make_two_sets_of_variables(graph):
    x = cf.placeholder(cf.float32, (None, 2))
    cf.layers.dense(x, 3)
    cf.layers.dense(x, 3)
    assert [v.name for v in cf.trainable_variables()] == [
        "dense/kernel:0", "dense/bias:0", "dense_1/kernel:0", "dense_1/bias:0"]


# -- variables created inside loops -----------------------------------------------------------------

def test_variable_in_a_loop_body_is_lifted_out_of_the_loop(graph):
    def body(i, acc):
        v = cf.Variable(lambda: cf.ones([2]), name="in_loop")   # initializer lifted: made once
        return i + 1, acc + v
    out = cf.while_loop(lambda i, a: i < 3, body, [0, cf.zeros([2])])[1]
    assert [v.name for v in cf.global_variables()] == ["while/in_loop:0"]  # one variable, named in its scope
    np.testing.assert_array_equal(_run(out), [3.0, 3.0])


def test_variable_initialized_from_a_loop_tensor_is_a_clear_error(graph):
    def body(i, acc):
        v = cf.Variable(acc * 2.0, name="bad")
        return i + 1, acc + v
    with pytest.raises(ValueError, match="Initializer for variable .*bad is from inside a control-flow construct"):
        cf.while_loop(lambda i, a: i < 3, body, [0, cf.zeros([2])])


# -- the older keywords ------------------------------------------------------------------------------

def test_keep_dims_reduction_indices_and_dimension(graph):
    x = cf.constant(np.arange(6.0).reshape(2, 3))
    s = cf.reduce_sum(x, reduction_indices=[1], keep_dims=True)
    m = cf.reduce_max(x, reduction_indices=0)
    a = cf.argmax(x, dimension=1)
    lse = cf.reduce_logsumexp(x, 1)
    sv, mv, av, lv = _run([s, m, a, lse])
    np.testing.assert_array_equal(sv, [[3.0], [12.0]])
    np.testing.assert_array_equal(mv, [3.0, 4.0, 5.0])
    assert av.tolist() == [2, 2] and av.dtype == np.int64
    np.testing.assert_allclose(lv, np.log(np.exp(np.arange(6.0).reshape(2, 3)).sum(1)))
    with pytest.raises(ValueError, match="both 'axis' and 'reduction_indices'"):
        cf.reduce_sum(x, axis=0, reduction_indices=0)


def test_none_is_not_a_tensor(graph):
    with pytest.raises(ValueError, match="None values not supported"):
        cf.constant(1.0) + None


# -- Saver paths ----------------------------------------------------------------------------------------

def test_saver_save_returns_the_prefix_and_restore_takes_it(tmp_path):
    g = cf.Graph()
    with g.as_default():
        w = cf.Variable(np.arange(3.0), name="w")
        step = cf.train.get_or_create_global_step()
        bump = cf.assign_add(w, [1.0, 1.0, 1.0])
        saver = cf.train.Saver()
        init = cf.global_variables_initializer()
    prefix = str(tmp_path / "model.ckpt")
    with cf.Session(graph=g) as s:
        s.run(init)
        assert saver.save(s, prefix) == prefix                       # TF1 returns what it was given
        s.run(bump)
        assert saver.save(s, prefix, global_step=100) == prefix + "-100"
        assert cf.train.latest_checkpoint(str(tmp_path)) == prefix + "-100"
        assert cf.train.checkpoint_exists(prefix + "-100")
    with cf.Session(graph=g) as s:
        saver.restore(s, cf.train.latest_checkpoint(str(tmp_path)))
        np.testing.assert_array_equal(s.run(w), [1.0, 2.0, 3.0])
        saver.restore(s, prefix)
        np.testing.assert_array_equal(s.run(w), [0.0, 1.0, 2.0])


def test_saver_takes_tf1s_options(tmp_path):
    """TF1's Saver options: pad_step_number writes -00000007; reshape restores an entry of
    another shape with as many elements; no variables is "No variables to save" unless
    allow_empty; sharded, defer_build (and build()), write_version... are accepted."""
    g = cf.Graph()
    with g.as_default():
        w = cf.Variable(np.arange(6.0).reshape(2, 3), name="w")
        saver = cf.train.Saver(pad_step_number=True, sharded=True, defer_build=True, write_version=2,
                               save_relative_paths=True, restore_sequentially=True)
        saver.build()
        init = cf.global_variables_initializer()
    g2 = cf.Graph()
    with g2.as_default():
        w2 = cf.Variable(np.zeros((3, 2)), name="w")
        strict = cf.train.Saver()
        loose = cf.train.Saver(reshape=True)
    prefix = str(tmp_path / "model.ckpt")
    with cf.Session(graph=g) as s:
        s.run(init)
        assert saver.save(s, prefix, global_step=7) == prefix + "-00000007"
    assert (tmp_path / "model.ckpt-00000007.h5").exists()
    with cf.Session(graph=g2) as s:
        with pytest.raises(cf.errors.InvalidArgumentError, match="mismatched"):
            strict.restore(s, prefix + "-00000007")
        loose.restore(s, prefix + "-00000007")
        np.testing.assert_array_equal(s.run(w2), np.arange(6.0).reshape(3, 2))
    with cf.Graph().as_default():
        with pytest.raises(ValueError, match="No variables to save"):
            cf.train.Saver()
        assert cf.train.Saver(allow_empty=True).var_list == {}
