"""TFDS-prepared datasets read as they are: a version directory's ``features.json`` becomes the
schema and its ``dataset_info.json`` the splits and shard lengths, as a manifest held in memory
(nothing is written into their folder; TensorFlow and TFDS are not needed).

TFDS flattens nested features into ``outer/inner`` keys, stores images as their encoded bytes,
class labels as int64, text as bytes, tensors as flat int64 / float lists, and a ``Sequence``
of features as one list per key (of the concatenated elements); the schema says the same.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any

from tfrecordkit.errors import DatasetError, SchemaError, StorageError
from tfrecordkit.format import Storage
from tfrecordkit.schema import (
    ClassLabel,
    Feature,
    Image,
    Scalar,
    Schema,
    Sequence,
    Tensor,
    Text,
)
from tfrecordkit.store._manifest import Manifest, ShardInfo, SplitInfo

__all__ = ["TFDS_INFO", "is_tfds_dir", "tfds_manifest"]

TFDS_INFO = "dataset_info.json"
TFDS_FEATURES = "features.json"
#: Classes a ClassLabel without a labels file may claim (their names are made up, "0".."n-1").
MAX_CLASSES = 1_000_000
_MAX_JSON = 64 << 20
_PLAIN_NAME = re.compile(r"^(?!\.{1,2}$)[^/\\\x00{}]{1,255}$")
_SCALARS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "bool",
            "float16", "float32")


def is_tfds_dir(path: Any, storage: Storage) -> bool:
    """Whether ``path`` is a TFDS version directory (``dataset_info.json`` and
    ``features.json``)."""
    if not isinstance(path, str | os.PathLike):
        return False
    text = os.fspath(path)
    if storage.local and not os.path.isdir(text):
        return False
    return all(storage.exists(storage.join(text, name)) for name in (TFDS_INFO, TFDS_FEATURES))


def _json(storage: Storage, path: str) -> Any:
    if storage.size(path) > _MAX_JSON:
        raise DatasetError(f"{path}: larger than {_MAX_JSON >> 20} MiB")
    try:
        return json.loads(storage.read_bytes(path))
    except (ValueError, UnicodeDecodeError, RecursionError) as err:
        raise DatasetError(f"{path}: not JSON ({err})") from None


def tfds_manifest(path: str | os.PathLike[str], storage: Storage) -> Manifest:
    """The manifest a TFDS version directory implies (schema, splits, shards and their
    record counts).

    Raises:
        DatasetError: a feature with no counterpart in the schema (named), a file format other
            than TFRecord, or metadata that is not what TFDS writes.
    """
    root = os.fspath(path)
    info = _json(storage, storage.join(root, TFDS_INFO))
    features = _json(storage, storage.join(root, TFDS_FEATURES))
    where = storage.join(root, TFDS_FEATURES)
    if not isinstance(info, dict) or not isinstance(features, dict):
        raise DatasetError(f"{root}: {TFDS_INFO} / {TFDS_FEATURES} are not JSON objects")
    if info.get("fileFormat", "tfrecord") != "tfrecord":
        raise DatasetError(f"{root}: TFDS file format {info.get('fileFormat')!r}; only "
                           "tfrecord shards can be read")
    mapped: dict[str, Feature] = {}
    try:
        _map(features, "", mapped, root, storage, length=False)
        schema = Schema(mapped)
    except DatasetError as err:
        raise DatasetError(f"{where}: {err}") from None
    except (SchemaError, KeyError, TypeError, ValueError, AttributeError,
            RecursionError) as err:
        what = f"{type(err).__name__}: {err}"[:200]
        raise DatasetError(f"{where}: cannot describe these features ({what})") from None
    try:
        splits = _splits(info, root, storage)
    except DatasetError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        what = f"{type(err).__name__}: {err}"[:200]
        raise DatasetError(f"{storage.join(root, TFDS_INFO)}: not what TFDS writes "
                           f"({what})") from None
    if not splits:
        raise DatasetError(f"{root}: {TFDS_INFO} lists no splits")
    labels = list(schema.of_kind(ClassLabel))
    return Manifest(schema=schema, splits=splits, layout="mixed", compression=None,
                    label_feature="label" if "label" in labels else (
                        labels[0] if len(labels) == 1 else None),
                    created_by={"tool": "tensorflow-datasets", "source": root,
                                "version": str(info.get("version"))})


def _splits(info: Mapping[str, Any], root: str, storage: Storage) -> dict[str, SplitInfo]:
    """Each split's shards (file names from TFDS's template) and record counts."""
    name = str(info.get("name", ""))
    splits = {}
    listed: dict[str, str] = {}  # shard file -> the split that lists it
    for split in info.get("splits", []):
        lengths = [int(n) for n in split.get("shardLengths", [])]
        template = split.get("filepathTemplate") or "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}"
        shards = []
        for i, count in enumerate(lengths):
            file = (template.replace("{DATASET}", name).replace("{SPLIT}", split["name"])
                    .replace("{FILEFORMAT}", "tfrecord")
                    .replace("{SHARD_X_OF_Y}", f"{i:05d}-of-{len(lengths):05d}")
                    .replace("{SHARD_INDEX}", f"{i:05d}").replace("{NUM_SHARDS}",
                                                                  f"{len(lengths):05d}"))
            if not _PLAIN_NAME.fullmatch(file) or count < 0:
                # A shard must be a file inside the folder: no separators, not . or ..
                raise DatasetError(f"{root}: shard {file!r} ({count} records) from template "
                                   f"{template!r} is not a file of this folder")
            try:
                size = storage.size(storage.join(root, file))
            except (FileNotFoundError, StorageError):
                raise DatasetError(f"{root}: shard {file} is missing ({TFDS_INFO} lists "
                                   "it)") from None
            if file in listed:
                raise DatasetError(f"{root}: {TFDS_INFO} lists shard {file} twice (splits "
                                   f"{listed[file]!r} and {split['name']!r}): its records "
                                   "would be read twice")
            listed[file] = str(split["name"])
            shards.append(ShardInfo(file=file, records=count, bytes=size, crc32c=""))
        if not _PLAIN_NAME.fullmatch(str(split["name"])):
            raise DatasetError(f"{root}: split name {split['name']!r} is not understood")
        splits[str(split["name"])] = SplitInfo(
            shards=tuple(shards), records=sum(lengths),
            bytes=sum(s.bytes for s in shards))
    return splits


def _kind(node: Mapping[str, Any]) -> str:
    return str(node.get("pythonClassName", "")).rsplit(".", 1)[-1]


def _dims(block: Mapping[str, Any]) -> tuple[int | None, ...]:
    dims = block.get("shape", {}).get("dimensions", [])
    return tuple(None if int(d) < 0 else int(d) for d in dims)


def _map(node: Mapping[str, Any], name: str, out: dict[str, Feature], root: str,
         storage: Storage, *, length: int | bool | None) -> None:
    """Add the features ``node`` (at ``name``) is stored as; ``length`` is set inside a
    ``Sequence`` (None: its length varies)."""
    kind = _kind(node)
    in_sequence = length is not False
    if "featuresDict" in node:
        for key, inner in node["featuresDict"]["features"].items():
            _map(inner, f"{name}/{key}" if name else key, out, root, storage, length=length)
        return
    if "sequence" in node:
        if in_sequence:
            raise DatasetError(f"feature {name!r}: a Sequence inside a Sequence is stored as "
                               "ragged keys, which this reader does not read yet")
        block = node["sequence"]
        size = int(block.get("length", -1))
        _map(block["feature"], name, out, root, storage, length=None if size < 0 else size)
        return
    lead: tuple[int | None, ...] = (length,) if in_sequence else ()
    if "classLabel" in node:
        label = ClassLabel(_class_names(node, name, root, storage))
        out[name] = Sequence(label) if in_sequence else label
    elif "text" in node:
        out[name] = Sequence(Text()) if in_sequence else Text()
    elif "image" in node:
        if in_sequence:
            raise DatasetError(f"feature {name!r}: a Sequence of images is not read yet")
        out[name] = _image(node["image"], name)
    else:
        out[name] = _tensor(node, name, kind, lead)


def _class_names(node: Mapping[str, Any], name: str, root: str, storage: Storage
                 ) -> list[str]:
    """A ClassLabel's names: its labels file's, else its number of classes as names."""
    names = _label_names(root, name, storage)
    if names is not None:
        return names
    count = int(node["classLabel"].get("numClasses", 0))
    if not 0 <= count <= MAX_CLASSES:
        raise DatasetError(f"feature {name!r}: {TFDS_FEATURES} claims {count} classes "
                           f"and no labels file; at most {MAX_CLASSES:,} are read")
    return [str(i) for i in range(count)]


def _image(block: Mapping[str, Any], name: str) -> Image:
    dims = _dims(block)
    fmt = block.get("encodingFormat", "")
    if block.get("dtype", "uint8") != "uint8":
        raise DatasetError(f"feature {name!r}: {block.get('dtype')} images are not read")
    return Image(fmt if fmt in ("jpeg", "png") else "auto",
                 channels=dims[2] if len(dims) == 3 else None, dims=False)


def _tensor(node: Mapping[str, Any], name: str, kind: str | None,
            lead: tuple[int | None, ...]) -> Feature:
    """A tensor, bounding box or raw audio feature (with ``lead``, its Sequence's length)."""
    if "audio" in node:
        audio = node["audio"]
        if str(audio.get("encoding", "none")).lower() != "none":
            raise DatasetError(f"feature {name!r}: audio stored encoded "
                               f"({audio.get('encoding')}) is not read yet")
        node = {"tensor": {**audio, "encoding": "none"}}  # samples as a numeric list
    block = node.get("tensor") or node.get("boundingBox")
    if block is None:
        raise DatasetError(f"feature {name!r}: TFDS {kind or 'feature'} has no counterpart "
                           "in tfrecordkit's schema yet")
    if block.get("encoding", "none") not in ("none", ""):
        raise DatasetError(f"feature {name!r}: tensors encoded as {block['encoding']!r} are "
                           "not read yet")
    dtype, shape = str(block.get("dtype", "float32")), (*lead, *_dims(block))
    if dtype in ("string", "object"):
        if len(shape) > 1:
            raise DatasetError(f"feature {name!r}: string tensors of rank > 1 are not read")
        return Sequence(Scalar("string")) if shape else Scalar("string")
    if dtype == "float64":  # TFDS stores float64 in float lists (float32)
        return (Tensor(shape, "float32", encoding="list") if shape
                else Scalar("float64", float32_storage=True))
    if dtype not in _SCALARS and dtype != "uint64":
        raise DatasetError(f"feature {name!r}: dtype {dtype} is not read")
    # uint64 is stored in int64 lists (two's complement): a list tensor casts it back.
    return (Tensor(shape, dtype, encoding="list") if shape or dtype == "uint64"
            else Scalar(dtype))


def _label_names(root: str, name: str, storage: Storage) -> list[str] | None:
    """A ClassLabel's names from TFDS's ``<feature>.labels.txt`` (nested names joined with
    ``-``: ``objects-label.labels.txt``), None when it has none."""
    path = storage.join(root, f"{name.replace('/', '-')}.labels.txt")
    if not storage.exists(path):
        return None
    # As TFDS reads them: text lines (universal newlines), each stripped, blank ones dropped;
    # only "\n" (after "\r\n" and "\r") ends a line, not U+2028, \x1c or \x85.
    text = storage.read_bytes(path).decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    return [line.strip() for line in text.split("\n") if line.strip()]
