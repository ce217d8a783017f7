"""The exception tree of tfrecordkit.

Every error the library raises on purpose derives from :class:`TFRecordKitError`; each subclass
also derives from the matching builtin so callers may catch either::

    TFRecordKitError
    ├── CorruptRecordError      (ValueError)   a record fails a framing check (CRC, truncation)
    ├── SchemaError             (ValueError)   a value does not fit its feature
    ├── DatasetError            (ValueError)   a dataset directory or manifest is unusable
    ├── SourceError             (ValueError)   an input (file, row, item) cannot be converted
    ├── IndexUnavailableError   (ValueError)   random access asked of a file that cannot have it
    ├── StateError              (ValueError)   a resume state is malformed or not this loader's
    ├── OptionError             (ValueError)   an argument is outside what it accepts
    ├── RecordFormatError       (ValueError)   a record's bytes are not the message they should be
    ├── OutOfRangeError         (IndexError)   a record position beyond the end
    └── MissingDependencyError  (ImportError)  an optional extra is not installed

One warning: :class:`RepeatedEpochWarning` (``UserWarning``), a data loader's worker processes
starting the epoch they already ran (no ``set_epoch`` between).
"""

from __future__ import annotations

from typing import Literal

__all__ = [
    "CorruptRecordError",
    "DatasetError",
    "IndexUnavailableError",
    "MissingDependencyError",
    "OptionError",
    "OutOfRangeError",
    "RecordFormatError",
    "RepeatedEpochWarning",
    "SchemaError",
    "SourceError",
    "StateError",
    "StorageError",
    "TFRecordKitError",
]

CorruptionCheck = Literal[
    "length crc",
    "data crc",
    "truncated header",
    "truncated data",
    "bad compressed stream",
    "record too large",
    "restart point",
]


class TFRecordKitError(Exception):
    """Base class of every error tfrecordkit raises on purpose."""


class CorruptRecordError(TFRecordKitError, ValueError):
    """A record failed one of the framing checks.

    Attributes:
        path: the file that holds the record.
        offset: byte offset of the start of the bad record (in the decompressed stream for
            compressed files).
        index: position of the record in the file (0-based), or -1 when not known (a record
            read by offset).
        check: which check failed.
        detail: extra words on what was found.
    """

    def __init__(
        self, path: str, offset: int, index: int, check: CorruptionCheck, detail: str = ""
    ) -> None:
        self.path = path
        self.offset = offset
        self.index = index
        self.check = check
        self.detail = detail
        which = f"record {index}" if index >= 0 else "record"
        message = f"{path}: {which} at byte offset {offset}: {check} failed"
        if detail:
            message += f" ({detail})"
        super().__init__(message)

    def __reduce__(self) -> tuple[type, tuple[str, int, int, CorruptionCheck, str]]:
        return (type(self), (self.path, self.offset, self.index, self.check, self.detail))


class SchemaError(TFRecordKitError, ValueError):
    """A value does not fit the feature it is written to or read from.

    Attributes:
        feature: the feature's name.
        record: which record (source path or index), when known.
    """

    def __init__(self, feature: str, message: str, record: str | int | None = None) -> None:
        self.feature = feature
        self.record = record
        self.reason = message
        where = f"record {record}: " if record is not None else ""
        super().__init__(f"{where}feature {feature!r}: {message}")

    def __reduce__(self) -> tuple[type, tuple[str, str, str | int | None]]:
        return (type(self), (self.feature, self.reason, self.record))


class DatasetError(TFRecordKitError, ValueError):
    """A dataset directory or its manifest is missing, inconsistent or would be overwritten."""


class SourceError(TFRecordKitError, ValueError):
    """An input (a file, a table row, a generator item) cannot be read or converted.

    Attributes:
        input: what the input is (a path, ``table.csv:17``, ``item 42``).
        reason: what is wrong with it.
    """

    def __init__(self, input: str, reason: str) -> None:  # noqa: A002
        self.input = input
        self.reason = reason
        super().__init__(f"{input}: {reason}")

    def __reduce__(self) -> tuple[type, tuple[str, str]]:
        return (type(self), (self.input, self.reason))


class StorageError(TFRecordKitError, OSError):
    """A file or URL cannot be reached: missing, no permission or credentials, a bad URL, or
    a store that keeps failing after retries.

    Attributes:
        url: the path or URL.
        reason: what went wrong.
    """

    def __init__(self, url: str, reason: str) -> None:
        self.url = url
        self.reason = reason
        super().__init__(f"{url}: {reason}")

    def __str__(self) -> str:
        return f"{self.url}: {self.reason}"

    def __reduce__(self) -> tuple[type, tuple[str, str]]:
        return (type(self), (self.url, self.reason))


class IndexUnavailableError(TFRecordKitError, ValueError):
    """Random access was asked of a file that cannot be indexed (e.g. a compressed one)."""


class OptionError(TFRecordKitError, ValueError):
    """An argument is outside what it accepts (the message echoes the value)."""


class RecordFormatError(TFRecordKitError, ValueError):
    """A record's bytes are not a valid ``tf.train.Example`` / ``SequenceExample``."""


class OutOfRangeError(TFRecordKitError, IndexError):
    """A record position lies beyond the end of a file or split."""


class StateError(TFRecordKitError, ValueError):
    """A resume state (``state_dict()`` output) is malformed, out of range, or was saved by a
    loader of another dataset or configuration; the message names the key.

    Attributes:
        key: the state's key at fault (``""`` for the state as a whole).
    """

    def __init__(self, key: str, reason: str) -> None:
        self.key = key
        self.reason = reason
        where = f"resume state key {key!r}" if key else "resume state"
        super().__init__(f"{where}: {reason}")

    def __reduce__(self) -> tuple[type, tuple[str, str]]:
        return (type(self), (self.key, self.reason))


class MissingDependencyError(TFRecordKitError, ImportError):
    """An optional dependency is needed; the message names the ``pip install`` to run."""

    def __init__(self, module: str, extra: str, purpose: str) -> None:
        self.module = module
        self.extra = extra
        super().__init__(
            f"{purpose} needs {module!r}, which is not installed: "
            f"pip install 'tfrecordkit[{extra}]'"
        )

    def __reduce__(self) -> tuple[type, tuple[str, str, str]]:
        purpose = str(self).split(" needs ", 1)[0]
        return (type(self), (self.module, self.extra, purpose))


class RepeatedEpochWarning(UserWarning):
    """DataLoader workers started the epoch they already ran: the same order and the same
    crops again, because the dataset in the main process never sees their progress."""
