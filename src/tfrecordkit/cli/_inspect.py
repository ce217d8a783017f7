"""``tfrecordkit inspect``: record counts, sizes, compression and the inferred feature layout."""

from __future__ import annotations

import argparse
import json
from itertools import islice
from typing import Any

from tfrecordkit.cli._progress import progress
from tfrecordkit.errors import SchemaError
from tfrecordkit.format import RecordReader, Storage
from tfrecordkit.schema import RecordProfile, profile_records, schema_from_profile
from tfrecordkit.store import expand_record_paths


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "inspect", help="show records, bytes, compression and the inferred schema of files"
    )
    parser.add_argument("paths", nargs="+", help="record files, globs or dataset directories")
    parser.add_argument(
        "--sample", type=int, default=1000, help="records to profile (default 1000)"
    )
    parser.add_argument(
        "--emit-code", action="store_true",
        help="print a complete TensorFlow reader: feature_description, a parse function "
             "decoding images (shapes from their stored dims) and the tf.data pipeline "
             "(with --json: both as JSON)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(func=run)


def _sampled(paths: list[str], sample: int, options: dict[str, Any] | None) -> RecordProfile:
    def records() -> Any:
        for path in paths:
            # See _verify for why not mmap.
            yield from RecordReader(path, use_mmap=False, storage=Storage.of(path, options))

    return profile_records(islice(records(), sample), limit=sample)


def run(args: argparse.Namespace) -> int:
    options = args.storage_options
    paths = expand_record_paths(args.paths, options)
    files = [_file_facts(path, Storage.of(path, options), args.quiet) for path in paths]
    profile = _sampled(paths, args.sample, options)
    if args.emit_code:
        _print_code(profile, as_json=args.json)
        return 0
    result = {
        "files": files,
        "records": sum(f["records"] for f in files),
        "bytes": sum(f["bytes"] for f in files),
        **profile.to_dict(),
    }
    try:  # what the readers read these files with (the rule of globs and adopt)
        schema = schema_from_profile(profile, complete=profile.records == result["records"])
        result["schema"] = schema.to_json()
    except SchemaError as err:
        schema, result["schema_error"] = None, str(err)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    for f in files:
        print(f"{f['path']}: {f['records']} records, {f['bytes']} bytes, "
              f"compression {f['compression']}")
    _print_features(profile, result["features"])
    if schema is not None:
        print("schema the readers infer (pass tk.infer_schema(files, sample=None) as schema= "
              "to describe every record):")
        for name, feature in schema.items():
            print(f"  {name}: {feature!r}")
    else:
        print(f"no schema: {result['schema_error']}")
    return 0


def _file_facts(path: str, storage: Storage, quiet: bool) -> dict[str, Any]:
    """A file's records (each read, CRC-checked), size and compression."""
    reader = RecordReader(path, use_mmap=False, storage=storage)
    count = sum(1 for _ in progress(reader, quiet=quiet, desc=path.rsplit("/", 1)[-1]))
    return {"path": path, "records": count, "bytes": storage.size(path),
            "compression": reader.compression or "none"}


def _print_code(profile: Any, *, as_json: bool) -> None:
    """The parse function (and, as JSON, each feature's parse spec) the files need."""
    code = profile.parse_function_code()
    if as_json:
        print(json.dumps({"feature_description": {
            name: feature.parse_spec_code(profile.records)
            for name, feature in sorted(profile.features.items())},
            "code": code}, indent=2))
    else:
        print(code, end="")


def _print_features(profile: Any, features: dict[str, dict[str, Any]]) -> None:
    """The sampled features as a table: kind, values per record, presence, content, spec."""
    what = ("SequenceExamples: context features and feature lists"
            if profile.message_type == "SequenceExample" else "records")
    print(f"features (from {profile.records} sampled {what}"
          + (f", {profile.unparsable} not Examples" if profile.unparsable else "") + "):")
    rows = [("name", "kind", "values/record", "present", "content / range", "parse spec")]
    for name, feature in features.items():
        counts = _span(feature["min_values_per_record"], feature["max_values_per_record"])
        if feature.get("sequence"):  # a feature list: values per step, and its steps
            counts = (f"{_span(feature['min_steps'], feature['max_steps'])} steps "
                      f"x {counts}")
        kind = feature["kind"] + (" list" if feature.get("sequence") else "")
        rows.append((name, kind, counts, f"{feature['present_in']}/{profile.records}",
                     _detail(feature), feature["parse_spec"]))
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  " + "  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def _detail(feature: dict[str, Any]) -> str:
    """What a feature's values are: its contents, or its range of numbers."""
    if "content" in feature:
        return ", ".join(f"{k}" + (f" x{v}" if len(feature["contents"]) > 1 else "")
                         for k, v in feature["contents"].items())
    if "min_value" in feature:
        return f"{feature['min_value']:g} .. {feature['max_value']:g}"
    return ""


def _span(low: int, high: int) -> str:
    return f"{low}" if low == high else f"{low}..{high}"
