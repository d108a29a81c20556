"""What a collective costs: the latency-bandwidth (alpha-beta) model, algorithms, links.

A link moves a message of m bytes in `alpha + m * beta` seconds (Hockney's model; the
collective costs below are those of Thakur, Rabenseifner & Gropp, "Optimization of
Collective Communication Operations in MPICH", IJHPCA 19(1), 2005, and of NCCL's ring,
whose bandwidth terms NVIDIA's nccl-tests doc/PERFORMANCE.md states as "bus bandwidth"
factors: 2(n-1)/n for all-reduce, (n-1)/n for reduce-scatter, all-gather and all-to-all).

Every cost model answers three questions for a world of n ranks:

  allreduce(nbytes, n)   a vector of nbytes on every rank, summed;
  allgather(nbytes, n)   every rank contributes nbytes, every rank gets all n blocks;
  alltoall(nbytes, n)    every rank's buffer of nbytes is spread evenly over the ranks, so
                         (n-1)/n of it leaves the rank (the parameter server's lookups and
                         pushes: rows go to their owners).

Algorithms:
  FlatRing      one ring over all ranks, host by host: every step waits for its slowest
                hop, the inter-host one once there is more than one host (Horovod/NCCL's
                ring as in 2018; bandwidth-optimal, 2(n-1) latency terms).
  Hierarchical  reduce-scatter inside each host, an all-reduce of each 1/l shard among the
                hosts (the l local ranks' rings share the host's NICs), all-gather inside
                each host (Horovod's HOROVOD_HIERARCHICAL_ALLREDUCE, NCCL's tree/ring
                split).  collflow does not implement it yet: this is its model only.
  Measured      times fitted on this machine per world size (collflow.profile.calibrate),
                for validating the step model where we can run it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

from ..errors import InvalidArgumentError

__all__ = ["Link", "Cluster", "CostModel", "FlatRing", "Hierarchical", "Measured", "LINKS",
           "ring_allreduce", "ring_reduce_scatter", "ring_allgather", "pairwise_alltoall"]


@dataclass(frozen=True)
class Link:
    """A link: `alpha` seconds per message, `beta` seconds per byte (1 / bandwidth), and
    `source`: where the numbers come from."""

    name: str
    alpha: float
    beta: float
    source: str = ""

    def __post_init__(self) -> None:
        if not (self.alpha >= 0 and self.beta >= 0 and math.isfinite(self.alpha) and math.isfinite(self.beta)):
            raise InvalidArgumentError(f"link {self.name!r}: alpha and beta must be finite and >= 0, "
                                       f"got alpha={self.alpha!r}, beta={self.beta!r}")

    @classmethod
    def from_rate(cls, name: str, latency_s: float, gbit_per_s: Optional[float] = None,
                  gbyte_per_s: Optional[float] = None, efficiency: float = 1.0, source: str = "") -> "Link":
        """A link of `latency_s` and a rate in Gb/s (line rate) or GB/s, of which the
        collective achieves `efficiency`."""
        if (gbit_per_s is None) == (gbyte_per_s is None):
            raise InvalidArgumentError(f"link {name!r}: give exactly one of gbit_per_s and gbyte_per_s")
        if not 0 < efficiency <= 1:
            raise InvalidArgumentError(f"link {name!r}: efficiency must be in (0, 1], got {efficiency}")
        rate = (gbit_per_s * 1e9 / 8) if gbit_per_s is not None else gbyte_per_s * 1e9  # type: ignore[operator]
        if not rate > 0:
            raise InvalidArgumentError(f"link {name!r}: the rate must be positive")
        return cls(name, float(latency_s), 1.0 / (rate * efficiency), source)

    @property
    def bandwidth(self) -> float:
        """Bytes per second (inf for a free link)."""
        return math.inf if self.beta == 0 else 1.0 / self.beta

    def time(self, nbytes: float) -> float:
        """One message of nbytes."""
        return self.alpha + nbytes * self.beta


# -- the textbook costs on one kind of link -------------------------------------------------------


def ring_allreduce(nbytes: float, n: int, link: Link) -> float:
    """Ring all-reduce (reduce-scatter + all-gather): 2(n-1) steps of nbytes/n each."""
    if n <= 1:
        return 0.0
    return 2 * (n - 1) * link.alpha + 2 * (n - 1) / n * nbytes * link.beta


def ring_reduce_scatter(nbytes: float, n: int, link: Link) -> float:
    """Ring reduce-scatter of an nbytes vector: n-1 steps of nbytes/n."""
    if n <= 1:
        return 0.0
    return (n - 1) * link.alpha + (n - 1) / n * nbytes * link.beta


def ring_allgather(nbytes: float, n: int, link: Link) -> float:
    """Ring all-gather, nbytes contributed per rank: n-1 steps of nbytes."""
    if n <= 1:
        return 0.0
    return (n - 1) * (link.alpha + nbytes * link.beta)


def pairwise_alltoall(nbytes: float, n: int, link: Link) -> float:
    """Pairwise-exchange all-to-all of an nbytes buffer spread evenly over n ranks."""
    if n <= 1:
        return 0.0
    return (n - 1) * link.alpha + (n - 1) / n * nbytes * link.beta


# -- machines and algorithms ------------------------------------------------------------------------


@dataclass(frozen=True)
class Cluster:
    """Hosts of `ranks_per_host` ranks: `intra` links the ranks of a host (shared memory,
    NVLink, PCIe), `inter` links hosts (one per NIC; `nics_per_host` NICs share a host's
    inter-host traffic)."""

    name: str
    ranks_per_host: int
    intra: Link
    inter: Link
    nics_per_host: int = 1

    def __post_init__(self) -> None:
        if self.ranks_per_host < 1 or self.nics_per_host < 1:
            raise InvalidArgumentError(f"cluster {self.name!r}: ranks_per_host and nics_per_host must be >= 1")

    def hosts(self, n: int) -> int:
        return -(-n // self.ranks_per_host)


class CostModel:
    """Seconds per collective for n ranks (see the module doc for what nbytes means), plus
    `overhead` seconds per call on more than one rank: the software's fixed cost of issuing
    a collective (collflow's negotiation and Python dispatch; measured, not a wire latency)."""

    name = "abstract"
    overhead = 0.0

    def allreduce(self, nbytes: float, n: int) -> float:  # pragma: no cover - interface
        raise NotImplementedError

    def allgather(self, nbytes: float, n: int) -> float:  # pragma: no cover - interface
        raise NotImplementedError

    def alltoall(self, nbytes: float, n: int) -> float:  # pragma: no cover - interface
        raise NotImplementedError

    def cost(self, kind: str, nbytes: float, n: int) -> float:
        """The cost of one call of collective `kind` (a Communicator method's name)."""
        if n <= 1:
            return 0.0
        if kind in ("allreduce", "reduce_scatter", "reduce"):
            # reduce-scatter and reduce: the first half of a ring all-reduce
            full = self.allreduce(nbytes, n)
            t = full if kind == "allreduce" else 0.5 * full
        elif kind in ("allgather", "allgatherv", "broadcast"):
            t = self.allgather(nbytes, n)
        elif kind in ("alltoall", "alltoallv"):
            t = self.alltoall(nbytes, n)
        elif kind == "barrier":
            t = self.allreduce(0.0, n)
        else:
            raise InvalidArgumentError(f"{self.name}: no cost for a collective of kind {kind!r}")
        return t + self.overhead


def _slowest_hop(cluster: Cluster, n: int, nbytes: float) -> float:
    """One ring step moving nbytes per rank: the slowest of its hops."""
    t = cluster.intra.time(nbytes) if min(n, cluster.ranks_per_host) > 1 else 0.0
    if cluster.hosts(n) > 1:
        t = max(t, cluster.inter.time(nbytes))
    return t


class FlatRing(CostModel):
    """One ring over all ranks, host by host (see the module doc)."""

    def __init__(self, cluster: Cluster, overhead: float = 0.0):
        self.cluster = cluster
        self.overhead = float(overhead)
        self.name = f"flat ring ({cluster.name})"

    def allreduce(self, nbytes: float, n: int) -> float:
        if n <= 1:
            return 0.0
        return 2 * (n - 1) * _slowest_hop(self.cluster, n, nbytes / n)

    def allgather(self, nbytes: float, n: int) -> float:
        if n <= 1:
            return 0.0
        return (n - 1) * _slowest_hop(self.cluster, n, nbytes)

    def alltoall(self, nbytes: float, n: int) -> float:
        """Pairwise exchange: n-1 rounds; the l ranks of a host share its NICs for the
        (n-l)/n of their buffers that leave the host."""
        if n <= 1:
            return 0.0
        c = self.cluster
        l = min(n, c.ranks_per_host)
        intra = (l - 1) / n * nbytes * c.intra.beta
        inter = l * (n - l) / n * nbytes * c.inter.beta / c.nics_per_host
        alpha = c.inter.alpha if n > l else c.intra.alpha
        return (n - 1) * alpha + max(intra, inter)


class Hierarchical(CostModel):
    """Reduce-scatter in the host, all-reduce among hosts, all-gather in the host."""

    def __init__(self, cluster: Cluster, overhead: float = 0.0):
        self.cluster = cluster
        self.overhead = float(overhead)
        self.flat = FlatRing(cluster)
        self.name = f"hierarchical ({cluster.name})"

    def allreduce(self, nbytes: float, n: int) -> float:
        if n <= 1:
            return 0.0
        c = self.cluster
        l = min(n, c.ranks_per_host)
        h = c.hosts(n)
        if h == 1:
            return ring_allreduce(nbytes, l, c.intra)
        # l shards of nbytes/l, each all-reduced among the h hosts by its own ring; the l
        # rings of a host share its NICs
        share = max(1.0, l / c.nics_per_host)
        inter = 2 * (h - 1) * c.inter.alpha + 2 * (h - 1) / h * (nbytes / l) * c.inter.beta * share
        return 2 * ring_reduce_scatter(nbytes, l, c.intra) + inter

    def allgather(self, nbytes: float, n: int) -> float:
        return self.flat.allgather(nbytes, n)

    def alltoall(self, nbytes: float, n: int) -> float:
        return self.flat.alltoall(nbytes, n)


@dataclass
class Measured(CostModel):
    """Costs fitted on a machine: `fits[(kind, n)] = (a, b)` gives a + b * nbytes seconds.
    Kinds: 'allreduce', 'allgather', 'alltoall' (see the module doc for nbytes)."""

    fits: Dict[Tuple[str, int], Tuple[float, float]] = field(default_factory=dict)
    name: str = "measured"

    def _get(self, kind: str, nbytes: float, n: int) -> float:
        if n <= 1:
            return 0.0
        ab = self.fits.get((kind, n))
        if ab is None:
            have = sorted(k for k, m in self.fits if m == n)
            raise InvalidArgumentError(f"{self.name}: no measured {kind} for {n} ranks (measured there: "
                                       f"{', '.join(have) or 'nothing'})")
        return max(0.0, ab[0] + ab[1] * nbytes)

    def allreduce(self, nbytes: float, n: int) -> float:
        return self._get("allreduce", nbytes, n)

    def allgather(self, nbytes: float, n: int) -> float:
        return self._get("allgather", nbytes, n)

    def alltoall(self, nbytes: float, n: int) -> float:
        return self._get("alltoall", nbytes, n)


# -- published links --------------------------------------------------------------------------------
# Bandwidths are line rates from the standards (a collective achieves somewhat less: see
# docs/scaling.md); latencies are typical small-message MPI/NCCL latencies, marked
# "typical" where no single measurement is the source.

LINKS: Dict[str, Link] = {
    "25GbE-TCP": Link.from_rate(
        "25GbE-TCP", 25e-6, gbit_per_s=25,
        source="25 Gb/s: IEEE 802.3by-2016 (25GBASE-R); 25 us: typical MPI latency over kernel TCP"),
    "25GbE-RoCE": Link.from_rate(
        "25GbE-RoCE", 3e-6, gbit_per_s=25,
        source="25 Gb/s: IEEE 802.3by-2016; 3 us: typical RDMA (RoCE v2) MPI latency"),
    "100GbE-RoCE": Link.from_rate(
        "100GbE-RoCE", 3e-6, gbit_per_s=100,
        source="100 Gb/s: IEEE 802.3bj-2014 / 802.3cd-2018; 3 us: typical RoCE v2 MPI latency"),
    "400GbE-RoCE": Link.from_rate(
        "400GbE-RoCE", 3e-6, gbit_per_s=400,
        source="400 Gb/s: IEEE 802.3bs-2017; 3 us: typical RoCE v2 MPI latency"),
    "IB-EDR": Link.from_rate(
        "IB-EDR", 1e-6, gbit_per_s=100,
        source="100 Gb/s: InfiniBand EDR 4x (IBTA); ~1 us: OSU micro-benchmarks osu_latency on EDR HCAs"),
    "IB-HDR": Link.from_rate(
        "IB-HDR", 1e-6, gbit_per_s=200,
        source="200 Gb/s: InfiniBand HDR 4x (IBTA); ~1 us: typical MPI latency"),
    "IB-NDR": Link.from_rate(
        "IB-NDR", 1e-6, gbit_per_s=400,
        source="400 Gb/s: InfiniBand NDR 4x (IBTA); ~1 us: typical MPI latency"),
    "PCIe3-x16": Link.from_rate(
        "PCIe3-x16", 5e-6, gbyte_per_s=15.75,
        source="15.75 GB/s: PCIe 3.0 x16 (8 GT/s x 16 lanes, 128b/130b); 5 us: typical NCCL step latency"),
    "NVLink-A100": Link.from_rate(
        "NVLink-A100", 5e-6, gbyte_per_s=240,
        source="240 GB/s: nccl-tests all_reduce_perf bus bandwidth, 8x A100 SXM4 (230-250 GB/s, "
               "docs.alayanew.com 'NCCL-tests in practice'); 5 us: typical NCCL step latency"),
    "NVLink-H100": Link.from_rate(
        "NVLink-H100", 5e-6, gbyte_per_s=470,
        source="470 GB/s: nccl-tests all_reduce_perf bus bandwidth, 8x H100 SXM5 (460-480 GB/s, same source); "
               "5 us: typical NCCL step latency"),
}
