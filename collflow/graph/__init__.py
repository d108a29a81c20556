"""The symbolic layer: Graph, Operation, Tensor, the op registry, op constructors, gradients."""
from .graph import (Graph, Operation, Tensor, GraphKeys, get_default_graph, reset_default_graph,  # noqa: F401
                    name_scope, device, control_dependencies, convert_to_tensor, add_to_collection,
                    get_collection)
from .shape import TensorShape  # noqa: F401
from . import ops  # noqa: F401  (registers every op)
from .indexed_slices import IndexedSlices, IndexedSlicesValue  # noqa: F401
from . import math_grad, array_grad  # noqa: F401  (registers gradients)
from .gradients import gradients  # noqa: F401
from .variables import Variable  # noqa: F401
