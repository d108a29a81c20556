"""TF1's partitioners (tf.fixed_size_partitioner, min_max_variable_partitioner,
variable_axis_size_partitioner): their partition counts as TF computes them, one partition
giving a plain variable, and the clear error for several parts in one process."""
import pytest

import collflow.compat.v1 as cf


def test_partition_counts():
    assert cf.fixed_size_partitioner(3)((10, 4), cf.float32) == [3, 1]
    assert cf.fixed_size_partitioner(2, axis=1)((10, 4), cf.float32) == [1, 2]
    # (100, 8) float32 is 3200 bytes: ceil(3200 / 1024) = 4 slices, capped by max_partitions
    assert cf.min_max_variable_partitioner(max_partitions=4, min_slice_size=1024)((100, 8), cf.float32) == [4, 1]
    assert cf.min_max_variable_partitioner(max_partitions=2, min_slice_size=1024)((100, 8), cf.float32) == [2, 1]
    assert cf.min_max_variable_partitioner(max_partitions=8, min_slice_size=1024)((7, 3), cf.float64) == [1, 1]
    assert cf.variable_axis_size_partitioner(2048)((100, 8), cf.float32) == [2, 1]
    assert cf.variable_axis_size_partitioner(2048, max_shards=3)((5, 300), cf.float32) == [3, 1]
    with pytest.raises(ValueError):
        cf.variable_axis_size_partitioner(0)


def test_one_partition_is_a_plain_variable_and_several_are_refused_clearly():
    with cf.Graph().as_default():
        small = cf.get_variable("small", [7, 3], partitioner=cf.min_max_variable_partitioner(8, min_slice_size=1 << 20))
        assert isinstance(small, cf.Variable) and small.op.name == "small"
        with cf.variable_scope("scoped", partitioner=cf.fixed_size_partitioner(1)):
            v = cf.get_variable("v", [4])
        assert v.op.name == "scoped/v"
        with pytest.raises(cf.errors.InvalidArgumentError, match="several parts in one process"):
            cf.get_variable("big", [100, 8], partitioner=cf.fixed_size_partitioner(4))
