"""The MNIST tutorials' reader: `input_data.read_data_sets` (collflow/data/mnist_input.py)."""
from . import input_data

__all__ = ["input_data"]
