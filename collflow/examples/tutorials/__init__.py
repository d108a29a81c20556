"""TF 1.x's tutorial helpers (`tutorials.mnist.input_data`)."""
