"""Where adopted records' classes come from: a feature the records hold (found by name or
given), or each file's name (``class_pattern``), and the class names."""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Sequence
from typing import Any

from tfrecordkit.errors import DatasetError
from tfrecordkit.schema import ClassLabel, FeatureProfile, RecordProfile, Schema

__all__ = ["LABEL_NAMES", "Labels", "classes_from_names", "is_int_scalar", "label_candidate"]

#: Names a feature of int64 class ids is found by, in this order.
LABEL_NAMES = ("label", "labels", "class", "target", "y")


@dataclasses.dataclass(frozen=True)
class Labels:
    """Where adopted records' classes come from: a feature of theirs (``parsed``), or each
    file's name (``file_classes``); the label's name and class names."""

    label_feature: str | None
    class_names: Sequence[str] | None
    file_classes: list[int] | None
    parsed: str | None

    @classmethod
    def resolve(cls, files: list[str], profile: RecordProfile, given: Schema | None, *,
                label_feature: str | None, class_names: Sequence[str] | None,
                class_pattern: str | None) -> Labels:
        file_classes: list[int] | None = None
        if class_pattern is not None:
            file_classes, class_names = classes_from_names(files, class_pattern, class_names)
            label_feature = label_feature or "label"
            if label_feature in profile.features:
                raise DatasetError(f"the records already hold a feature {label_feature!r}; "
                                   "name the class taken from file names with label_feature")
        if given is not None and label_feature is None and class_pattern is None and (
                found := given.class_label()) is not None:
            label_feature = found[0]
            class_names = class_names if class_names is not None else found[1].names or None
        label_feature = label_feature or label_candidate(profile)
        parsed = label_feature if file_classes is None else None
        if parsed is not None and not is_int_scalar(profile.features.get(parsed),
                                                     profile.records):
            raise DatasetError(f"{parsed!r} is not one int64 per record in "
                               f"{files[0]}; name the class feature with label_feature")
        return cls(label_feature, class_names, file_classes, parsed)

    def with_names_up_to(self, top: int) -> Labels:
        """These labels with names for classes ``0..top`` when the records hold the ids."""
        if self.parsed is None:
            return self
        if self.class_names is None:
            return dataclasses.replace(self, class_names=[str(i) for i in range(top + 1)])
        if top >= len(self.class_names):
            raise DatasetError(f"class id {top} found, but only {len(self.class_names)} class "
                               "names given")
        return self

    def as_class_label(self, schema: Schema) -> Schema:
        """``schema`` (one given) with the records' label feature a class label of these
        names."""
        if self.parsed is not None and (self.parsed not in schema.of_kind(ClassLabel)
                                        or self.class_names is not None):
            schema = Schema({**schema, self.parsed: ClassLabel(list(self.class_names or ()))})
        return schema

    def with_file_class(self, schema: Schema) -> Schema:
        """``schema`` with the class each file's name gives (``from_shard``), if it does."""
        if self.file_classes is not None:
            assert self.label_feature is not None and self.class_names is not None
            schema = Schema({**schema, self.label_feature: ClassLabel(self.class_names,
                                                                      from_shard=True)})
        return schema



def classes_from_names(files: list[str], pattern: str, class_names: Sequence[str] | None
                        ) -> tuple[list[int], list[str]]:
    """Each file's class id, from the text of its name that ``pattern`` picks, and the class
    names: given (a capture is a name, or the id of one), else the captured texts, with dense
    ids ``0..n-1`` in numeric order when every capture is an integer, else in sorted order.
    Time and memory grow with the number of files, never with the numbers in their names.

    Raises:
        DatasetError: a name gives no class, two captures are one number written two ways
            (``01`` and ``1``), or a capture is not among the given names.
    """
    found = _captures(files, pattern)
    numeric = all(_DIGITS.fullmatch(text) for text in found)
    if numeric:
        _one_spelling_each(files, found)
    if class_names is not None:
        names = [str(n) for n in class_names]
        return _given_ids(files, found, names), names
    names = (sorted(set(found), key=int) if numeric else sorted(set(found)))
    lookup = {n: i for i, n in enumerate(names)}
    return [lookup[text] for text in found], names


def _captures(files: list[str], pattern: str) -> list[str]:
    """The text ``pattern`` picks from each file's name (its group ``class``, else its first
    group, else the whole match)."""
    try:
        regex = re.compile(pattern)
    except re.error as err:
        raise DatasetError(f"class_pattern {pattern!r} is not a regular expression: "
                           f"{err}") from None
    group: int | str = ("class" if "class" in regex.groupindex else 1 if regex.groups else 0)
    found = []
    for file in files:
        match = regex.search(os.path.basename(file.rstrip("/")))
        if match is None or not match.group(group):
            raise DatasetError(f"{file}: its name does not give a class by class_pattern "
                               f"{pattern!r}")
        found.append(match.group(group))
    return found


def _one_spelling_each(files: list[str], found: list[str]) -> None:
    """Refuse one number written two ways (``01`` and ``1``) as two files' classes."""
    first_text: dict[int, tuple[str, str]] = {}
    for file, text in zip(files, found, strict=True):
        seen = first_text.setdefault(int(text), (text, file))
        if seen[0] != text:
            raise DatasetError(
                f"{file}: class {text!r} (by class_pattern) is the number of class "
                f"{seen[0]!r} of {seen[1]} written another way; rename one of them")


def _given_ids(files: list[str], found: list[str], names: list[str]) -> list[int]:
    """The id of each captured class among given names: a name's, or (when no name is a
    number) the number itself."""
    lookup = {n: i for i, n in enumerate(names)}
    # A number is a class id only when no class name is a number (no two readings).
    ids_allowed = not any(_DIGITS.fullmatch(n) for n in names)
    ids = []
    for file, text in zip(files, found, strict=True):
        if text in lookup:
            ids.append(lookup[text])
        elif ids_allowed and _DIGITS.fullmatch(text) and int(text) < len(names):
            ids.append(int(text))
        else:
            raise DatasetError(f"{file}: class {text!r} (by class_pattern) is not among "
                               f"the {len(names)} class names")
    return ids


_DIGITS = re.compile("[0-9]+")


def is_int_scalar(profile: FeatureProfile | None, records: int) -> bool:
    return (profile is not None and profile.kind == "int64" and profile.present == records
            and profile.min_count == profile.max_count == 1)


def label_candidate(profile: Any) -> str | None:
    for name in LABEL_NAMES:
        if is_int_scalar(profile.features.get(name), profile.records):
            return name
    return None
