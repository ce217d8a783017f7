"""Python called from tf.data's threads (reading a step's records, decoding audio) and the
interpreter's exit: a call still running, or about to start, when Python finalizes leaves a
TensorFlow thread that never returns, and the process hangs instead of exiting. Every such
function is wrapped by :func:`exit_safe`; at exit, new calls fail at once and exit waits
until none is running. The library errors such a call raised (a corrupt record, named by
file and offset) are kept, so that the error TensorFlow wraps them in is given back as it
was (:func:`raised_error`) rather than found again by reading the split."""

from __future__ import annotations

import atexit
import collections
import functools
import threading
import time
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from tfrecordkit.errors import TFRecordKitError

__all__ = ["exit_safe", "raised_error"]

P = ParamSpec("P")
R = TypeVar("R")


class _Calls:
    """The calls from tf.data's threads now running, and whether the interpreter exits."""

    # Seconds without a call starting, or refused, before exit goes on: tf.data's threads
    # go on asking (refused) until their buffers are full, later on a loaded machine; one
    # asking after exit went on would wait for the GIL the finalizing thread holds.
    QUIET = 0.25
    LONGEST = 10.0  # exit waits no longer than this for calls to finish

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = 0
        self.last_start = 0.0
        self.closing = False
        self.errors: collections.deque[TFRecordKitError] = collections.deque(maxlen=8)

    def enter(self) -> None:
        with self.lock:
            self.last_start = time.monotonic()  # refused ones too: the pipeline still asks
            if self.closing:
                raise RuntimeError("the interpreter is exiting")
            self.running += 1

    def leave(self) -> None:
        with self.lock:
            self.running -= 1

    def drain(self) -> None:
        """Refuse new calls, then wait (the GIL released) until none runs or starts."""
        with self.lock:
            self.closing = True
        deadline = time.monotonic() + self.LONGEST
        while time.monotonic() < deadline:
            with self.lock:
                if self.running == 0 and time.monotonic() - self.last_start > self.QUIET:
                    return
            time.sleep(0.005)


_CALLS = _Calls()
atexit.register(_CALLS.drain)


def exit_safe(function: Callable[P, R]) -> Callable[P, R]:
    """``function`` counted while it runs, and refused (a ``RuntimeError``) once the
    interpreter exits."""

    @functools.wraps(function)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        _CALLS.enter()
        try:
            return function(*args, **kwargs)
        except TFRecordKitError as err:
            with _CALLS.lock:
                _CALLS.errors.append(err)
            raise
        finally:
            _CALLS.leave()

    return call


def raised_error(message: str) -> TFRecordKitError | None:
    """The library error a wrapped call raised that TensorFlow's ``message`` quotes (the
    latest such), if any."""
    with _CALLS.lock:
        found = [err for err in _CALLS.errors if str(err) and str(err) in message]
    return found[-1] if found else None
