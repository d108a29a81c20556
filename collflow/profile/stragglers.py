"""Stragglers and backup ranks: order statistics of per-rank step times.

A synchronous step waits for the slowest of its n ranks; with b backup ranks it waits for
the (n-b)-th fastest.  If each rank's delay this step is an independent draw X from a
distribution with quantile function Q, the k-th smallest of n draws, X_(k:n), has

    P(X_(k:n) <= Q(u)) = G(u) = P(Binomial(n, u) >= k)
    E[X_(k:n)] = integral over u of Q(u) dG(u)

computed here on a grid of u that is fine near 1 (where the largest of many draws lives).
Distributions: `Lognormal(median, sigma)` (the usual shape of step-time tails),
`Empirical(samples)` (a spread measured on a machine), `Constant(value)`.
"""
from __future__ import annotations

import math
from statistics import NormalDist
from typing import Sequence

import numpy as np

from ..errors import InvalidArgumentError

__all__ = ["Distribution", "Lognormal", "Empirical", "Constant", "order_stat_mean", "order_stat_quantile",
           "backup_speedup", "processor_sharing", "shared_cores_kth"]


class Distribution:
    """A distribution of per-rank delays (seconds), given by its quantile function."""

    def quantile(self, u: np.ndarray) -> np.ndarray:  # pragma: no cover - interface
        raise NotImplementedError

    def median(self) -> float:
        return float(self.quantile(np.array([0.5]))[0])


class Lognormal(Distribution):
    """exp(N(log median, sigma^2)): median `median`, log-spread `sigma`."""

    def __init__(self, median: float, sigma: float):
        if not (median >= 0 and sigma >= 0):
            raise InvalidArgumentError(f"Lognormal needs median >= 0 and sigma >= 0, got {median}, {sigma}")
        self.median_value, self.sigma = float(median), float(sigma)

    def quantile(self, u: np.ndarray) -> np.ndarray:
        inv = np.vectorize(NormalDist().inv_cdf, otypes=[np.float64])
        return self.median_value * np.exp(self.sigma * inv(np.clip(u, 1e-15, 1 - 1e-15)))

    def __repr__(self) -> str:
        return f"Lognormal(median={self.median_value:.4g}, sigma={self.sigma:.3g})"


class Empirical(Distribution):
    """The distribution of measured `samples` (linear interpolation between them)."""

    def __init__(self, samples: Sequence[float]):
        s = np.sort(np.asarray(samples, dtype=np.float64).ravel())
        if s.size == 0 or not np.all(np.isfinite(s)):
            raise InvalidArgumentError("Empirical needs one or more finite samples")
        self.samples = s

    def quantile(self, u: np.ndarray) -> np.ndarray:
        return np.quantile(self.samples, np.clip(u, 0.0, 1.0))

    def __repr__(self) -> str:
        return f"Empirical({self.samples.size} samples, median {np.median(self.samples):.4g})"


class Constant(Distribution):
    """Every rank takes `value`."""

    def __init__(self, value: float = 0.0):
        self.value = float(value)

    def quantile(self, u: np.ndarray) -> np.ndarray:
        return np.full(np.shape(u), self.value)


def _check(k: int, n: int) -> None:
    if not (1 <= k <= n):
        raise InvalidArgumentError(f"order statistic k must be in [1, n], got k={k}, n={n}")


def _grid() -> np.ndarray:
    """u in (0, 1): uniform, plus points crowding toward 1 (down to 1e-12 from it)."""
    uni = (np.arange(4000) + 0.5) / 4000
    tail = 1.0 - np.logspace(-12, np.log10(0.5), 3000)
    head = np.logspace(-12, np.log10(0.5), 1000)
    return np.unique(np.concatenate([head, uni, tail]))


def _cdf(u: np.ndarray, k: int, n: int) -> np.ndarray:
    """G(u) = P(Binomial(n, u) >= k), for each u."""
    j = np.arange(k, n + 1, dtype=np.float64)
    logc = np.array([math.lgamma(n + 1) - math.lgamma(x + 1) - math.lgamma(n - x + 1) for x in j])
    lu, l1u = np.log(u)[:, None], np.log1p(-u)[:, None]
    return np.clip(np.exp(logc[None, :] + j[None, :] * lu + (n - j)[None, :] * l1u).sum(axis=1), 0.0, 1.0)


def order_stat_mean(dist: Distribution, k: int, n: int) -> float:
    """E[X_(k:n)]: the mean of the k-th smallest of n independent draws of `dist`."""
    _check(k, n)
    u = np.concatenate([[0.0], _grid(), [1.0]])
    g = np.concatenate([[0.0], _cdf(u[1:-1], k, n), [1.0]])
    mid = 0.5 * (u[1:] + u[:-1])
    return float(np.sum(dist.quantile(mid) * np.diff(g)))


def order_stat_quantile(dist: Distribution, k: int, n: int, q: float = 0.5) -> float:
    """The q-quantile of X_(k:n) (q = 0.5: its median)."""
    _check(k, n)
    if not 0 < q < 1:
        raise InvalidArgumentError(f"order_stat_quantile: q must be in (0, 1), got {q}")
    u = _grid()
    g = _cdf(u, k, n)
    # G is increasing in u: bisect for G(u*) = q on the grid, then refine between neighbours
    i = int(np.searchsorted(g, q))
    i = min(max(i, 1), u.size - 1)
    lo, hi = u[i - 1], u[i]
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if _cdf(np.array([mid]), k, n)[0] < q:
            lo = mid
        else:
            hi = mid
    return float(dist.quantile(np.array([0.5 * (lo + hi)]))[0])


def backup_speedup(step_b: float, step_0: float, n: int, b: int) -> float:
    """The TensorFlow paper's normalized speedup of b backup workers over none for n
    workers: t(0)/t(b) x n/(n+b), the step-time gain discounted by the extra workers
    (Abadi et al., OSDI 2016, section 6.3)."""
    if step_b <= 0 or step_0 <= 0:
        raise InvalidArgumentError("backup_speedup needs positive step times")
    return step_0 / step_b * n / (n + b)


def processor_sharing(arrivals: Sequence[float], work: float, cores: int) -> np.ndarray:
    """Finish times of jobs arriving at `arrivals`, each needing `work` seconds of one core,
    on `cores` cores shared equally among the jobs running (each runs at min(1, cores /
    running)): ranks that time-share a machine, and sleep (a straggler's delay) before
    their compute."""
    if cores < 1 or work < 0:
        raise InvalidArgumentError(f"processor_sharing needs cores >= 1 and work >= 0, got {cores}, {work}")
    order = np.argsort(np.asarray(arrivals, dtype=np.float64), kind="stable")
    arr = np.asarray(arrivals, dtype=np.float64)[order]
    left: dict = {}
    done = np.empty(arr.size)
    t, i = (arr[0] if arr.size else 0.0), 0
    while i < arr.size or left:
        while i < arr.size and arr[i] <= t:
            left[i] = work
            i += 1
        if not left:
            t = arr[i]
            continue
        rate = min(1.0, cores / len(left))
        first = min(left.values()) / rate
        nxt = arr[i] - t if i < arr.size else np.inf
        dt = min(first, nxt)
        t += dt
        for j in list(left):
            left[j] -= dt * rate
            if left[j] <= 1e-15:
                done[j] = t
                del left[j]
    out = np.empty_like(done)
    out[order] = done
    return out


def shared_cores_kth(dist: Distribution, k: int, n: int, work: float, cores: int, q: float = 0.5,
                     samples: int = 2000, seed: int = 0) -> float:
    """The q-quantile (or the mean, q=None) over draws of the k-th finish of n ranks on
    `cores` cores, each delayed by a draw of `dist` (asleep, leaving its core to others)
    and then computing `work` core-seconds (Monte Carlo with processor_sharing)."""
    _check(k, n)
    rng = np.random.default_rng(seed)
    delays = dist.quantile(rng.random((samples, n)).ravel()).reshape(samples, n)
    kth = np.array([np.sort(processor_sharing(d, work, cores))[k - 1] for d in delays])
    return float(np.mean(kth)) if q is None else float(np.quantile(kth, q))
