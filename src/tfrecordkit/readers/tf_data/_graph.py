"""Functions tf.data traces as they are, without AutoGraph."""

from __future__ import annotations

import tensorflow as tf

__all__ = ["graph_only"]

#: Every map function of the library branches only on Python values fixed when the pipeline
#: is built: converting them with AutoGraph (parsing and rewriting their source) cost ~1.4 s
#: before the first batch, most of the wait (bench/first_batch.py).
graph_only = tf.autograph.experimental.do_not_convert
