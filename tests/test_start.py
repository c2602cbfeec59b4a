"""The EM start of the chains: over-relaxed EM never lowers the observed-data likelihood and
climbs faster than plain EM where the noise hides most counts (alpha 0.9)."""

from __future__ import annotations

import numpy as np
import pytest

from lppf import mechanisms, synthetic
from lppf import start as _start
from lppf.validation import FitData


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(5)
    base = {"theta": rng.gamma(0.5, 1 / 3, (100, 4)), "phi": rng.gamma(0.5, 1 / 3, (4, 60))}
    truth = synthetic.rescaled_truth(rng, "pmf", base, 50.0, 0.001)
    return FitData(mechanisms.privatize(truth["Y"], 0.9, rng), np.full((1, 1), 0.9),
                   np.zeros(truth["Y"].shape, bool))


@pytest.mark.parametrize("method", ["private", "naive"])
def test_em_never_lowers_the_observed_loglik(data, method):
    """The log likelihood after n steps (one deterministic path) does not decrease in n."""
    start = _start.random_start(data, 4, np.random.default_rng(0))
    trace = []
    for n in range(0, 31, 3):
        A, B = (X.copy() for X in start)
        trace.append(_start.em(data, method, A, B, n))
    assert np.all(np.diff(trace) >= 0), np.diff(trace)
    assert _start.observed_loglik(data, method, A @ B)[0] == trace[-1]


def test_over_relaxation_climbs_faster_than_plain_em(data, monkeypatch):
    def climb():
        A, B = _start.random_start(data, 4, np.random.default_rng(1))
        return _start.em(data, "private", A, B, 40)

    relaxed = climb()
    monkeypatch.setattr(_start, "GROWTH", 1.0)
    plain = climb()
    assert relaxed > plain + 100, (relaxed, plain)


def test_the_start_has_positive_rates_everywhere(data):
    """EM drives the factors of a row without counts to 1e-300 and its mu to 0, on which the
    count sampler divides."""
    Y = data.Y.copy()
    Y[0] = -3  # naive counts max(y~, 0): an empty row
    data = FitData(Y, data.alpha, data.mask)
    Theta, Phi, _ = _start.best_start(data, "naive", 4, 20, np.random.default_rng(2))
    assert Theta.min() >= 1e-8 and Phi.min() >= 1e-8
    assert (Theta @ Phi).min() > 0


def test_nndsvd_start_is_scikit_learns_nndsvd_with_zeros_lifted(data):
    """The start is scikit-learn's NNDSVD with entries below NNDSVD_LIFT times the
    factor's mean lifted to it."""
    from sklearn.decomposition._nmf import _initialize_nmf

    W, H = _initialize_nmf(_start._counts(data), 4, init="nndsvd")
    Theta, Phi = _start.nndsvd_start(data, 4)
    for ours, theirs in ((Theta, W), (Phi, H)):
        lift = _start.NNDSVD_LIFT * theirs.mean()
        assert (theirs < lift).any() and (theirs > lift).any()
        np.testing.assert_allclose(ours, np.maximum(theirs, lift), rtol=1e-9)


def test_nndsvd_start_arpack_path_equals_lapack(data, monkeypatch):
    """Above SVD_DENSE_MAX rows and columns the SVD is ARPACK's; same start (up to its
    tolerance), reproducibly."""
    dense = _start.nndsvd_start(data, 4)
    monkeypatch.setattr(_start, "SVD_DENSE_MAX", 10)
    sparse = _start.nndsvd_start(data, 4)
    for a, b in zip(dense, sparse, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-8 * a.max())
    for a, b in zip(sparse, _start.nndsvd_start(data, 4), strict=True):
        np.testing.assert_array_equal(a, b)


def test_nndsvd_start_only_where_it_is_defined(data):
    assert _start.nndsvd_start(data, 60) is None  # K >= min(D, V)
    fixed = FitData(data.Y, data.alpha, data.mask, {"phi": np.ones((4, 60))})
    assert _start.nndsvd_start(fixed, 4) is None


def test_successive_halving_spends_the_pilot_budget_on_the_restarts_still_in_contention(
        data, monkeypatch):
    """A fake EM whose score depends on the restart and its steps so far: restart 3 leads
    after the first round and then stalls, restart 9 climbs past it. Halving keeps 9 (one
    ranking after the first round would keep 3) and spends RESTARTS x pilot steps, then
    refine on the survivor."""
    steps_of, calls = {}, []

    def fake_em(data, method, A, B, n, model="pmf", noise=None):
        key = int(A[0, 0] * 1e6)  # the restart's identity, set below
        steps_of[key] = steps_of.get(key, 0) + n
        calls.append((key, n))
        t = steps_of[key]
        return {3: 100.0 + min(t, 20), 9: 50.0 + t}.get(key, float(key))

    counter = iter(range(100))

    def draw(data, K, rng):
        i = next(counter)
        return np.full((data.Y.shape[0], K), i / 1e6 + 1e-9), np.ones((K, data.Y.shape[1]))

    monkeypatch.setattr(_start, "em", fake_em)
    monkeypatch.setattr(_start, "random_start", draw)
    monkeypatch.setattr(_start, "nndsvd_start", lambda data, K: None)
    A, _, first_round = _start.best_start(data, "private", 4, 100, np.random.default_rng(0))
    pilot, refine = _start.em_budget(100)
    assert int(A[0, 0] * 1e6) == 9
    assert first_round.shape == (_start.RESTARTS["pmf"],) and np.argmax(first_round) == 3
    assert sum(n for _, n in calls[:-1]) == _start.RESTARTS["pmf"] * pilot
    assert calls[-1] == (9, refine)


def _shaped(n_rows: int, n_cols: int) -> FitData:
    return FitData(np.zeros((n_rows, n_cols)), np.full((1, 1), 0.5),
                   np.zeros((n_rows, n_cols), bool))


def test_halving_spends_pilot_steps_per_restart():
    assert _start.halving_steps(16, 20) == 16 * 50  # 16 x 20 + 8 x 20 + 4 x 40 + 2 x 80
    assert _start.halving_steps(4, 20) == 4 * 20 + 2 * 20 and _start.halving_steps(1, 7) == 7


def test_uncapped_and_small_starts_keep_the_whole_schedule():
    full = (_start.RESTARTS["pmf"], 20, 200)
    assert _start.start_schedule(_shaped(300, 150), 5, 100, None) == full
    assert _start.start_schedule(_shaped(300, 150), 5, 100, 2000) == full
    assert _start.start_schedule(_shaped(130, 130), 5, 100, 500, "community") == (
        _start.RESTARTS["community"], 20, 200)


@pytest.mark.parametrize("n_iter", [200, 1000, 4000, 20000])
def test_a_capped_start_costs_at_most_its_share_of_the_chain(n_iter):
    """1000 x 1000, K = 50: the EM steps cost at most START_SHARE of n_iter sweeps."""
    R, s, refine = _start.start_schedule(_shaped(1000, 1000), 50, 300, n_iter)
    cost = (_start.halving_steps(R, s) + refine) * _start.em_sweeps("pmf", 50)
    assert cost <= _start.START_SHARE * n_iter
    assert R < _start.RESTARTS["pmf"] or n_iter == 20000
    assert R >= 1 and s >= 1


def test_a_capped_start_runs_its_schedule_from_the_nndsvd_restart(data, monkeypatch):
    calls = []

    def fake_em(data, method, A, B, n, model="pmf", noise=None):
        calls.append(n)
        return -float(A[0, 0])

    monkeypatch.setattr(_start, "em", fake_em)
    monkeypatch.setattr(_start, "START_FREE", 0.0)
    first = _start.nndsvd_start(data, 4)
    R, s, refine = _start.start_schedule(data, 4, 100, 300)
    assert R < _start.RESTARTS["pmf"]
    A, _, scores = _start.best_start(data, "private", 4, 100, np.random.default_rng(0),
                                     n_iter=300)
    assert len(scores) == R and sum(calls) == _start.halving_steps(R, s) + refine
    if R == 1:
        np.testing.assert_array_equal(A, np.maximum(first[0], _start.START_FLOOR))


def test_a_start_builds_the_noise_tables_once(monkeypatch):
    """Every EM step of a discrete Gaussian start reads the same tables (rebuilding them
    each step cost an M1 fit most of its time)."""
    from lppf import noise_conditional

    calls = []
    build = noise_conditional.tables
    monkeypatch.setattr(noise_conditional, "tables", lambda *a: calls.append(1) or build(*a))
    rng = np.random.default_rng(0)
    Y = mechanisms.privatize(rng.poisson(1.0, (30, 20)), rng=rng,
                             mechanism="discrete-gaussian", sigma=2.0)
    data = FitData(Y, np.full((1, 1), 2.0), np.zeros(Y.shape, bool),
                   mechanism="discrete-gaussian")
    _start.best_start(data, "private-collapsed", 3, 40, rng)
    assert len(calls) == 1
