"""collflow.profile: a calibrated scaling model of synchronous data-parallel training.

Measured inputs, one module each:
  trace        a traced step (RunMetadata.step_stats) as compute segments and collectives
               (profile_step), from one process: loopback.LoopbackCommunicator stands in
               for the other N-1 ranks, so the step's local work is that of an N-rank job;
  calibrate    a transport's collectives timed and fitted (seconds = a + b * bytes);
  collectives  the alpha-beta costs of ring, hierarchical and measured collectives, and
               published link parameters with their sources;
  sparse       distinct rows a batch touches (Zipf ids), bytes of PS and allgather exchanges;
  stragglers   order statistics of per-rank delays (backup ranks).
model.ScaleModel replays a profile with those costs for N = 1 ... 512 ranks.  See
docs/scaling.md and benchmarks/bench_scale_model.py (the validation on this machine).
"""
from .calibrate import Timings, fit_affine, link_from_fit, time_collective, time_sync_point  # noqa: F401
from .collectives import (LINKS, Cluster, CostModel, FlatRing, Hierarchical, Link, Measured,  # noqa: F401
                          pairwise_alltoall, ring_allgather, ring_allreduce, ring_reduce_scatter)
from .loopback import CollectiveCall, LoopbackCommunicator  # noqa: F401
from .model import Prediction, ProfileFamily, ScaleModel, replay  # noqa: F401
from .sparse import (allgather_bytes, dense_bytes, expected_unique, expected_unique_fields,  # noqa: F401
                     ps_bytes, zipf_probabilities)
from .stragglers import (Constant, Empirical, Lognormal, backup_speedup, order_stat_mean,  # noqa: F401
                         order_stat_quantile)
from .trace import Segment, StepProfile, from_step_stats, median_profile, profile_step  # noqa: F401
