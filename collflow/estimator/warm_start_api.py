"""TF1's `tf.train.warm_start`: before the session initializes, make chosen variables'
initializers read a checkpoint's values (renamed, or remapped along a vocabulary axis).
Built from train.checkpoint_utils.init_from_checkpoint and warm_starting's vocabulary remap,
so it works in a plain graph program as in an Estimator."""
from __future__ import annotations

import os
import re
from typing import Any, Dict, List, Optional

from ..graph import graph as _g
from ..graph.graph import GraphKeys
from ..platform import tf_logging as logging
from ..train.checkpoint_utils import init_from_checkpoint, load_variable
from ..train.saver import latest_checkpoint
from .warm_starting import VocabInfo, warm_start_var_with_vocab

__all__ = ["warm_start", "VocabInfo"]


def _name(v: Any) -> str:
    return v.op.name


def _variables(vars_to_warm_start: Any) -> Dict[str, Any]:
    """Name -> variable, in collection order, as TF's _get_grouped_variables (partitioned
    variables are not grouped: collflow's warm start does not take them)."""
    if isinstance(vars_to_warm_start, str) or vars_to_warm_start is None:
        pat = vars_to_warm_start or ".*"
        found = [v for v in _g.get_collection(GraphKeys.TRAINABLE_VARIABLES) if re.match(pat, _name(v))]
    elif isinstance(vars_to_warm_start, list):
        if all(isinstance(v, str) for v in vars_to_warm_start):
            found = []
            for p in vars_to_warm_start:
                found += [v for v in _g.get_collection(GraphKeys.GLOBAL_VARIABLES) if re.match(p, _name(v))]
        elif all(hasattr(v, "op") and hasattr(v, "initializer") for v in vars_to_warm_start):
            found = list(vars_to_warm_start)
        else:
            raise ValueError("If `vars_to_warm_start` is a list, it must be all `Variable` or all `str`.  "
                             f"Given types are {[type(v) for v in vars_to_warm_start]}")
    else:
        raise ValueError(f"`vars_to_warm_start must be a `list` or `str`.  Given type is {type(vars_to_warm_start)}")
    out: Dict[str, Any] = {}
    for v in found:
        out.setdefault(_name(v), v)
    return out


def warm_start(ckpt_to_initialize_from: str, vars_to_warm_start: Any = ".*",
               var_name_to_vocab_info: Optional[Dict[str, VocabInfo]] = None,
               var_name_to_prev_var_name: Optional[Dict[str, str]] = None) -> None:
    """Warm-starts variables from a checkpoint (TF1's tf.train.warm_start): a regex string
    selects TRAINABLE_VARIABLES, a list of regexes GLOBAL_VARIABLES, a list of Variables
    those; None only the trainable ones named in var_name_to_vocab_info.  A variable missing
    from the checkpoint is a ValueError (init_from_checkpoint's), as TF; names in the two
    dicts that select no variable are a ValueError too."""
    logging.info("Warm-starting from: %s", ckpt_to_initialize_from)
    grouped = _variables(vars_to_warm_start)
    vocab = dict(var_name_to_vocab_info or {})
    renames = dict(var_name_to_prev_var_name or {})
    ckpt = ckpt_to_initialize_from
    if os.path.isdir(ckpt):
        ckpt = latest_checkpoint(ckpt) or ckpt
    renamed_used, vocab_used = set(), set()
    plain: Dict[str, Any] = {}
    for name, var in grouped.items():
        prev = renames.get(name)
        if prev:
            renamed_used.add(name)
        info = vocab.get(name)
        if info:
            vocab_used.add(name)
            warm_start_var_with_vocab(var, load_variable(ckpt, prev or name), info)
        elif vars_to_warm_start:
            key = prev or name
            if key in plain:  # one checkpoint entry for two variables: apply what we have first
                init_from_checkpoint(ckpt, plain)
                plain = {}
            plain[key] = var
    if plain:
        init_from_checkpoint(ckpt, plain)
    logging.info("Warm-started %d variables.", len(vocab_used) + (len(grouped) - len(vocab_used)
                                                                   if vars_to_warm_start else 0))
    unused: List[str] = sorted(set(renames) - renamed_used)
    if unused:
        raise ValueError(f"You provided the following variables in var_name_to_prev_var_name that were not used: "
                         f"{unused}.  Perhaps you misspelled them?  Here is the list of viable variable names: "
                         f"{list(grouped)}")
    unused = sorted(set(vocab) - vocab_used)
    if unused:
        raise ValueError(f"You provided the following variables in var_name_to_vocab_info that were not used: "
                         f"{unused}.  Perhaps you misspelled them?  Here is the list of viable variable names: "
                         f"{list(grouped)}")
