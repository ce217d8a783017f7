"""Ray Data for tfrecordkit datasets (extra ``ray``): ``read_dataset`` reads a split into a
``ray.data.Dataset`` and ``write_dataset`` writes one, both with tfrecordkit's TF-free codec;
workers never import TensorFlow."""

from tfrecordkit.ray._datasource import TFRecordKitDatasource, read_dataset
from tfrecordkit.ray._sink import write_dataset

__all__ = ["TFRecordKitDatasource", "read_dataset", "write_dataset"]
