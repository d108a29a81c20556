"""The scaling model: a profiled step replayed with modelled collectives, for N ranks.

    model = ScaleModel(profiles, FlatRing(cluster), batch_per_rank=256)
    p = model.predict(64)          # Prediction: step_s, samples_per_s, efficiency, ...

The replay walks the step's segments (collflow.profile.trace) in order with a clock:
compute segments advance it (times `slowdown(n)`: what n ranks sharing a machine cost each
rank's compute, 1 on a cluster); a launch hands the collective to the network, which runs
collectives one at a time in launch order, each costing the cost model's time for its
calls; a wait stops the clock until the collective is done.  That is overlap of buckets
with the backward pass as the plan scheduled them.  With `overlap=False` a collective
makes progress only while its rank waits for it (collflow's shared-memory all-reduce on a
machine without a spare core; MPI without a progress thread): at a wait, every collective
launched up to it runs then.

Stragglers: each rank's step is delayed by an independent draw from `straggler` (a
collflow.profile.stragglers distribution).  A synchronous step waits for the slowest rank,
one with b backup ranks for the (n-b)-th, and then pays `quorum_s` for deciding the
quorum (collflow.comm.backup: a READY message to rank 0 and its DECISION back); its
profile should come from a graph built with the backup ranks (gradients gated until the
backward pass is done).  The step's samples are those of the n - b contributing ranks.

Efficiency at n: samples/s(n) / (n x samples/s(1)), weak scaling (a fixed batch per rank).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from ..errors import InvalidArgumentError
from .collectives import CostModel
from .stragglers import Distribution, order_stat_mean, order_stat_quantile, shared_cores_kth
from .trace import COMPUTE, LAUNCH, WAIT, Segment, StepProfile, segment_keys

__all__ = ["Prediction", "ScaleModel", "ProfileFamily", "replay"]


@dataclass
class Prediction:
    """The model's answer for n ranks: `step_s`, `samples_per_s`, `efficiency` (against n
    times the one-rank rate; NaN without a profile of the step on one rank), and the
    step's parts: `compute_s`, `comm_s` (the collectives' costs, overlapped or not),
    `exposed_comm_s` (what they add to the step), `straggler_s` (waiting for the quorum's
    slowest rank, and deciding the quorum)."""

    n: int
    step_s: float
    samples_per_s: float
    efficiency: float
    compute_s: float
    comm_s: float
    exposed_comm_s: float
    straggler_s: float

    def as_dict(self) -> Dict[str, float]:
        return dict(self.__dict__)


SyncCost = Union[float, Callable[[float], float]]


def replay(profile: StepProfile, costs: CostModel, n: int, overlap: bool = True,
           slowdown: float = 1.0, sync_s: SyncCost = 0.0) -> Tuple[float, float, float]:
    """(step seconds, compute seconds, collective seconds) of one step on n ranks.
    `sync_s`: added at every wait that follows compute (a point where ranks that were
    computing meet, and the skew between them grew while they computed; see
    calibrate.time_sync_point): seconds, or a function of the compute seconds since the
    last wait (the previous step's end counts as the step's first compute)."""
    sync = sync_s if callable(sync_s) else (lambda _dt, c=float(sync_s): c)
    t = 0.0            # this rank's clock
    since = 0.0        # compute since the last wait
    net = 0.0          # when the network finishes what it was given (overlap)
    done: Dict[str, float] = {}      # collective -> when it completes (overlap)
    queued: List[Tuple[str, float]] = []  # launched, not yet run (no overlap)
    compute = comm = 0.0
    # the compute after the last wait runs before the next step's first meeting point
    tail = 0.0
    for s in reversed(profile.segments):
        if s.kind == WAIT:
            break
        if s.kind == COMPUTE:
            tail += s.seconds * slowdown
    since = tail
    for s in profile.segments:
        if s.kind == COMPUTE:
            dt = s.seconds * slowdown
            t += dt
            compute += dt
            since += dt
        elif s.kind == LAUNCH:
            c = sum(costs.cost(kind, nb, n) for kind, nb in s.calls)
            comm += c
            if overlap:
                net = max(net, t) + c
                done[s.op] = net
            else:
                queued.append((s.op, c))
        elif s.kind == WAIT:
            if n > 1 and since > 0:
                extra = float(sync(since))
                t += extra
                comm += extra
            since = 0.0
            if overlap:
                t = max(t, done.get(s.op, t))
            else:
                names = [q[0] for q in queued]
                if s.op in names:  # it and everything launched before it run now
                    upto = names.index(s.op) + 1
                    t += sum(c for _, c in queued[:upto])
                    del queued[:upto]
        else:
            raise InvalidArgumentError(f"replay: unknown segment kind {s.kind!r}")
    if not overlap and queued:  # collectives nobody waited for still end the step
        t += sum(c for _, c in queued)
    return t, compute, comm


class ProfileFamily:
    """Profiles of one step built for several world sizes; `at(n)` gives the profile for n:
    the one measured there, else one extended from the profiles of n >= 2 (whose segments
    must match: the same graph at another size).  A segment that grows by more than
    `min_growth` (a fraction of it) and more than 2% of the step's compute from the smallest
    to the largest profiled n grows linearly in n (least squares: the work of rows gathered
    from every rank); any other stays at its median, so the noise of a few profiles is not
    extrapolated to hundreds of ranks."""

    def __init__(self, profiles: Mapping[int, StepProfile], min_growth: float = 0.25):
        if not profiles:
            raise InvalidArgumentError("ProfileFamily needs at least one profile")
        self.profiles = {int(k): v for k, v in profiles.items()}
        multi = sorted(k for k in self.profiles if k >= 2)
        self._fit: Optional[Tuple[List[Segment], np.ndarray, np.ndarray]] = None
        if multi:
            base = self.profiles[multi[0]].segments
            # segments are matched by op (and occurrence), not position: independent ops
            # (the waits at a step's end) may run in another order in another plan
            keys = segment_keys(base)
            ys_rows = []
            for k in multi:
                segs = self.profiles[k].segments
                secs = dict(zip(segment_keys(segs), (s.seconds for s in segs)))
                if set(secs) != set(keys):
                    raise InvalidArgumentError(f"ProfileFamily: the profiles for {multi[0]} and {k} ranks have "
                                               "different segments (not the same step)")
                ys_rows.append([secs[key] for key in keys])
            xs = np.array(multi, dtype=np.float64)
            ys = np.array(ys_rows)  # [sizes, segments]
            a, b = np.median(ys, axis=0), np.zeros(len(base))
            if len(multi) > 1:
                slope, icept = np.polyfit(xs, ys, 1)
                # grows: by min_growth of itself, and by 2% of the step's compute (the
                # jitter of a tiny segment is no trend)
                rise = slope * (xs[-1] - xs[0])
                grows = (rise > min_growth * np.maximum(a, 1e-12)) & (rise > 0.02 * float(np.median(ys.sum(axis=1))))
                a = np.where(grows, icept, a)
                b = np.where(grows, slope, 0.0)
            self._fit = (base, a, b)

    def at(self, n: int) -> StepProfile:
        if n in self.profiles:
            return self.profiles[n]
        if self._fit is None or n < 2:
            raise InvalidArgumentError(f"ProfileFamily: no profile for {n} ranks and none of 2+ ranks to extend "
                                       f"(have {sorted(self.profiles)})")
        base, a, b = self._fit
        segs = [Segment(s.kind, float(max(0.0, a[i] + b[i] * n)), s.op, s.calls) for i, s in enumerate(base)]
        return StepProfile(segs, n, None, ["extended from the profiles of " + ", ".join(
            str(k) for k in sorted(self.profiles) if k >= 2) + " ranks"])


ProfileSource = Union[StepProfile, ProfileFamily, Mapping[int, StepProfile], Callable[[int], StepProfile]]
Slowdown = Union[float, Mapping[int, float], Callable[[int], float]]


class ScaleModel:
    """Predicts step time, samples/s and efficiency for n ranks (see the module doc).

    profiles: one StepProfile for every n, a ProfileFamily, a dict n -> profile, or a
    function.  costs: a collflow.profile.collectives CostModel.  batch_per_rank: samples
    per rank per step.  overlap: collectives progress during compute.  slowdown: compute
    factor for n ranks (a number, dict or function; 1 by default).  straggler: per-rank
    delay distribution (None: no stragglers).  backup_ranks: b.  quorum_s: the quorum's
    decision time (with b > 0).  statistic: 'mean' or 'median' of the straggler wait.
    sync_s: the cost of each point where computing ranks meet (replay's: seconds or a
    function of the compute since the last one; 0 on a cluster).
    cores: with stragglers, the n ranks share this many cores (one machine): a delayed
    rank sleeps and leaves its core to the others, so the compute before the step's first
    collective is simulated under processor sharing (stragglers.shared_cores_kth) instead
    of slowed by `slowdown` throughout; None: a core per rank.
    """

    def __init__(self, profiles: ProfileSource, costs: CostModel, batch_per_rank: int, overlap: bool = True,
                 slowdown: Slowdown = 1.0, straggler: Optional[Distribution] = None, backup_ranks: int = 0,
                 quorum_s: float = 0.0, statistic: str = "mean", sync_s: SyncCost = 0.0,
                 cores: Optional[int] = None):
        if batch_per_rank < 1:
            raise InvalidArgumentError(f"ScaleModel: batch_per_rank must be >= 1, got {batch_per_rank}")
        if backup_ranks < 0:
            raise InvalidArgumentError(f"ScaleModel: backup_ranks must be >= 0, got {backup_ranks}")
        if statistic not in ("mean", "median"):
            raise InvalidArgumentError(f"ScaleModel: statistic must be 'mean' or 'median', got {statistic!r}")
        if isinstance(profiles, Mapping):
            profiles = ProfileFamily(profiles)
        self._profiles = profiles
        self.costs = costs
        self.batch_per_rank = int(batch_per_rank)
        self.overlap = overlap
        self._slowdown = slowdown
        self.straggler = straggler
        self.backup_ranks = int(backup_ranks)
        self.quorum_s = float(quorum_s)
        self.statistic = statistic
        self.sync_s = sync_s
        if cores is not None and cores < 1:
            raise InvalidArgumentError(f"ScaleModel: cores must be >= 1, got {cores}")
        self.cores = cores

    def profile(self, n: int) -> StepProfile:
        p = self._profiles
        if isinstance(p, StepProfile):
            return p
        if isinstance(p, ProfileFamily):
            return p.at(n)
        return p(n)

    def slowdown(self, n: int) -> float:
        s = self._slowdown
        if isinstance(s, Mapping):
            if n not in s:
                raise InvalidArgumentError(f"ScaleModel: no compute slowdown given for {n} ranks (have {sorted(s)})")
            return float(s[n])
        return float(s(n)) if callable(s) else float(s)

    def _step(self, n: int) -> Tuple[float, float, float, float]:
        """(step, compute, comm, straggler wait) seconds at n ranks."""
        if n < 1:
            raise InvalidArgumentError(f"ScaleModel: n must be >= 1, got {n}")
        b = self.backup_ranks if n > 1 else 0
        if b >= n:
            raise InvalidArgumentError(f"ScaleModel: {b} backup ranks need more than {b} ranks, got {n}")
        step, compute, comm = replay(self.profile(n), self.costs, n, self.overlap, self.slowdown(n), self.sync_s)
        wait = 0.0
        if self.straggler is not None:
            k = n - b
            prof, slow = self.profile(n), self.slowdown(n)
            if self.cores is not None and n > self.cores:
                # the compute up to the first collective, in core-seconds at this machine's
                # per-rank efficiency under sharing (slowdown over the fair share n/cores),
                # runs under processor sharing with the delays; it replaces its replayed time
                first = next((i for i, s in enumerate(prof.segments) if s.kind == LAUNCH), len(prof.segments))
                pre = sum(s.seconds for s in prof.segments[:first]) * slow
                work = pre / (n / self.cores)
                kth = shared_cores_kth(self.straggler, k, n, work, self.cores,
                                       None if self.statistic == "mean" else 0.5)
                wait = kth - pre
            else:
                wait = (order_stat_mean(self.straggler, k, n) if self.statistic == "mean"
                        else order_stat_quantile(self.straggler, k, n, 0.5))
        if b:
            wait += self.quorum_s
        return step + wait, compute, comm, wait

    def predict(self, n: int) -> Prediction:
        step, compute, comm, wait = self._step(n)
        b = self.backup_ranks if n > 1 else 0
        sps = (n - b) * self.batch_per_rank / step
        try:
            one = self.batch_per_rank / self._step(1)[0] if n > 1 else sps
        except InvalidArgumentError:  # no profile of the step on one rank: no efficiency
            one = float("nan")
        return Prediction(n, step, sps, sps / (n * one), compute, comm, max(0.0, step - compute - wait), wait)

    def sweep(self, ns: Sequence[int]) -> List[Prediction]:
        return [self.predict(int(n)) for n in ns]
