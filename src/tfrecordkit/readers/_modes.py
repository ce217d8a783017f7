"""What every loader is told, as values: which records make each batch (``sampling=``: in
order, shuffled, P×K by class, triplets) and how the files are read (``read=``). One object
per idea, the same in every framework's loader; what one loader cannot do is refused there,
by name."""

from __future__ import annotations

import functools
import importlib
import os
import secrets
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, ParamSpec, Protocol, TypeVar, runtime_checkable

from tfrecordkit.errors import DatasetError, OptionError, StateError
from tfrecordkit.readers._mix import Mix
from tfrecordkit.schema import Schema

P = ParamSpec("P")
R = TypeVar("R")

__all__ = ["MOVED_KEYWORDS", "PK", "InOrder", "ReadOptions", "Sampling", "SamplingMode",
           "Shuffled", "Triplets", "batch_size_of", "class_dataset", "implementation",
           "refuse_moved", "refuse_untaken", "sampling_of", "seed_of", "shuffle_mode"]

_DECODE = "options=tk.DecodeOptions({0}=...)"
_READ = "read=tk.ReadOptions({0}=...)"
#: Keywords the loaders took before one call per framework, and where each went
#: (docs/migration.md): a call with one is refused naming the new spelling.
MOVED_KEYWORDS: Mapping[str, str] = {
    "shuffle": "sampling=tk.Shuffled() (the default), tk.InOrder(), or tf.data's "
               "tk.Shuffled(buffer=n)",
    "drop_last": "sampling=tk.Shuffled(drop_last=...) or tk.InOrder(drop_last=...)",
    **{k: _DECODE.format(k) for k in ("features", "decode", "augment", "as_supervised")},
    **{k: _READ.format(k) for k in ("schema", "storage_options", "num_threads",
                                    "max_open_files", "cache")},
    "rank": "partition=tk.Partition(rank, world_size)",
    "world_size": "partition=tk.Partition(rank, world_size)",
    "input_context": "partition=tk.Partition.from_input_context(ctx)",
    "start": "state=",
    "classes_per_batch": "sampling=tk.PK(classes_per_batch, examples_per_class)",
    "examples_per_class": "sampling=tk.PK(classes_per_batch, examples_per_class)",
    "with_labels": "sampling=tk.Triplets(with_labels=...)",
}


def refuse_moved(reader: str, extra: Mapping[str, str] | None = None
                   ) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """A loader refusing the keywords of :data:`MOVED_KEYWORDS` (and ``extra``) with their
    new spelling, instead of Python's bare "unexpected keyword argument"."""
    moved = {**MOVED_KEYWORDS, **(extra or {})}

    def wrap(function: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(function)
        def call(*args: P.args, **kwargs: P.kwargs) -> R:
            old = next((k for k in kwargs if k in moved), None)
            if old is not None:
                raise OptionError(f"{reader}() takes no {old}= any more: use {moved[old]} "
                                  "(docs/migration.md)")
            return function(*args, **kwargs)

        return call

    return wrap


@runtime_checkable
class SamplingMode(Protocol):
    """What a sampling mode carries, so that every loader asks it rather than switching on
    it: its batch-size rule, the NumPy loader it reads with (the PyTorch loader wraps that
    one), and the tf.data builder, both named ``"module:function"`` and imported on first
    use (this module imports no framework). A new mode is its dataclass, its loader and its
    builder, in one module (see ``tests/readers/test_custom_mode.py``).

    ``numpy_loader(mode, path, split, *, batch_size, seed, options, partition, read)`` returns
    a loader (an epoch per pass, ``len``, ``state_dict()``, ``batches(n)``); ``tf_dataset(mode,
    path, split, *, batch_size, seed, state, options, partition, repeat, reading)`` a
    ``tf.data.Dataset`` (``tfrecordkit.readers.tf_data:steps_dataset`` builds one from the
    mode's NumPy loader, the step reader every in-order and shuffled read uses).
    """

    numpy_loader: ClassVar[str]
    tf_dataset: ClassVar[str]

    def batch_size_for(self, batch_size: int | None) -> int | None:
        """``batch_size`` checked for this mode (None: single examples, where allowed).

        Raises:
            OptionError: a batch size this mode cannot take.
        """
        ...


@functools.cache
def implementation(spec: str) -> Callable[..., Any]:
    """The function a ``"module:function"`` names, imported on first use."""
    module, _, attribute = spec.partition(":")
    return getattr(importlib.import_module(module), attribute)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class InOrder:
    """Every record once per epoch, in the split's stored order (evaluation, inference).

    Attributes:
        drop_last: drop the last, smaller batch of an epoch.
    """

    drop_last: bool = False
    numpy_loader: ClassVar[str] = "tfrecordkit.readers.numpy_data:ordered_loader"
    tf_dataset: ClassVar[str] = "tfrecordkit.readers.tf_data._load:ordered_tf"

    def batch_size_for(self, batch_size: int | None) -> int | None:
        """Any global batch, or None for single examples."""
        return batch_size


@dataclass(frozen=True)
class Shuffled:
    """Every record once per epoch, in an order drawn from the seed and the epoch: the
    default of every loader.

    Attributes:
        exact: a uniform permutation of the whole split (otherwise blocks of neighbouring
            records are shuffled, which reads faster and mixes as well for training).
        buffer: tf.data only: shuffle through TensorFlow's own buffer of this many records
            instead of the library's order (files interleaved, records read in sequence;
            ``ReadOptions(cache=True)`` keeps them in memory). Its order is not a pure
            function of seed and epoch: it takes no ``state=`` and other readers refuse it.
        drop_last: drop the last, smaller batch of an epoch.
    """

    exact: bool = False
    buffer: int | None = None
    drop_last: bool = False
    numpy_loader: ClassVar[str] = "tfrecordkit.readers.numpy_data:ordered_loader"
    tf_dataset: ClassVar[str] = "tfrecordkit.readers.tf_data._load:ordered_tf"

    def batch_size_for(self, batch_size: int | None) -> int | None:
        """Any global batch, or None for single examples."""
        return batch_size

    def __post_init__(self) -> None:
        if self.exact and self.buffer is not None:
            raise OptionError("Shuffled(exact=True) permutes the whole split: it takes no "
                              "buffer")
        if self.buffer is not None and (isinstance(self.buffer, bool)
                                        or not isinstance(self.buffer, int) or self.buffer < 1):
            raise OptionError(f"Shuffled(buffer=...) must be at least 1 record; got "
                              f"{self.buffer!r}")


@dataclass(frozen=True)
class PK:
    """Class-balanced batches: ``classes_per_batch`` (P) distinct classes × ``examples_per_class``
    (K) records each, class-major, drawn on the fly from a dataset converted by class. A batch
    holds P×K records (the loader's ``batch_size`` is left out) and carries ``"__class"`` and
    ``"__class_position"``.

    Attributes:
        epoch: ``"classes"``: an epoch visits every class about once; ``"examples"``: about
            as many records as the split holds (see :class:`~tfrecordkit.sampling.PKSampler`).
        exclude_small: leave out classes with fewer than K records (by default they are
            sampled with repeats).
    """

    classes_per_batch: int
    examples_per_class: int
    epoch: Literal["classes", "examples"] = "classes"
    exclude_small: bool = False
    numpy_loader: ClassVar[str] = "tfrecordkit.readers._metric:pk_loader"
    tf_dataset: ClassVar[str] = "tfrecordkit.readers.tf_data._load:pk_tf"

    def batch_size_for(self, batch_size: int | None) -> int | None:
        """P×K: left out, or given as exactly that.

        Raises:
            OptionError: another batch size.
        """
        if batch_size is not None and batch_size != self.size:
            raise OptionError(f"PK({self.classes_per_batch}, {self.examples_per_class}) "
                              f"batches hold {self.size} records: leave batch_size out "
                              f"(got {batch_size})")
        return self.size

    def __post_init__(self) -> None:
        for name in ("classes_per_batch", "examples_per_class"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise OptionError(f"PK({name}=...) must be a positive number; got {value!r}")
        if self.epoch not in ("classes", "examples"):
            raise OptionError(f"PK(epoch=...) must be 'classes' or 'examples'; got "
                              f"{self.epoch!r}")

    @property
    def size(self) -> int:
        """Records per batch, P×K."""
        return self.classes_per_batch * self.examples_per_class


@dataclass(frozen=True)
class Triplets:
    """Batches of ``{"anchor", "positive", "negative"}``: every record is an anchor once per
    epoch, its positive another record of its class, its negative one of another class;
    ``batch_size`` triplets a batch.

    Attributes:
        with_labels: tf.data keeps each part's label feature; False leaves it out.
    """

    with_labels: bool = True
    numpy_loader: ClassVar[str] = "tfrecordkit.readers._metric:triplet_loader"
    tf_dataset: ClassVar[str] = "tfrecordkit.readers.tf_data._load:triplets_tf"

    def batch_size_for(self, batch_size: int | None) -> int | None:
        """Triplets per batch: needed.

        Raises:
            OptionError: none given.
        """
        if batch_size is None:
            raise OptionError("Triplets() needs batch_size (triplets per batch)")
        return batch_size


Sampling = InOrder | Shuffled | PK | Triplets | SamplingMode
"""Which records make each batch: one of :class:`InOrder`, :class:`Shuffled`, :class:`PK`,
:class:`Triplets`, or any :class:`SamplingMode`."""


def sampling_of(sampling: Sampling | None) -> Sampling:
    """``sampling`` checked (None: :class:`Shuffled`)."""
    if sampling is None:
        return Shuffled()
    if not isinstance(sampling, SamplingMode) or not all(
            isinstance(getattr(sampling, k, None), str) for k in ("numpy_loader", "tf_dataset")):
        hint = (" (sampling=tk.InOrder() reads the stored order, tk.Shuffled() shuffles)"
                if isinstance(sampling, bool | str | int) else "")
        raise OptionError(f"sampling must be tk.InOrder(), tk.Shuffled(), tk.PK(p, k) or "
                          f"tk.Triplets(); got {sampling!r}{hint}")
    return sampling


def class_dataset(path: Any, sampling: PK | Triplets) -> str | os.PathLike[str]:
    """``path`` as the one dataset directory class-balanced sampling reads.

    Raises:
        DatasetError: a list of files (sampling by class needs a manifest).
    """
    if isinstance(path, str | os.PathLike):
        return path
    if isinstance(path, Mix):
        raise OptionError(f"{type(sampling).__name__}() samples one dataset's classes; "
                          "tk.Mix reads in order or shuffled (sampling=tk.Shuffled() or "
                          "tk.InOrder())")
    raise DatasetError(f"{type(sampling).__name__}() samples by class: it needs a dataset "
                       f"directory with its manifest, not a list of files (adopt them first)")


def seed_of(seed: int | None, state: Mapping[str, Any] | None = None) -> int:
    """The seed a TF-free loader runs with: ``seed``; None draws a fresh one, or, when
    resuming, takes the one the state was saved with."""
    if seed is not None:
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise OptionError(f"seed must be an int >= 0 or None; got {seed!r}")
        return seed
    if isinstance(state, Mapping) and "seed" in state:
        saved = state["seed"]  # the state is checked whole later, against this seed: here first
        if isinstance(saved, bool) or not isinstance(saved, int) or saved < 0:
            raise StateError("seed", f"must be an int >= 0; got {saved!r:.40}")
        return saved
    return secrets.randbits(63)


def shuffle_mode(sampling: InOrder | Shuffled) -> Literal["global", "block", False]:
    """The epoch order's word for ``sampling`` (``tfrecordkit.sampling.EpochOrder``)."""
    if isinstance(sampling, InOrder):
        return False
    return "global" if sampling.exact else "block"


def batch_size_of(sampling: Sampling, batch_size: int | None) -> int | None:
    """``batch_size`` checked against ``sampling`` (its :meth:`SamplingMode.batch_size_for`).

    Raises:
        OptionError: a batch size the mode cannot take.
    """
    return sampling.batch_size_for(batch_size)


@dataclass(frozen=True)
class ReadOptions:
    """How the files are read: the same object every loader takes as ``read=``.

    Attributes:
        schema: the schema to read the records with: for TFRecord files without a manifest
            (default: inferred from a sample, e.g. ``Image(channels=3)`` for JPEGs some of
            which are grey), or instead of a dataset's own (checked against its records).
        storage_options: options for a URL's filesystem (fsspec: credentials, endpoint).
        num_threads: decoding threads of the NumPy and PyTorch loaders (default: up to 4 of
            the machine's cores); tf.data sizes its own (AUTOTUNE) and refuses it.
        max_open_files: shard files open at once for random access (default: an eighth of
            the process's open-file limit, 64 to 1,024).
        cache: tf.data only: keep the serialized records in memory after the first epoch.
    """

    schema: Schema | None = None
    storage_options: dict[str, Any] | None = None
    num_threads: int | None = None
    max_open_files: int | None = None
    cache: bool = False

    def __post_init__(self) -> None:
        for name in ("num_threads", "max_open_files"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 1):
                raise OptionError(f"ReadOptions({name}=...) must be a positive number or "
                                  f"None; got {value!r}")
        if self.schema is not None and not isinstance(self.schema, Schema):
            raise OptionError(f"ReadOptions(schema=...) must be a tk.Schema; got "
                              f"{type(self.schema).__name__}")


# What a reader does not take, and why: one table, so every reader refuses alike (by name,
# rather than ignoring what it was given).
_WHY = {
    "Shuffled(buffer=)": "a shuffle buffer is tf.data's own shuffle; this reader shuffles "
                         "in the library's order, without one",
    "DecodeOptions(augment=)": "augment runs in tf.data and in the NumPy and PyTorch loaders' "
                               "in-order and shuffled batches; elsewhere use DecodeOptions "
                               "crop and flip (keyed by seed and record), or map your own "
                               "function over the records",
    "DecodeOptions(as_supervised=True)": "(inputs, label) pairs shape tf.data's elements for "
                                         "model.fit; the other readers give dicts (take the "
                                         "label from the batch)",
    "ReadOptions(cache=True)": "keeping serialized records in memory is tf.data's buffered "
                               "shuffle's (Shuffled(buffer=n)); the other readers and modes "
                               "read records by offset every epoch (the OS page cache keeps "
                               "them)",
    "ReadOptions(num_threads=)": "tf.data sizes its threads itself (AUTOTUNE); grain and Ray "
                                 "run their own workers",
    "ReadOptions(max_open_files=)": "tf.data's buffered shuffle opens files through its "
                                    "interleave (AUTOTUNE); Ray's read tasks open their own",
    "state=": "grain and Ray keep their own iteration: grain's checkpoints save its iterator "
              "(grain.DataLoader, or a MapDataset's iterator state); a Ray Dataset's "
              "iterators resume nothing (the NumPy, PyTorch and tf.data loaders resume from "
              "state=)",
    "Shuffled(buffer=) with state=": "tf.data's shuffle buffer gives an order that is not a "
                                     "pure function of seed and epoch: save the iterator "
                                     "with tf.train.Checkpoint(iterator=...), or leave "
                                     "buffer= out (Shuffled() reads the library's order, "
                                     "which resumes from state=)",
}


def refuse_untaken(reader: str, takes: Iterable[str], *, sampling: Sampling | None = None,
                   options: Any = None, read: ReadOptions | None = None,
                   state: Any = None) -> None:
    """Refuse, naming ``reader`` and why, an option given that it does not take (``takes``:
    keys of the table above).

    Raises:
        OptionError: the first such option.
    """
    shuffled = sampling if isinstance(sampling, Shuffled) else None
    given = {
        "Shuffled(buffer=)": shuffled is not None and shuffled.buffer is not None,
        "DecodeOptions(augment=)": options is not None and options.augment is not None,
        "DecodeOptions(as_supervised=True)": options is not None and options.as_supervised,
        "ReadOptions(cache=True)": read is not None and read.cache,
        "ReadOptions(num_threads=)": read is not None and read.num_threads is not None,
        "ReadOptions(max_open_files=)": read is not None and read.max_open_files is not None,
        "state=": state is not None,
        "Shuffled(buffer=) with state=": (state is not None and shuffled is not None
                                          and shuffled.buffer is not None),
    }
    untaken = [name for name, asked in given.items() if asked and name not in set(takes)]
    if untaken:
        raise OptionError(f"{reader} does not take {untaken[0]}: {_WHY[untaken[0]]}")
