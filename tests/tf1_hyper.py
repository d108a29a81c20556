"""TF1's hyperparameter dtypes, for NumPy references of optimizer steps: a Python-float
hyperparameter becomes a float32 tensor cast to the variable's dtype, and Adam's beta powers
accumulate in float32 variables (collflow/train/optimizer.py's _hyper)."""
import numpy as np


def f32(*vals):
    """The values as a float64 (or complex128) model reads them: float64(float32(v))."""
    return tuple(float(np.float32(v)) for v in vals)


def f32_power(b, t):
    """beta ** t accumulated step by step in a float32 beta-power variable."""
    p = np.float32(b)
    for _ in range(t - 1):
        p = np.float32(p * np.float32(b))
    return float(p)
