"""`tensorflow.examples` under collflow's name: what TF 1.x's tutorials import
(`from collflow.examples.tutorials.mnist import input_data`)."""
