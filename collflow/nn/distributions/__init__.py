"""tf.distributions (TF 1.x's tensorflow.compat.v1.distributions): Normal, Bernoulli,
Categorical, Uniform, Beta, Gamma, Exponential, Laplace, StudentT, Multinomial, Dirichlet,
DirichletMultinomial, the
Distribution base, kl_divergence / RegisterKL and the reparameterization types."""
from .distribution import (Distribution, ReparameterizationType, FULLY_REPARAMETERIZED,  # noqa: F401
                           NOT_REPARAMETERIZED, kl_divergence, RegisterKL)
from .continuous import Normal, Laplace, Uniform, StudentT  # noqa: F401
from .gamma_family import Gamma, Exponential, Beta, Dirichlet  # noqa: F401
from .discrete import Bernoulli, Categorical, Multinomial, DirichletMultinomial  # noqa: F401

__all__ = ["Distribution", "ReparameterizationType", "FULLY_REPARAMETERIZED", "NOT_REPARAMETERIZED",
           "kl_divergence", "RegisterKL", "Normal", "Bernoulli", "Categorical", "Uniform", "Beta", "Gamma",
           "Exponential", "Laplace", "StudentT", "Multinomial", "Dirichlet", "DirichletMultinomial"]
