"""The chunk-local xoshiro256+ stream of lppf._numba."""

import numpy as np
from numba import njit
from scipy import stats

from lppf._numba import rng_state, uniform

_M = 2**64 - 1


def reference(state, n):
    """xoshiro256+ (Blackman and Vigna) in Python integers."""
    s = [int(x) for x in state]
    out = []
    for _ in range(n):
        result = (s[0] + s[3]) & _M
        t = (s[1] << 17) & _M
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = ((s[3] << 45) | (s[3] >> 19)) & _M
        out.append((result >> 11) * 2.0**-53)
    return out


@njit
def _draws(seed, n):
    rs = rng_state(seed)
    out = np.empty(n)
    for i in range(n):
        out[i] = uniform(rs)
    return out


def test_matches_reference_algorithm():
    state = rng_state(12345)
    assert len(set(state.tolist())) == 4
    np.testing.assert_array_equal(_draws(12345, 50), reference(state, 50))


def test_uniform_on_unit_interval():
    u = _draws(7, 200_000)
    assert u.min() >= 0.0 and u.max() < 1.0
    counts = np.bincount((u * 100).astype(int), minlength=100)
    assert stats.chisquare(counts).pvalue > 1e-3
    assert not np.array_equal(_draws(7, 10), _draws(8, 10))
