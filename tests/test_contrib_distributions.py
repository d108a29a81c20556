"""tf.contrib.distributions' vector distributions (collflow/nn/distributions/multivariate.py):
densities, entropies, KL divergences and moments against NumPy, sample statistics, shapes,
and finite-difference gradients of the log densities.  (TF 2.x moved these to TF Probability,
which is not installed; the formulas are the textbook ones TF 1.x's contrib implemented.)"""
import math

import numpy as np
import pytest

import collflow.compat.v1 as tf
from gradcheck import Case, check_case

D = tf.contrib.distributions
pytestmark = pytest.mark.usefixtures("graph")  # a fresh default graph per test


def _mvn_logpdf(x, mu, cov):
    k = len(mu)
    d = x - mu
    sign, logdet = np.linalg.slogdet(cov)
    return -0.5 * (d @ np.linalg.solve(cov, d) + k * math.log(2 * math.pi) + logdet)


def _kl(mu_a, cov_a, mu_b, cov_b):
    k = len(mu_a)
    ib = np.linalg.inv(cov_b)
    d = mu_b - mu_a
    return 0.5 * (np.trace(ib @ cov_a) + d @ ib @ d - k + np.linalg.slogdet(cov_b)[1] - np.linalg.slogdet(cov_a)[1])


def test_multivariate_normals_match_numpy():
    rng = np.random.RandomState(0)
    mu = rng.randn(3)
    L = np.tril(rng.randn(3, 3)) + 3 * np.eye(3)
    diag = rng.rand(3) + 0.5
    x = rng.randn(4, 3)
    tril = D.MultivariateNormalTriL(loc=mu, scale_tril=L)
    full = D.MultivariateNormalFullCovariance(loc=mu, covariance_matrix=L @ L.T)
    dg = D.MultivariateNormalDiag(loc=mu, scale_diag=diag)
    iso = D.MultivariateNormalDiag(loc=mu, scale_identity_multiplier=2.0)
    with tf.Session() as s:
        r = s.run(dict(t=tril.log_prob(x), f=full.log_prob(x), d=dg.log_prob(x), i=iso.log_prob(x),
                       et=tril.entropy(), ed=dg.entropy(), kl_td=D.kl_divergence(tril, dg),
                       kl_dt=D.kl_divergence(dg, full), kl_dd=D.kl_divergence(dg, iso), cov=tril.covariance(),
                       var=tril.variance(), sd=dg.stddev(), mean=full.mean()))
    cov_t, cov_d, cov_i = L @ L.T, np.diag(diag ** 2), 4 * np.eye(3)
    for key, cov in (("t", cov_t), ("f", cov_t), ("d", cov_d), ("i", cov_i)):
        np.testing.assert_allclose(r[key], [_mvn_logpdf(xi, mu, cov) for xi in x], rtol=1e-10)
    ent = lambda cov: 0.5 * (3 * (1 + math.log(2 * math.pi)) + np.linalg.slogdet(cov)[1])  # noqa: E731
    np.testing.assert_allclose([r["et"], r["ed"]], [ent(cov_t), ent(cov_d)], rtol=1e-10)
    np.testing.assert_allclose(r["kl_td"], _kl(mu, cov_t, mu, cov_d), rtol=1e-10)
    np.testing.assert_allclose(r["kl_dt"], _kl(mu, cov_d, mu, cov_t), rtol=1e-10)
    np.testing.assert_allclose(r["kl_dd"], _kl(mu, cov_d, mu, cov_i), rtol=1e-10)
    np.testing.assert_allclose(r["cov"], cov_t, rtol=1e-12)
    np.testing.assert_allclose(r["var"], np.diag(cov_t), rtol=1e-12)
    np.testing.assert_allclose(r["sd"], diag, rtol=1e-12)
    np.testing.assert_allclose(r["mean"], mu, rtol=1e-12)


def test_batches_shapes_and_sample_moments():
    tf.set_random_seed(3)
    L = np.array([[1.0, 0.0], [0.8, 0.5]])
    d = D.MultivariateNormalTriL(loc=[[0.0, 1.0], [2.0, -1.0], [0.0, 0.0]], scale_tril=L)
    assert d.batch_shape.as_list() == [3] and d.event_shape.as_list() == [2]
    samples = d.sample(20000)
    assert samples.get_shape().as_list() == [20000, 3, 2]
    with tf.Session() as s:
        v = s.run(samples)
    np.testing.assert_allclose(v.mean(0), [[0, 1], [2, -1], [0, 0]], atol=0.03)
    np.testing.assert_allclose(np.cov(v[:, 1].T), L @ L.T, atol=0.04)


def test_one_hot_and_relaxed_categoricals():
    tf.set_random_seed(4)
    logits = np.array([0.5, -1.0, 2.0])
    lsm = logits - np.log(np.exp(logits).sum())
    oh = D.OneHotCategorical(logits=logits)
    relaxed = D.RelaxedOneHotCategorical(0.7, logits=logits)
    exp_relaxed = D.ExpRelaxedOneHotCategorical(0.7, logits=logits)
    x = np.array([0.2, 0.1, 0.7])
    with tf.Session() as s:
        samples, lp, mode, ent, rs, rlp, elp = s.run([oh.sample(5000), oh.log_prob([0, 0, 1]), oh.mode(), oh.entropy(),
                                                      relaxed.sample(5000), relaxed.log_prob(x),
                                                      exp_relaxed.log_prob(np.log(x))])
    assert samples.dtype == np.int32 and (samples.sum(1) == 1).all()
    np.testing.assert_allclose(samples.mean(0), np.exp(lsm), atol=0.03)
    np.testing.assert_allclose(lp, lsm[2], rtol=1e-12)
    np.testing.assert_array_equal(mode, [0, 0, 1])
    np.testing.assert_allclose(ent, -(np.exp(lsm) * lsm).sum(), rtol=1e-12)
    np.testing.assert_allclose(rs.sum(1), 1, rtol=1e-12)
    assert (rs > 0).all()
    # the Concrete density: (k-1)! t^(k-1) prod(p_i x_i^(-t-1)) / (sum p_i x_i^-t)^k
    t, p = 0.7, np.exp(lsm)
    dens = math.factorial(2) * t ** 2 * np.prod(p * x ** (-t - 1)) / np.sum(p * x ** -t) ** 3
    np.testing.assert_allclose(rlp, math.log(dens), rtol=1e-10)
    np.testing.assert_allclose(elp, rlp + np.log(x).sum(), rtol=1e-10)
    with pytest.raises(ValueError, match="probs or logits"):
        D.RelaxedOneHotCategorical(0.5)


L0 = np.array([[1.2, 0.0, 0.0], [0.3, 0.9, 0.0], [-0.4, 0.2, 1.5]])


@pytest.mark.parametrize("case", [
    Case("MatrixTriangularSolve", lambda mu, x: D.MultivariateNormalTriL(loc=mu, scale_tril=L0).log_prob(x),
         [(3,), (4, 3)], id="MultivariateNormalTriL.log_prob"),
    Case("Cholesky", lambda x: D.MultivariateNormalFullCovariance(
        covariance_matrix=tf.matmul(x, x, transpose_b=True) + 2 * tf.eye(3, dtype=tf.float64)).log_prob([0.5, -1, 2]),
         [(3, 3)], id="MultivariateNormalFullCovariance.log_prob"),
    Case("LogSoftmax", lambda lg, t: D.RelaxedOneHotCategorical(t, logits=lg).log_prob([0.3, 0.3, 0.4]),
         [(2, 3), ()], make_inputs=lambda r: [r.normal(size=(2, 3)), np.array(0.8)], id="RelaxedOneHotCategorical"),
], ids=str)
def test_gradients_match_finite_differences(case):
    check_case(case)
