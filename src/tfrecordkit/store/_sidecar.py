"""Large lists of a manifest (a vocabulary's tokens, a class list) kept in sidecar files beside
``dataset.json``, each named in the manifest with its SHA-256 and length, so the manifest
stays small whatever the vocabulary or the number of classes (format version 4).

In the manifest a list becomes ``{"sidecar": "dataset.<feature>-<sha256 prefix>.tokens.json",
"sha256": "<hex>", "count": n}`` (``.names.json`` for a class list; the digest in the name, so
a new manifest never changes a sidecar an older one names); the sidecar holds the JSON list.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from tfrecordkit.errors import DatasetError
from tfrecordkit.format import Storage

__all__ = ["MAX_SIDECAR_BYTES", "SIDECAR_ITEMS", "externalize_lists", "internalize_lists",
           "is_sidecar_name"]

#: Lists longer than this go to a sidecar.
SIDECAR_ITEMS = 10_000
#: The largest sidecar a reader reads.
MAX_SIDECAR_BYTES = 1 << 30

# (feature key holding the list, the key inside it): a Text's vocabulary tokens, a
# ClassLabel's names (also inside a Sequence).
_NAME = re.compile(r"^dataset\.[A-Za-z0-9_.-]{1,200}\.(tokens|names)\.json$")
_SAFE = re.compile(r"[^A-Za-z0-9_.-]")


def is_sidecar_name(name: str) -> bool:
    """Whether ``name`` is the name of a manifest's sidecar file."""
    return bool(_NAME.fullmatch(name))


def _lists(features: dict[str, Any]) -> list[tuple[str, dict[str, Any], str]]:
    """Every ``(feature name, dict holding the list, key of the list)`` in a schema JSON."""
    found = []
    for name, feature in features.items():
        if not isinstance(feature, dict):
            continue
        inner = feature.get("feature") if feature.get("kind") == "sequence" else feature
        if not isinstance(inner, dict):
            continue
        if inner.get("kind") in ("class_label", "boxes") and "names" in inner:
            found.append((name, inner, "names"))
        vocabulary = inner.get("vocabulary")
        if inner.get("kind") == "text" and isinstance(vocabulary, dict):
            found.append((name, vocabulary, "tokens"))
    return found


def externalize_lists(manifest: dict[str, Any]) -> dict[str, bytes]:
    """Move the long lists of ``manifest`` (JSON, changed in place) to sidecars; return
    ``{file name: bytes}`` to write before the manifest."""
    features = manifest.get("schema", {}).get("features", {})
    sidecars: dict[str, bytes] = {}
    for name, holder, key in _lists(features):
        items = holder[key]
        if not isinstance(items, list) or len(items) <= SIDECAR_ITEMS:
            continue
        data = json.dumps(items, ensure_ascii=False).encode("utf-8")
        digest = hashlib.sha256(data).hexdigest()
        # Named for their content: a manifest replaced (an append that grows a class list)
        # never has its sidecar changed under it before the new manifest is in place.
        file = f"dataset.{_SAFE.sub('_', name)[:180]}-{digest[:12]}.{key}.json"
        if file in sidecars:  # two names that sanitise alike
            file = f"dataset.{_SAFE.sub('_', name)[:170]}-{len(sidecars)}-{digest[:12]}.{key}.json"
        sidecars[file] = data
        holder[key] = {"sidecar": file, "sha256": digest, "count": len(items)}
    return sidecars


def internalize_lists(manifest: Any, directory: str, storage: Storage, source: str) -> None:
    """Put the sidecar lists named by ``manifest`` (JSON, changed in place) back, after
    checking each one's name, size, checksum, length and content.

    Raises:
        DatasetError: a sidecar is missing, too large, altered or not a list of strings.
    """
    if not isinstance(manifest, dict) or not isinstance(manifest.get("schema"), dict):
        return
    features = manifest["schema"].get("features")
    if not isinstance(features, dict):
        return
    for name, holder, key in _lists(features):
        ref = holder[key]
        if not isinstance(ref, dict):
            continue
        where = f"{source}: feature {name!r}: {key} sidecar"
        holder[key] = _sidecar_list(ref, where, manifest, directory, storage)


def _sidecar_list(ref: dict[str, Any], where: str, manifest: dict[str, Any], directory: str,
                  storage: Storage) -> list[str]:
    """The list a sidecar reference names, after checking the reference, the file's size,
    checksum, length and content (``where`` names it in errors)."""
    file, digest, count = ref.get("sidecar"), ref.get("sha256"), ref.get("count")
    if (not isinstance(file, str) or not _NAME.fullmatch(file) or not isinstance(digest, str)
            or type(count) is not int or count < 0):
        raise DatasetError(f"{where}: the reference {ref!r:.200} is not a sidecar file "
                           "name, sha256 and count")
    if int(manifest.get("format_version", 0) or 0) < 4:
        raise DatasetError(f"{where}: sidecars need format version 4")
    path = storage.join(directory, file)
    try:
        if storage.size(path) > MAX_SIDECAR_BYTES:
            raise DatasetError(f"{where} {file}: larger than {MAX_SIDECAR_BYTES >> 20} MiB")
        data = storage.read_bytes(path)
    except OSError as err:
        raise DatasetError(f"{where} {file}: cannot be read ({err})") from None
    if hashlib.sha256(data).hexdigest() != digest:
        raise DatasetError(f"{where} {file}: its checksum differs from the manifest's "
                           "(altered or replaced)")
    try:
        items = json.loads(data)
    except (ValueError, RecursionError) as err:
        raise DatasetError(f"{where} {file}: not JSON ({err})") from None
    if (not isinstance(items, list) or len(items) != count
            or not all(isinstance(item, str) for item in items)):
        raise DatasetError(f"{where} {file}: not a list of {count} strings")
    return items
