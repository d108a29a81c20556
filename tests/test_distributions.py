"""tf.distributions (collflow/nn/distributions/): densities, CDFs, entropies, moments and KL
divergences against closed forms worked here and against TensorFlow (run_in_both, skipped
without it); samples by their moments (collflow's random streams differ from TF's);
gradients through reparameterized samples; shapes, the KL registry and argument semantics."""
import math

import numpy as np
import pytest

import collflow.compat.v1 as tf
from tf_peer import run_in_both

D = tf.distributions
X = np.array([-1.3, 0.2, 0.7, 2.5])
P = np.array([0.05, 0.3, 0.5, 0.95])


def run(fetches, feed=None):
    with tf.Session() as s:
        return s.run(fetches, feed or {})


@pytest.fixture(autouse=True)
def _fresh_graph():
    with tf.Graph().as_default():
        yield


def _stats(T, d, x, names=("log_prob", "prob", "cdf", "log_cdf")):
    out = []
    for n in names:
        out.append(getattr(d, n)(x))
    for n in ("entropy", "mean", "stddev", "variance", "mode"):
        try:
            out.append(getattr(d, n)())
        except NotImplementedError:     # must be missing on both sides: a marker value
            out.append(T.constant(-12345.0))
    return out


# -- values against TensorFlow -----------------------------------------------------------------

FAMILIES = {
    "normal": (lambda T: T.distributions.Normal(np.array([0.5, -1.0, 2.0, 0.0]), np.array([1.5, 0.3, 2.0, 1.0])),
               X, ("log_prob", "prob", "cdf", "log_cdf", "survival_function", "log_survival_function")),
    "laplace": (lambda T: T.distributions.Laplace(np.array([0.5, -1.0, 2.0, 0.0]), np.array([1.5, 0.3, 2.0, 1.0])),
                X, ("log_prob", "prob", "cdf", "log_cdf")),
    "uniform": (lambda T: T.distributions.Uniform(np.array([-2.0, 0.0, 0.5, 1.0]), np.array([0.0, 3.0, 0.7, 4.0])),
                X, ("log_prob", "prob", "cdf")),
    "gamma": (lambda T: T.distributions.Gamma(np.array([0.5, 1.0, 3.0, 12.0]), np.array([1.0, 2.0, 0.5, 3.0])),
              np.abs(X) + 0.1, ("log_prob", "prob", "cdf", "log_cdf")),
    "exponential": (lambda T: T.distributions.Exponential(np.array([0.5, 1.0, 3.0, 12.0])),
                    np.abs(X), ("log_prob", "prob", "cdf")),
    "beta": (lambda T: T.distributions.Beta(np.array([0.5, 2.0, 3.0, 1.5]), np.array([0.7, 2.0, 1.0, 6.0])),
             P, ("log_prob", "prob", "cdf")),
    # float32: TF's StudentT.mean fails to build in float64 (it compares df with a float32 1)
    "student_t": (lambda T: T.distributions.StudentT(np.float32([3.0, 1.5, 10.0, 4.0]), np.float32([0.5, -1.0, 2.0, 0]),
                                                      np.float32([1.5, 0.3, 2.0, 1.0])),
                  X.astype(np.float32), ("log_prob", "prob", "cdf")),
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_family_matches_tensorflow(family):
    make, x, names = FAMILIES[family]
    cf_out, tf_out = run_in_both(lambda T: _stats(T, make(T), x, names))
    for i, (a, b) in enumerate(zip(cf_out, tf_out)):
        tol = 3e-5 if np.asarray(b).dtype == np.float32 else 1e-6
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol * 1e-3, err_msg=f"{family}: output {i}")


LOGITS = np.array([[0.3, -1.2, 2.0], [1.0, 1.0, -0.5]])


def test_discrete_families_match_tensorflow():
    def prog(T):
        Dt = T.distributions
        b = Dt.Bernoulli(logits=np.array([-2.0, 0.0, 0.4, 3.0]))
        bp = Dt.Bernoulli(probs=P)
        c = Dt.Categorical(logits=LOGITS)
        cp = Dt.Categorical(probs=np.array([0.2, 0.5, 0.3]))
        m = Dt.Multinomial(total_count=np.array([4.0, 6.0]), logits=LOGITS)
        counts = np.array([[1.0, 0.0, 3.0], [2.0, 2.0, 2.0]])
        return [b.log_prob([0, 1, 1, 0]), b.prob([1, 1, 0, 0]), b.entropy(), b.mean(), b.variance(), b.mode(),
                c.cdf([2, 1]), c.cdf([[0, 3], [1, 2]]), m.covariance(),
                bp.log_prob([1, 0, 1, 1]), bp.logits, bp.entropy(),
                c.log_prob([2, 0]), c.prob([[0, 1], [2, 2]]), c.entropy(), c.mode(), c.probs,
                cp.log_prob([0, 1, 2]), cp.entropy(),
                m.log_prob(counts), m.prob(counts), m.mean(), m.variance()]
    got, want = run_in_both(prog)
    for i, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-12, err_msg=f"output {i}")


def test_dirichlet_matches_tensorflow():
    conc = np.array([[0.7, 2.0, 3.0], [1.5, 1.5, 4.0]])
    x = np.array([[0.2, 0.3, 0.5], [0.1, 0.6, 0.3]])

    def prog(T):
        # (a scalar total_count: TF's DirichletMultinomial.mean fails to build for a batch of them)
        dm = T.distributions.DirichletMultinomial(np.float64(5.0), conc)
        counts = np.array([[1.0, 1.0, 3.0], [0.0, 2.0, 3.0]])
        extra = [dm.log_prob(counts), dm.prob(counts), dm.mean(), dm.variance(), dm.covariance()]
        d = T.distributions.Dirichlet(conc)
        # (not mode: TF's Dirichlet.mode fails to build for a batch, a shape bug)
        return [d.log_prob(x), d.prob(x), d.entropy(), d.mean(), d.variance(), d.covariance()] + extra
    got, want = run_in_both(prog)
    for i, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-12, err_msg=f"output {i}")


def test_kl_divergences_match_tensorflow():
    def prog(T):
        Dt = T.distributions
        pairs = [(Dt.Normal(np.array([0.0, 1.0]), np.array([1.0, 2.0])), Dt.Normal(np.array([0.5, -1.0]), np.float64(0.7))),
                 (Dt.Bernoulli(logits=np.array([-1.0, 2.0])), Dt.Bernoulli(probs=np.array([0.3, 0.6]))),
                 (Dt.Categorical(logits=LOGITS), Dt.Categorical(logits=LOGITS[::-1].copy())),
                 (Dt.Beta(np.array([0.5, 2.0]), np.array([1.0, 3.0])), Dt.Beta(np.array([2.0, 1.0]), np.float64(1.5))),
                 (Dt.Gamma(np.array([0.5, 2.0]), np.array([1.0, 3.0])), Dt.Gamma(np.array([2.0, 1.0]), np.float64(1.5))),
                 (Dt.Dirichlet(np.array([[0.5, 2.0, 1.0]])), Dt.Dirichlet(np.array([[2.0, 1.0, 1.5]])))]
        return [Dt.kl_divergence(a, b) for a, b in pairs] + [pairs[0][0].kl_divergence(pairs[0][1]),
                                                             pairs[0][0].cross_entropy(pairs[0][1])]
    got, want = run_in_both(prog)
    for i, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-12, err_msg=f"KL {i}")


# -- values by hand (no TensorFlow needed) -----------------------------------------------------

def test_normal_by_hand():
    d = D.Normal(loc=1.0, scale=2.0)
    x = np.array([-3.0, 1.0, 4.0], np.float32)
    lp, cdf, lcdf, ent = run([d.log_prob(x), d.cdf(x), d.log_cdf(x), d.entropy()])
    want = -0.5 * ((x - 1.0) / 2.0) ** 2 - math.log(2.0) - 0.5 * math.log(2 * math.pi)
    np.testing.assert_allclose(lp, want, rtol=1e-6)
    np.testing.assert_allclose(cdf, [0.5 * math.erfc(2.0 / math.sqrt(2)), 0.5, 0.5 * math.erfc(-1.5 / math.sqrt(2))],
                               rtol=1e-6)
    np.testing.assert_allclose(ent, 0.5 * math.log(2 * math.pi * math.e) + math.log(2.0), rtol=1e-6)
    assert lp.dtype == np.float32
    # far tail: log_cdf finite where cdf underflows (asymptotic series)
    far = run(D.Normal(np.float64(0.0), np.float64(1.0)).log_cdf(np.array([-40.0, -10.0, 0.0, 10.0])))
    z = -40.0
    np.testing.assert_allclose(far[0], -z * z / 2 - math.log(-z) - 0.5 * math.log(2 * math.pi)
                               + math.log(1 - 1 / z ** 2 + 3 / z ** 4), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(far[1], math.log(0.5 * math.erfc(10 / math.sqrt(2))), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(far[3], math.log1p(-0.5 * math.erfc(10 / math.sqrt(2))), atol=1e-30)


def test_normal_quantile_matches_tensorflow():
    p = np.array([0.0, 1e-300, 1e-20, 1e-5, 0.01, 0.3, 0.5, 0.8, 0.999, 1 - 1e-12, 1.0, 1.5, -0.1])

    def prog(T):
        n = T.distributions.Normal(np.float64(1.0), np.float64(2.0))
        q = n.quantile(p)
        return [q, n.cdf(q), T.distributions.Normal(0.0, 1.0).quantile(p.astype(np.float32))]
    got, want = run_in_both(prog)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12, equal_nan=True)
    np.testing.assert_allclose(got[1][1:-3], p[1:-3], rtol=1e-12)
    np.testing.assert_allclose(got[2], want[2], rtol=1e-5, atol=1e-6, equal_nan=True)


def test_gamma_beta_by_hand():
    g = D.Gamma(np.float64(3.0), np.float64(2.0))
    x = np.array([0.5, 1.0, 2.5])
    lp, cdf, ent = run([g.log_prob(x), g.cdf(x), g.entropy()])
    np.testing.assert_allclose(lp, 2 * np.log(x) - 2 * x + 3 * math.log(2) - math.log(2), rtol=1e-10, atol=1e-14)
    # P(3, y) = 1 - e^-y (1 + y + y^2 / 2)
    y = 2 * x
    np.testing.assert_allclose(cdf, 1 - np.exp(-y) * (1 + y + y * y / 2), rtol=1e-10, atol=1e-14)
    psi3 = 1.5 - 0.5772156649015329
    np.testing.assert_allclose(ent, 3 - math.log(2) + math.log(2) - 2 * psi3, rtol=1e-10, atol=1e-14)
    b = D.Beta(np.float64(2.0), np.float64(1.0))       # density 2x, cdf x^2
    lp, cdf, mean, var = run([b.log_prob(P), b.cdf(P), b.mean(), b.variance()])
    np.testing.assert_allclose(lp, np.log(2 * P), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(cdf, P ** 2, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose([mean, var], [2 / 3, 2 / (9 * 4)], rtol=1e-10, atol=1e-14)


def test_kl_by_hand_and_registry():
    a, b = D.Normal(0.0, 1.0), D.Normal(1.0, 2.0)
    np.testing.assert_allclose(run(D.kl_divergence(a, b)), math.log(2) + (1 + 1) / 8 - 0.5, rtol=1e-6)

    class MyNormal(D.Normal):
        pass

    # a subclass finds its parent's registration (MRO distance)
    np.testing.assert_allclose(run(D.kl_divergence(MyNormal(0.0, 1.0), b)), math.log(2) + 0.25 - 0.5, rtol=1e-6)
    with pytest.raises(NotImplementedError):
        D.kl_divergence(a, D.Laplace(0.0, 1.0))

    @D.RegisterKL(MyNormal, D.Laplace)
    def _kl(x, y, name=None):
        return tf.constant(7.0)
    assert run(D.kl_divergence(MyNormal(0.0, 1.0), D.Laplace(0.0, 1.0))) == 7.0
    with pytest.raises(ValueError):
        D.RegisterKL(MyNormal, D.Laplace)(_kl)
    nan_kl = D.kl_divergence(D.Normal(np.nan, 1.0), b, allow_nan_stats=False)
    with pytest.raises(tf.errors.InvalidArgumentError):
        run(nan_kl)


# -- samples ---------------------------------------------------------------------------------

def test_sample_shapes_and_dtypes():
    n = D.Normal(np.zeros([2, 3], np.float32), 1.0)
    assert n.batch_shape.as_list() == [2, 3] and n.event_shape.as_list() == []
    s = n.sample([4, 5], seed=1)
    assert s.shape.as_list() == [4, 5, 2, 3]
    c = D.Categorical(logits=LOGITS)
    d = D.Dirichlet(np.ones([2, 3]))
    m = D.Multinomial(total_count=[3.0, 5.0], logits=LOGITS)
    dm = D.DirichletMultinomial([4.0, 2.0], np.ones([2, 3]))
    shapes = run([tf.shape(s), n.batch_shape_tensor(), n.event_shape_tensor(), c.sample(7), d.sample(4),
                  d.event_shape_tensor(), m.sample(6, seed=3), D.Bernoulli(probs=[0.5, 0.1]).sample(),
                  dm.sample([2, 3], seed=4)])
    assert list(shapes[0]) == [4, 5, 2, 3] and list(shapes[1]) == [2, 3] and list(shapes[2]) == []
    assert shapes[3].shape == (7, 2) and shapes[3].dtype == np.int32
    assert shapes[4].shape == (4, 2, 3) and list(shapes[5]) == [3]
    np.testing.assert_allclose(shapes[4].sum(-1), 1.0, rtol=1e-6)
    assert shapes[6].shape == (6, 2, 3)
    np.testing.assert_array_equal(shapes[6].sum(-1), np.tile([3.0, 5.0], (6, 1)))
    assert shapes[7].shape == (2,) and shapes[7].dtype == np.int32
    np.testing.assert_allclose(run(dm.mean()), [[4 / 3] * 3, [2 / 3] * 3], rtol=1e-6)
    assert shapes[8].shape == (2, 3, 2, 3)
    np.testing.assert_array_equal(shapes[8].sum(-1), np.tile([4.0, 2.0], (2, 3, 1)))


def test_sample_moments():
    n = 40000
    dists = {
        "normal": D.Normal(np.float64(1.5), np.float64(2.0)),
        "laplace": D.Laplace(np.float64(-1.0), np.float64(0.5)),
        "uniform": D.Uniform(np.float64(-1.0), np.float64(3.0)),
        "gamma_small": D.Gamma(np.float64(0.3), np.float64(2.0)),
        "gamma": D.Gamma(np.float64(4.0), np.float64(0.5)),
        "exponential": D.Exponential(np.float64(3.0)),
        "beta": D.Beta(np.float64(0.6), np.float64(2.5)),
        "student_t": D.StudentT(np.float64(6.0), np.float64(1.0), np.float64(2.0)),
        "bernoulli": D.Bernoulli(probs=np.float64(0.3), dtype=tf.float64),
    }
    names = sorted(dists)
    samples = run([dists[k].sample(n, seed=11) for k in names])
    moments = run([(dists[k].mean(), dists[k].variance()) for k in names])
    for k, s, (mu, var) in zip(names, samples, moments):
        sd = math.sqrt(var)
        assert abs(s.mean() - mu) < 5 * sd / math.sqrt(n), k
        assert abs(s.var() - var) < 0.06 * var, k
    cat = run(D.Categorical(probs=[0.2, 0.5, 0.3]).sample(n, seed=2))
    np.testing.assert_allclose(np.bincount(cat, minlength=3) / n, [0.2, 0.5, 0.3], atol=0.015)
    dir_s = run(D.Dirichlet(np.array([1.0, 2.0, 5.0])).sample(n, seed=4))
    np.testing.assert_allclose(dir_s.mean(0), [1 / 8, 2 / 8, 5 / 8], atol=0.01)
    mult = D.Multinomial(np.float64(6.0), probs=np.array([0.2, 0.5, 0.3]))
    ms, mv = run([mult.sample(n // 4, seed=6), mult.variance()])
    np.testing.assert_allclose(ms.mean(0), [1.2, 3.0, 1.8], atol=0.05)
    np.testing.assert_allclose(ms.var(0), mv, rtol=0.08)


def test_gradients_through_reparameterized_samples():
    loc = tf.constant(np.array([0.5, -1.0]))
    scale = tf.constant(np.array([2.0, 0.5]))
    lo, hi = tf.constant(np.float64(-1.0)), tf.constant(np.float64(3.0))
    for cls in (D.Normal, D.Laplace):
        s = cls(loc, scale).sample(5, seed=3)
        gl, gs, sv = run(tf.gradients(tf.reduce_sum(s), [loc, scale]) + [s])
        np.testing.assert_allclose(gl, [5.0, 5.0])
        # s = loc + scale * eps: d sum(s) / d scale = sum(eps) = sum((s - loc) / scale)
        np.testing.assert_allclose(gs, ((sv - [0.5, -1.0]) / [2.0, 0.5]).sum(0), rtol=1e-10)
    u = D.Uniform(lo, hi).sample(6, seed=5)
    glo, ghi, uv = run(tf.gradients(tf.reduce_sum(u), [lo, hi]) + [u])
    frac = (uv + 1.0) / 4.0
    np.testing.assert_allclose([glo, ghi], [(1 - frac).sum(), frac.sum()], rtol=1e-10)
    # the gamma family (implicit gradients): d E[s] / d parameter, estimated from the samples
    c, r = tf.constant(np.float64(2.5)), tf.constant(np.float64(2.0))
    a1, a0 = tf.constant(np.float64(1.5)), tf.constant(np.float64(3.0))
    gs = D.Gamma(c, r).sample(20000, seed=8)
    bs = D.Beta(a1, a0).sample(20000, seed=9)
    ds = D.Dirichlet(tf.stack([a1, a0])).sample(20000, seed=10)[:, 0]
    gc, gr = run(tf.gradients(tf.reduce_mean(gs), [c, r]))
    ga1, ga0 = run(tf.gradients(tf.reduce_mean(bs), [a1, a0]))
    da1 = run(tf.gradients(tf.reduce_mean(ds), [a1])[0])
    assert gc == pytest.approx(1 / 2.0, rel=0.03) and gr == pytest.approx(-2.5 / 4.0, rel=0.03)
    assert ga1 == pytest.approx(3.0 / 4.5 ** 2, rel=0.05) and ga0 == pytest.approx(-1.5 / 4.5 ** 2, rel=0.05)
    assert da1 == pytest.approx(3.0 / 4.5 ** 2, rel=0.05)
    assert D.Normal(0.0, 1.0).reparameterization_type == D.FULLY_REPARAMETERIZED
    assert D.Bernoulli(probs=0.5).reparameterization_type == D.NOT_REPARAMETERIZED
    assert repr(D.FULLY_REPARAMETERIZED) == "<Reparameterization Type: FULLY_REPARAMETERIZED>"


def test_nan_stats_and_validate_args():
    g = D.Gamma(np.array([0.5, 3.0]), 1.0)
    mode = run(g.mode())
    assert np.isnan(mode[0]) and mode[1] == 2.0
    strict = D.Gamma(np.array([0.5, 3.0]), 1.0, allow_nan_stats=False)
    assert not strict.allow_nan_stats
    with pytest.raises(tf.errors.InvalidArgumentError):
        run(strict.mode())
    t = run(D.StudentT(np.array([0.5, 1.5, 3.0]), 0.0, 1.0).variance())
    assert np.isnan(t[0]) and np.isinf(t[1]) and t[2] == 3.0
    # a constant bad scale fails when the graph is built (as TF's static check); a fed one when run
    with pytest.raises(tf.errors.InvalidArgumentError):
        D.Normal(0.0, -1.0, validate_args=True)
    scale = tf.placeholder(tf.float32, [])
    bad = D.Normal(0.0, scale, validate_args=True)
    assert bad.validate_args
    assert run(bad.log_prob(0.0), {scale: 1.0}) == pytest.approx(-0.5 * math.log(2 * math.pi))
    with pytest.raises(tf.errors.InvalidArgumentError):
        run(bad.log_prob(0.0), {scale: -1.0})
    with pytest.raises(ValueError):
        D.Bernoulli(logits=0.0, probs=0.5)
    with pytest.raises(NotImplementedError):
        D.Categorical(logits=LOGITS).mean()
    n = D.Normal(0.0, 1.0, name="MyNormal")
    assert n.name == "MyNormal" and n.parameters["scale"] == 1.0
    assert isinstance(n.copy(loc=2.0), D.Normal) and run(n.copy(loc=2.0).mean()) == 2.0


def test_parameter_gradients_match_tensorflow():
    def prog(T):
        Dt = T.distributions
        c, r = T.constant(np.array([0.7, 3.0])), T.constant(np.array([1.5, 0.4]))
        a1, a0 = T.constant(np.array([0.6, 2.0])), T.constant(np.array([1.2, 5.0]))
        loc, scale = T.constant(np.array([0.3, -1.0])), T.constant(np.array([0.8, 2.0]))
        lg = T.constant(LOGITS)
        x = np.array([0.4, 2.2])
        terms = [Dt.Gamma(c, r).log_prob(x), Dt.Gamma(c, r).entropy(), Dt.Beta(a1, a0).log_prob([0.3, 0.8]),
                 Dt.Beta(a1, a0).entropy(), Dt.Normal(loc, scale).log_cdf(x), Dt.Laplace(loc, scale).cdf(x),
                 Dt.StudentT(c + 1.0, loc, scale).log_prob(x), Dt.Categorical(logits=lg).entropy(),
                 Dt.kl_divergence(Dt.Gamma(c, r), Dt.Gamma(r, c)), Dt.kl_divergence(Dt.Beta(a1, a0), Dt.Beta(a0, a1)),
                 Dt.kl_divergence(Dt.Categorical(logits=lg), Dt.Categorical(logits=lg * 0.5))]
        return T.gradients(T.add_n([T.reduce_sum(t) for t in terms]), [c, r, a1, a0, loc, scale, lg])
    got, want = run_in_both(prog)
    for i, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, w, rtol=1e-8, atol=1e-12, err_msg=f"gradient {i}")
