"""tf.contrib.rnn.GRUBlockCell and GRUBlockCellV2: TF 1.x's GRU cells whose step is one fused
kernel.  Their documented math is GRUCell's with tanh:

    r, u = split(sigmoid([x, h] . w_ru + b_ru), 2)
    c = tanh([x, r * h] . w_c + b_c)
    h' = u * h + (1 - u) * c

with b_ru starting at 1 and b_c at 0.  They differ from GRUCell only in their arguments and,
for GRUBlockCell, in the variable names a TF1 checkpoint holds: gru_cell/w_ru, gru_cell/b_ru,
gru_cell/w_c, gru_cell/b_c (GRUBlockCellV2 uses GRUCell's gates/kernel, gates/bias,
candidate/kernel, candidate/bias).
"""
from __future__ import annotations

from typing import Any, Optional

from ..graph import initializers as _init
from .rnn_cells import GRUCell

__all__ = ["GRUBlockCell", "GRUBlockCellV2"]


def _block_units(num_units: Optional[int], cell_size: Optional[int]) -> int:
    # TF takes exactly one of num_units and its older name cell_size
    if (num_units is None) == (cell_size is None):
        raise ValueError("Exactly one of num_units or cell_size must be provided.")
    return int(num_units if num_units is not None else cell_size)  # type: ignore[arg-type]


class GRUBlockCellV2(GRUCell):
    """tf.contrib.rnn.GRUBlockCellV2: GRUCell's math (tanh) and variable names, under the layer
    name "gru_cell"."""

    def __init__(self, num_units: Optional[int] = None, cell_size: Optional[int] = None, reuse: Any = None,
                 name: Optional[str] = "gru_cell", **kwargs: Any):
        super().__init__(_block_units(num_units, cell_size), reuse=reuse, name=name, **kwargs)


class GRUBlockCell(GRUBlockCellV2):
    """tf.contrib.rnn.GRUBlockCell: GRUCell's math with the block kernel's variable names
    w_ru [depth + n, 2n], b_ru [2n] (starts at 1), w_c [depth + n, n], b_c [n] (starts at 0)."""

    def _build(self, depth: int) -> None:
        n = self._num_units
        self._gate_kernel = self.add_variable("w_ru", [depth + n, 2 * n])
        self._gate_bias = self.add_variable("b_ru", [2 * n], initializer=_init.Constant(1.0))
        self._candidate_kernel = self.add_variable("w_c", [depth + n, n])
        self._candidate_bias = self.add_variable("b_c", [n], initializer=_init.Constant(0.0))
