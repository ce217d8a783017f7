"""The keyed permutations every order is built from: bijections, for any domain and key."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tfrecordkit.format import compiled_codec
from tfrecordkit.sampling._order import (
    EpochOrder,
    _feistel_each_numpy,
    feistel_permute,
    feistel_permute_each,
    mix_keys,
)


@given(st.integers(0, 3000), st.integers(0, 2**64 - 1))
def test_feistel_is_a_bijection_of_every_domain(n, key):
    out = feistel_permute(np.arange(n), n, key)
    assert sorted(out.tolist()) == list(range(n))


@given(st.lists(st.integers(1, 300), min_size=1, max_size=12), st.integers(0, 2**32))
def test_feistel_each_permutes_every_domain_at_once(sizes, seed):
    keys = mix_keys(seed, np.arange(len(sizes)))
    positions = np.concatenate([np.arange(n) for n in sizes])
    domains = np.repeat(sizes, sizes)
    out = feistel_permute_each(positions, domains, np.repeat(keys, sizes))
    start = 0
    for i, n in enumerate(sizes):
        part = out[start : start + n]
        assert sorted(part.tolist()) == list(range(n))
        alone = feistel_permute_each(np.arange(n), np.full(n, n), np.full(n, keys[i]))
        assert part.tolist() == alone.tolist()  # independent of its neighbours
        start += n


def test_feistel_each_values_are_pinned():
    """P×K orders and resume states depend on these values: neither the compiled codec nor
    the NumPy rounds may change them (the NumPy rounds gave the same before the compiled
    ones came, except for the empty domain, which then never returned)."""
    positions = np.array([0, 1, 2, 3, 4, 5, 6, 7, 0, 0, 99, 12345], np.uint64)
    sizes = np.array([8] * 8 + [0, 1, 100, 2**33])
    keys = mix_keys(7, np.arange(12))
    expected = [3, 4, 6, 5, 2, 3, 7, 5, 0, 0, 42, 3786258824]
    assert feistel_permute_each(positions, sizes, keys).tolist() == expected
    assert _feistel_each_numpy(positions, sizes, keys, 4).tolist() == expected


domain = st.integers(0, 2**44).flatmap(
    lambda n: st.tuples(st.just(n), st.integers(0, max(n - 1, 0))))


@pytest.mark.skipif(compiled_codec() is None, reason="the compiled codec is not built")
@given(st.lists(domain, min_size=1, max_size=40), st.integers(0, 2**64 - 1),
       st.integers(1, 8))
def test_compiled_feistel_each_equals_the_numpy_rounds(domains, seed, rounds):
    sizes = np.array([n for n, _ in domains], np.int64)
    positions = np.array([p for _, p in domains], np.uint64)
    keys = mix_keys(seed, np.arange(len(domains)))
    assert (feistel_permute_each(positions, sizes, keys, rounds).tolist()
            == _feistel_each_numpy(positions, sizes, keys, rounds).tolist())


def test_feistel_each_refuses_positions_outside_their_domain():
    with pytest.raises(ValueError, match="inside its domain"):
        feistel_permute_each(np.array([5]), np.array([5]), mix_keys(1))


@given(st.integers(1, 5000), st.integers(0, 100), st.integers(0, 5),
       st.sampled_from(["global", "block", False]))
def test_an_epoch_order_is_a_permutation(n, seed, epoch, mode):
    ids = EpochOrder(n, seed, epoch, mode).ids(np.arange(n))
    assert sorted(ids.tolist()) == list(range(n))
