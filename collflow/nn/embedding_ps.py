"""cf.nn.Embedding: an embedding table kept replicated ("allreduce") or sharded over the ranks ("ps").

    emb = cf.nn.Embedding(vocab_size, dim, mode="ps")     # rows spread over the ranks
    h = emb(ids)                                         # ids.shape + [dim]

mode="allreduce": one cf.Variable holding the whole table on every rank; its gradient is
IndexedSlices, which SyncReplicasOptimizer allgathers (or all-reduces densely with
sparse_as_dense=True).  mode="ps": a cf.train.sharded.ShardedVariable; lookups go to the
owners of the rows (Alltoallv) and gradients are pushed back to them.  Given the whole
table as a NumPy array the two modes start from the same values (a random initializer draws
per shard in "ps" mode), and with cf.train.sharded.ShardedSyncReplicasOptimizer they then
train the same parameters.
"""
from __future__ import annotations

from typing import Any, List, Optional, Union

from .. import dtypes as _dt
from ..errors import InvalidArgumentError
from ..graph import graph as _g
from ..graph.variables import Variable
from ..train import sharded as _sharded
from ..comm import ps as _ps

__all__ = ["Embedding", "EMBEDDING_MODES"]

EMBEDDING_MODES = ("allreduce", "ps")


class Embedding:
    """A [vocab_size, embedding_dim] table and its lookup.

    initializer: a NumPy array of the whole table, a scalar, an initializer `init(shape,
    dtype)` or its name; default uniform in [-0.05, 0.05).  partition_strategy ("mod",
    "div") and comm apply to mode="ps".
    """

    def __init__(self, vocab_size: int, embedding_dim: int, mode: str = "allreduce", initializer: Any = None,
                 dtype: Any = _dt.float32, partition_strategy: str = "mod", trainable: bool = True,
                 comm: Any = None, name: str = "embedding"):
        if mode not in EMBEDDING_MODES:
            raise InvalidArgumentError(f"Embedding mode must be one of {EMBEDDING_MODES}, got {mode!r}")
        if int(vocab_size) <= 0 or int(embedding_dim) <= 0:
            raise InvalidArgumentError(
                f"Embedding needs positive vocab_size and embedding_dim, got {vocab_size}, {embedding_dim}")
        self.vocab_size, self.embedding_dim, self.mode = int(vocab_size), int(embedding_dim), mode
        dt = _dt.as_dtype(dtype)
        shape = (self.vocab_size, self.embedding_dim)
        if mode == "ps":
            self.table: Union[Variable, _sharded.ShardedVariable] = _sharded.ShardedVariable(
                name, shape, dt, initializer, partition_strategy, trainable, comm)
        else:
            g = _g.get_default_graph()
            # the whole table is the layout of one shard: the same initial values as mode="ps"
            lay = _ps.ShardLayout(name, shape[0], shape[1:], dt.name, partition_strategy, 1, 0)
            with g.control_dependencies(None):
                self.table = Variable(lambda: _sharded._initial_value(lay, initializer, dt), trainable=trainable,
                                      name=name, dtype=dt)

    @property
    def variables(self) -> List[Variable]:
        """The cf.Variables this rank holds (the table, or its shard)."""
        t = self.table
        return [t.shard] if isinstance(t, _sharded.ShardedVariable) else [t]

    def __call__(self, ids: Any, name: Optional[str] = None) -> _g.Tensor:
        """Rows at `ids`: shape ids.shape + [embedding_dim]."""
        return _sharded.embedding_lookup(self.table, ids, name=name)

    def __repr__(self) -> str:
        return f"<cf.nn.Embedding {self.vocab_size}x{self.embedding_dim} mode={self.mode!r}>"
