"""Model.summary() as tf_keras prints it (tf_keras.utils.layer_utils.print_summary): a plain
table (`Layer (type)`, `Output Shape`, `Param #`; 65 columns) for Sequential, subclassed and
chain-like functional models, and one with a `Connected to` column (98 columns) listing each
layer's inbound `name[node_index][tensor_index]` for other functional models."""
from __future__ import annotations

import re
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

__all__ = ["print_summary", "output_shape", "layer_index_range"]


def output_shape(layer: Any) -> Any:
    """A layer's `output_shape` as tf_keras reports it: its calls' shape when they all agree,
    "multiple" when they differ; a list for an InputLayer, an op layer or several outputs."""
    from .engine import Model
    from .layers import InputLayer
    if isinstance(layer, InputLayer):
        return [tuple(layer.output.shape.as_list())]
    if isinstance(layer, Model) and layer.outputs:
        # a nested model: its own outputs' shapes (a list for several)
        shapes = [tuple(t.shape.as_list()) for t in layer.outputs]
        return shapes[0] if len(shapes) == 1 else shapes
    calls = layer.__dict__.get("_keras_calls", [])
    if not calls:
        return "multiple"
    per_call = []
    for _, out in calls:
        outs = out if isinstance(out, (list, tuple)) else [out]
        shapes = [tuple(t.shape.as_list()) if t.shape.rank is not None else None for t in outs]
        if type(layer).__name__ == "TensorFlowOpLayer":
            per_call.append(shapes)  # TF shows an op layer's outputs as a list: [(None, 16)]
        else:
            per_call.append(shapes[0] if len(shapes) == 1 else shapes)
    return per_call[0] if len({str(s) for s in per_call}) == 1 else "multiple"


def _count(weights: Sequence[Any]) -> int:
    unique = {id(w): w for w in weights}.values()
    return int(sum(int(np.prod(w.shape.as_list())) for w in unique))


def _memory(weights: Sequence[Any]) -> str:
    """The weights' bytes as tf_keras's readable_memory_size writes them ("264.00 Byte")."""
    size = float(sum(int(np.prod(w.shape.as_list())) * int(w.dtype.size)
                     for w in {id(w): w for w in weights}.values() if None not in w.shape.as_list()))
    for unit in ["Byte", "KB", "MB", "GB", "TB"]:
        if size / 1024 < 1:
            return f"{size:.2f} {unit}"
        size /= 1024
    return f"{size:.2f} PB"


def _sequential_like(model: Any) -> bool:
    """tf_keras's test: one node per depth, none with several inputs, no layer called twice."""
    from .engine import Sequential
    from .layers import InputLayer
    depths = getattr(model, "_node_depths", None)
    if isinstance(model, Sequential) or getattr(model, "_subclassed", False) or depths is None:
        return True
    by_layer = {id(la): la for la in model.layers}
    by_depth: Dict[int, List[tuple]] = {}
    for key, d in depths.items():
        by_depth.setdefault(d, []).append(key)
    seen: set = set()
    for keys in by_depth.values():
        layer = by_layer[keys[0][0]]
        n_in = 0 if isinstance(layer, InputLayer) else len(layer._keras_nodes[keys[0][1]])
        if len(keys) > 1 or n_in > 1 or keys[0][0] in seen:
            return False
        seen.add(keys[0][0])
    return True


def _print_row(fields: List[Any], positions: List[int], print_fn: Callable[[str], Any], level: int = 0) -> None:
    """tf_keras's print_row: columns cut to fit, long ones wrapped after "),", "'," etc.; a row
    of a nested model's layer (expand_nested) is framed by `level` bars on either side."""
    left = [str(x) for x in fields]
    last = len(positions) - 1
    while any(left):
        line = ""
        for col in range(len(left)):
            start = positions[col - 1] if col > 0 else 0
            space = 2 if col != last else 0
            cutoff = positions[col] - start - space - (1 if col != last else 0) - (level if col == 0 else 0)
            fit = left[col][:cutoff]
            cuts = [fit.find(x) + len(x) for x in ("),", "},", "],", "',") if fit.find(x) >= 0]
            if cuts:
                cutoff = min(cuts)
                fit = fit[:cutoff]
            if col == 0:
                line += "|" * level + " "
            line += fit + " " * space
            left[col] = left[col][cutoff:]
            # the closing bars take the last column's room
            line += " " * (positions[col] - len(line) - (level if level and col == last else 0))
        print_fn(line + "|" * level)


def layer_index_range(model: Any, layer_range: Any) -> List[int]:
    """summary(layer_range=[first, last]): the slice of model.layers from the first layer whose
    name the regex `first` matches (re.match) to the last one `last` matches, both included
    (taken the other way round when they come in reverse order)."""
    layers = model.layers
    if layer_range is None:
        return [0, len(layers)]
    if len(layer_range) != 2:
        raise ValueError(f"layer_range must be a list or tuple of length 2. Received: layer_range = {layer_range} "
                         f"of length {len(layer_range)}")
    if not all(isinstance(p, str) for p in layer_range):
        raise ValueError(f"layer_range should contain string type only. Received: {layer_range}")
    lo = [i for i, la in enumerate(layers) if re.match(layer_range[0], la.name)]
    hi = [i for i, la in enumerate(layers) if re.match(layer_range[1], la.name)]
    if not lo or not hi:
        raise ValueError(f"Passed layer_names do not match the layer names in the model. Received: {layer_range}")
    if min(lo) > max(hi):
        return [min(hi), max(lo) + 1]
    return [min(lo), max(hi) + 1]


def _connections(model: Any, layer: Any) -> List[str]:
    """`inbound[node][tensor]` for each input of each of the layer's calls in this model."""
    from .layers import InputLayer, input_name, node_of
    if isinstance(layer, InputLayer):
        return []
    inside = getattr(model, "_nodes", None)
    out = []
    for k, ins in enumerate(layer.__dict__.get("_keras_nodes", [])):
        if inside is not None and (id(layer), k) not in inside:
            continue  # a call outside this model (model(new_input)'s)
        for t in ins:
            rec = node_of(t)
            out.append(f"{rec[0].name}[{rec[1]}][{rec[2]}]" if rec is not None else f"{input_name(t)}[0][0]")
    return out


def print_summary(model: Any, line_length: Optional[int] = None, positions: Optional[List[float]] = None,
                  print_fn: Optional[Callable[[str], Any]] = None, show_trainable: bool = False,
                  expand_nested: bool = False, layer_range: Any = None) -> None:
    """Prints `model`'s table as tf_keras's Model.summary() does (see the module doc);
    expand_nested: a nested model's layers follow its row, framed by bars; layer_range: see
    layer_index_range."""
    print_fn = print_fn or print
    first, stop = layer_index_range(model, layer_range)
    plain = _sequential_like(model)
    if plain:
        line_length = line_length or 65
        positions = list(positions or [0.45, 0.85, 1.0])
        header = ["Layer (type)", "Output Shape", "Param #"]
    else:
        line_length = line_length or 98
        positions = list(positions or [0.3, 0.6, 0.70, 1.0])
        header = ["Layer (type)", "Output Shape", "Param #", "Connected to"]
    cols = [int(line_length * p) for p in positions] if positions[-1] <= 1 else [int(p) for p in positions]
    if show_trainable:
        line_length += 11
        cols.append(line_length)
        header.append("Trainable")
    print_fn(f'Model: "{model.name}"')
    print_fn("_" * line_length)
    _print_row(header, cols, print_fn)
    print_fn("=" * line_length)
    width = line_length

    def layer_rows(layer: Any, level: int, nested_last: bool) -> None:
        built = (getattr(layer, "built", True) or layer.__dict__.get("_keras_calls") or not plain
                 or bool(getattr(layer, "outputs", None)))
        params: Any = _count(layer.weights) if built else "0 (unused)"
        fields = [f"{layer.name} ({type(layer).__name__})", output_shape(layer), params]
        if not plain:
            fields.append(_connections(model, layer))
        if show_trainable:
            fields.append("Y" if getattr(layer, "trainable", True) else "N")
        _print_row(fields, cols, print_fn, level)
        inner = list(getattr(layer, "layers", None) or []) if expand_nested else []
        if inner:
            print_fn("|" * (level + 1) + "\u00af" * (width - 2 * level - 2) + "|" * (level + 1))
            for i, sub in enumerate(inner):
                layer_rows(sub, level + 1, i == len(inner) - 1)
            print_fn("|" * level + "\u00af" * (width - 2 * level) + "|" * level)
            # tf_keras: an expanded model's closing line takes the place of its blank line
            nested_last = True
        if not nested_last:
            print_fn("|" * level + " " * (width - 2 * level) + "|" * level)

    for layer in model.layers[first:stop]:
        layer_rows(layer, 0, False)
    print_fn("=" * line_length)
    trainable, frozen = model.trainable_weights, model.non_trainable_weights
    print_fn(f"Total params: {_count(trainable) + _count(frozen)} ({_memory(list(trainable) + list(frozen))})")
    print_fn(f"Trainable params: {_count(trainable)} ({_memory(trainable)})")
    print_fn(f"Non-trainable params: {_count(frozen)} ({_memory(frozen)})")
    print_fn("_" * line_length)
