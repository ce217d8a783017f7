"""Readers: one module per framework, each imported only when used.

- ``tfrecordkit.readers.tf_data``: ``tf.data`` pipelines (needs the ``tf`` extra).
- ``tfrecordkit.readers.numpy_data``: NumPy batches without any framework.
"""

from tfrecordkit.readers._keys import CLASS_POSITION, RECORD_ID, VALID

__all__ = ["CLASS_POSITION", "RECORD_ID", "VALID"]
