"""`tensorflow.examples.tutorials.mnist.input_data`: TF 1.x's MNIST reader, as the tutorials use
it (`mnist = input_data.read_data_sets("MNIST_data/", one_hot=True)`)."""
from ....data.mnist_input import (DataSet, Datasets, dense_to_one_hot, extract_images,  # noqa: F401
                                  extract_labels, maybe_download, read_data_sets)

__all__ = ["DataSet", "Datasets", "dense_to_one_hot", "extract_images", "extract_labels", "maybe_download",
           "read_data_sets"]
