"""The keys readers add beside a record's features, the same in every reader.

They start with ``__``, which :class:`~tfrecordkit.schema.Schema` refuses for feature names, so
a reader never puts its own value where a user's feature lives (a table's ``id`` column reads
back as stored).
"""

from __future__ import annotations

from tfrecordkit.schema import SOURCE_FEATURE

__all__ = ["CLASS_ID", "CLASS_POSITION", "RECORD_ID", "SOURCE", "VALID"]

#: The record's position in its split (or, for PxK and triplets, in the class index).
RECORD_ID = "__id"
#: With several ranks, False where the last step wrapped around to fill the batch.
VALID = "__valid"
#: PxK and triplet batches: each record's class id (its class in the manifest's class list),
#: whatever the features are named; a feature named ``label`` stays the feature.
CLASS_ID = "__class"
#: PxK batches: which of the P classes of the batch the record belongs to (0..P-1).
CLASS_POSITION = "__class_position"
#: With ``DecodeOptions(provenance=True)``: each record's input, as conversion stored it.
SOURCE = SOURCE_FEATURE
