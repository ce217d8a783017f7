"""TensorFlow's errors while a dataset is iterated in Python, named as the TF-free readers name
them: a ``DataLossError`` ("corrupted record at 54678", no file) becomes the
:class:`~tfrecordkit.CorruptRecordError` of the file that fails at that offset; a record
TensorFlow cannot parse or decode becomes the error the TF-free reader gives for it (file,
record, feature). The dataset stays a ``tf.data.Dataset`` and its iterators stay
checkpointable; inside Keras ``fit`` TensorFlow's own error surfaces (run
``tfrecordkit verify`` on the dataset to name the file)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf

from tfrecordkit.errors import CorruptRecordError, DatasetError, TFRecordKitError
from tfrecordkit.format import check_frame, index_path_for
from tfrecordkit.readers.tf_data._exit import raised_error
from tfrecordkit.store import REPLACED

__all__ = ["name_errors"]

_AT = re.compile(r"corrupted record at (\d+)")
_EPOCH = "tfrecordkit_epoch"  # the crop epoch's entry in an iterator's checkpoint


def name_errors(ds: Any, files: Sequence[str], find: Callable[[], None], *,
                epoch: Any = None) -> Any:
    """``ds`` whose Python iterators raise the library's errors for TensorFlow's: ``files``
    are the record files it reads; ``find()`` reads them with a TF-free reader and raises the
    error it meets (it returns when it meets none). No iterator is made here: one would start
    reading (and count an epoch) before the user asks. ``epoch``: the pipeline's
    :class:`~._crop.EpochCounter`, saved and restored with each iterator's checkpoint (random
    crops resume with the epoch they were cut in, in another process too)."""
    paths = tuple(files)
    named: dict[type, type] = {}  # TensorFlow's iterator class -> its named subclass

    class NamedDataset(type(ds)):  # type: ignore[misc]
        def __iter__(self) -> Any:
            iterator = super().__iter__()
            base = type(iterator)
            if base not in named:
                named[base] = _named_iterator(base, paths, find, epoch)
            iterator.__class__ = named[base]
            return iterator

    ds.__class__ = NamedDataset
    return ds


def _named_iterator(base: type, paths: tuple[str, ...], find: Callable[[], None],
                    epoch: Any = None) -> type:
    """A subclass of TensorFlow's iterator class ``base`` whose ``__next__`` names errors
    (still the same iterator for checkpoints, which also hold ``epoch``'s count)."""

    class NamedIterator(base):  # type: ignore[misc]
        def _serialize_to_tensors(self) -> Any:
            tensors = super()._serialize_to_tensors()
            if epoch is not None:
                tensors = {**tensors, _EPOCH: epoch.variable.read_value()}
            return tensors

        def _restore_from_tensors(self, restored: Any) -> Any:
            if epoch is not None and _EPOCH in restored:
                restored = dict(restored)
                epoch.variable.assign(restored.pop(_EPOCH))
            return super()._restore_from_tensors(restored)

        def __next__(self) -> Any:
            try:
                return super().__next__()
            except tf.errors.DataLossError as err:
                raise _corrupt(err, paths, find) from err
            except tf.errors.FailedPreconditionError as err:
                replaced = _replaced(err, paths)
                if replaced is not None:
                    raise replaced from err
                raise
            except (tf.errors.InvalidArgumentError, tf.errors.UnknownError) as err:
                # Our own reader, feeding the pipeline, raised it: that error, as it was.
                named = raised_error(getattr(err, "message", str(err)))
                if named is not None:
                    raise named from err
                if _from_the_data(err):
                    _explain(err, find)
                raise
            except UnicodeDecodeError as err:
                # TensorFlow's message quoted the record's bytes and could not be decoded
                # (a record that is not an Example): the TF-free reader names it.
                _explain(err, find)
                raise

    return NamedIterator


#: What TensorFlow's messages say when a record's contents failed (parsing, decoding, the
#: layout's checks): only then is the split read again to name the record. An error in a
#: user's augmentation is left as it is (reading a large split for it would only cost).
_DATA_OPS = ("ParseExample", "ParseSequenceExample", "ParseSingleExample", "Decode",
             "EnsureShape", "ParseTensor", "ExtractJpegShape", "TfrecordkitCropWindows",
             "assertion failed: [feature")


def _from_the_data(err: Exception) -> bool:
    message = getattr(err, "message", str(err))
    return any(op in message for op in _DATA_OPS)


def _first_line(err: Exception) -> str:
    """TensorFlow's message without its graph trace: the first line, less the node name."""
    message = getattr(err, "message", str(err)).strip()
    first = message.splitlines()[0] if message else type(err).__name__
    return re.sub(r"^\{\{[^}]*\}\}\s*", "", first)[:300]


def _corrupt(err: Exception, files: Sequence[str], find: Callable[[], None]) -> Exception:
    """The file failing at the offset TensorFlow names (its frame checked as every reader
    checks it), else what a TF-free read of the files meets."""
    message = getattr(err, "message", str(err))
    for path in files:  # the compiled frame reader names the file and byte
        found = re.search(re.escape(f"{os.path.abspath(path)}: record at byte ") + r"(\d+)",
                          message)
        problem = None if found is None else _frame_problem(path, int(found.group(1)))
        if problem is not None:
            return problem
    found = _AT.search(message)
    if found is not None:
        offset = int(found.group(1))
        for path in files:
            problem = _frame_problem(path, offset)
            if problem is not None:
                return problem
    try:
        find()
    except TFRecordKitError as named:
        return named
    return DatasetError(f"TensorFlow reports lost data ({_first_line(err)}) that the "
                        "TF-free reader did not find: run `tfrecordkit verify` on the files")


def _replaced(err: Exception, files: Sequence[str]) -> DatasetError | None:
    """The error of a file the compiled frame reader found replaced or rewritten since the
    dataset was opened, as the TF-free readers name it (None: not that)."""
    message = getattr(err, "message", str(err))
    for path in files:
        if f"{os.path.abspath(path)}: {REPLACED}" in message:
            return DatasetError(f"{path}: {REPLACED} (another inode, size or modification "
                                "time): open the dataset again to read it")
    return None


def _frame_problem(path: str, offset: int) -> CorruptRecordError | None:
    """The error of the frame starting at ``offset`` of a local uncompressed ``path``, if a
    frame starts there (its ``.index`` says so) and fails its checks (None: no such file here,
    no frame there, or the frame is sound). TensorFlow names the offset, not the file: in
    another file the offset falls mid-record, where any bytes "fail"."""
    if "://" in path or not os.path.isfile(path) or _index_of(path, offset) < 0:
        return None
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            head = handle.read(12)
            if len(head) < 12:
                return None
            length = int.from_bytes(head[:8], "little")
            handle.seek(offset)
            frame = handle.read(min(length + 16, os.path.getsize(path) - offset))
        check_frame(frame, path=path, offset=offset, index=_index_of(path, offset))
    except CorruptRecordError as err:
        return err
    except OSError:
        return None
    return None


def _index_of(path: str, offset: int) -> int:
    """The index in its file of the record starting at ``offset``, from the file's ``.index``
    sidecar (-1 without one, or when no record starts there)."""
    sidecar = index_path_for(path)
    if not os.path.isfile(sidecar):
        return -1
    with open(sidecar) as handle:
        starts = [int(line.split()[0]) for line in handle if line.split()]
    return starts.index(offset) if offset in starts else -1


def _explain(err: Exception, find: Callable[[], None]) -> None:
    """Raise the TF-free reader's error for the record TensorFlow could not parse or decode,
    if it finds one."""
    try:
        find()
    except TFRecordKitError as named:
        named.add_note(f"TensorFlow: {_first_line(err)}")
        raise named from err
