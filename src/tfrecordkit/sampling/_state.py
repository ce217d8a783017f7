"""Resume states checked as a whole before any is used: a state either resumes exactly or is
refused with one line naming the key (never rounded, coerced or silently ignored)."""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any

from tfrecordkit.errors import StateError

__all__ = ["MAX_EPOCH", "check_state", "state_int"]

#: Epochs beyond this are refused (no run gets there; the seeding arithmetic stays exact).
MAX_EPOCH = 2**40


def state_int(state: Mapping[str, Any], key: str, low: int, high: int) -> int:
    """``state[key]``, which must be an ``int`` (not a bool, float or string) in
    ``low..high``."""
    if key not in state:
        raise StateError(key, "missing")
    value = state[key]
    if type(value) is not int:
        raise StateError(key, f"must be an integer; got {type(value).__name__} {value!r:.40}")
    if not low <= value <= high:
        raise StateError(key, f"{value} is outside {low}..{high}")
    return value


def check_state(state: Any, settings: Mapping[str, Any], steps: int, *,
                what: str = "loader", split: str | None = None) -> dict[str, Any]:
    """The state as a plain dict, after checking that it is a mapping whose ``epoch`` and
    ``step`` are integers in range (``step`` in ``0..steps``) and whose ``settings`` keys
    equal this loader's, with the same types (``True`` is not ``1``); a worker's state also
    needs ``0 <= worker < num_workers`` and a step that worker takes. A state that names
    its ``split`` (expression) must name this loader's ``split`` (states saved before they
    named it are checked by their fingerprint alone).

    Raises:
        StateError: naming the first key at fault.
    """
    if not isinstance(state, Mapping):
        raise StateError("", f"must be a dict (a state_dict() result); got "
                             f"{type(state).__name__}")
    checked: dict[str, Any] = dict(state)
    state = checked
    if split is not None and "split" in state and state["split"] != split:
        raise StateError("split", f"the state was saved reading split {state['split']!r:.80}; "
                                  f"this {what} reads {split!r:.80}: give the state's split "
                                  "to resume it")
    for key, value in settings.items():
        # A NumPy seed given to the loader is saved as an int.
        mine = (int(value) if isinstance(value, numbers.Integral)
                and not isinstance(value, bool) else value)
        if key not in state:
            raise StateError(key, f"missing (this {what} has {mine!r})")
        theirs = state[key]
        if key == "fingerprint" and theirs != mine:
            raise StateError(key, "the dataset changed since the state was saved (records "
                                  "appended, or the split rewritten): it would resume over "
                                  f"another record set (saved {theirs!r:.40}, now {mine!r})")
        if type(theirs) is not type(mine) or theirs != mine:
            raise StateError(key, f"the state was saved with {theirs!r:.60}; this {what} has "
                                  f"{mine!r}")
    state_int(state, "epoch", 0, MAX_EPOCH)
    step = state_int(state, "step", 0, steps)
    if "worker" in state or "num_workers" in state:
        workers = state_int(state, "num_workers", 1, 1 << 16)
        worker = state_int(state, "worker", 0, workers - 1)
        if step < steps and step % workers != worker:
            raise StateError("step", f"worker {worker} of {workers} never takes step {step}")
    return checked
