"""The ``tfrecordkit`` command line: results on stdout, logs and progress on stderr.

Exit status: 0 success, 1 bad data (corrupt records, missing files), 2 bad usage.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from typing import Any

from tfrecordkit.errors import TFRecordKitError

__all__ = ["build_parser", "main", "parse_storage_options"]


def parse_storage_options(pairs: Sequence[str]) -> dict[str, Any] | None:
    """``KEY=VALUE`` pairs as fsspec storage options (None when there are none)."""
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--storage-option expects KEY=VALUE; got {pair!r}")
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = text
        *parents, last = key.split(".")
        target = options
        for parent in parents:
            target = target.setdefault(parent, {})
            if not isinstance(target, dict):
                raise ValueError(f"--storage-option {key}: {parent} is not a group")
        target[last] = value
    return options or None


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand registered."""
    from tfrecordkit._version import __version__
    from tfrecordkit.cli import (
        _adopt,
        _append,
        _convert,
        _export,
        _head,
        _index,
        _inspect,
        _report,
        _show,
        _stats,
        _verify,
    )

    parser = argparse.ArgumentParser(
        prog="tfrecordkit", description="Convert, inspect, verify and index TFRecord datasets."
    )
    parser.add_argument("--version", action="version", version=f"tfrecordkit {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-q", "--quiet", action="store_true", help="no progress bars or logs")
    common.add_argument(
        "--storage-option", action="append", default=[], metavar="KEY=VALUE",
        dest="storage_option_pairs",
        help="an option for URLs' filesystem (fsspec), repeatable; VALUE is JSON if it "
             "parses (true, 3), and a dotted KEY nests (client_kwargs.endpoint_url=...)")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    # Each subcommand module adds its parser; they all share --quiet.
    for module in (_convert, _append, _adopt, _stats, _inspect, _verify, _index, _head, _show,
                   _report, _export):
        module.register(_SharedOptions(subparsers, common))
    return parser


class _SharedOptions:
    """Adds the common options to every subparser created through it."""

    def __init__(
        self,
        subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
        common: argparse.ArgumentParser,
    ) -> None:
        self._subparsers = subparsers
        self._common = common

    def add_parser(self, name: str, **kwargs: object) -> argparse.ArgumentParser:
        return self._subparsers.add_parser(name, parents=[self._common], **kwargs)  # type: ignore[arg-type]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return int(exit_.code or 0)
    try:
        args.storage_options = parse_storage_options(args.storage_option_pairs)
    except ValueError as err:
        print(f"tfrecordkit {args.command}: {err}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=logging.ERROR if args.quiet else logging.WARNING,
        format="%(levelname)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        return int(args.func(args))
    except BrokenPipeError:  # e.g. `tfrecordkit head ... | head -1`
        return 0
    except (TFRecordKitError, OSError) as err:
        print(f"tfrecordkit {args.command}: {err}", file=sys.stderr)
        return 1
