"""Functions tf.data traces as they are, without AutoGraph; unbatching without a traced map."""

from __future__ import annotations

from typing import Any

import tensorflow as tf

__all__ = ["graph_only", "unbatched"]

#: Every map function of the library branches only on Python values fixed when the pipeline
#: is built: converting them with AutoGraph (parsing and rewriting their source) cost ~1.4 s
#: before the first batch, most of the wait (bench/first_batch.py).
graph_only = tf.autograph.experimental.do_not_convert


def unbatched(ds: Any) -> Any:
    """``ds.unbatch()``, without the map TensorFlow puts before it to re-encode sparse and
    ragged parts when every part is a dense tensor (that map is a traced function: ~18 ms of
    each dataset's creation, ~15% of a shuffled decoding pipeline's)."""
    if all(type(spec) is tf.TensorSpec for spec in tf.nest.flatten(ds.element_spec)):
        try:
            from tensorflow.python.data.ops.unbatch_op import _UnbatchDataset

            return _UnbatchDataset(ds)
        except (ImportError, TypeError):  # another TensorFlow's internals: its own unbatch
            pass
    return ds.unbatch()
