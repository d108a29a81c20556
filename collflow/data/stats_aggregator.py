"""tf.data.experimental.StatsAggregator (TF 1.15's): accepted, records nothing.

collflow's pipelines keep no statistics (latency_stats and bytes_produced_stats pass their
elements through unchanged), so an aggregator attached with
`options.experimental_stats.aggregator = aggregator` has nothing to aggregate; its summary
is an empty Summary, which tf.summary.merge and a FileWriter take as they take any other.
Programs that attach one run unchanged; they get no tf.data statistics in TensorBoard.
"""
from __future__ import annotations

from typing import Any

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.ops.constant_op import constant

__all__ = ["StatsAggregator"]


class StatsAggregator:
    """A stateful resource that would aggregate statistics of the iterators it is attached to
    (TF 1.15's StatsAggregator); collflow's records none (see the module's docstring)."""

    def __init__(self) -> None:
        self._graph = _g.get_default_graph()

    def __deepcopy__(self, memo: Any) -> "StatsAggregator":
        return self  # a resource: Options copied by merge/with_options share it

    def get_summary(self) -> Any:
        """A scalar string tensor: a serialized, empty Summary protocol buffer."""
        with self._graph.as_default():
            return constant(b"", dtype=_dt.string, name="StatsAggregatorSummary")
