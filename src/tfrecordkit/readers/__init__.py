"""Readers: one module per framework, each imported only when used.

- ``tfrecordkit.readers.tf_data``: ``tf.data`` pipelines (needs the ``tf`` extra).
- ``tfrecordkit.readers.numpy_data``: NumPy batches without any framework.
"""

__all__: list[str] = []
