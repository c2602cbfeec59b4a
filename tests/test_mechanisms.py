"""The two-sided geometric mechanism: exact noise law, privacy guarantee, validation."""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from gof import chisquare_pvalue
from scipy import stats

from lppf import mechanisms as M
from lppf.validation import ALPHA_MAX, InputError, check_alpha

P_MIN = 0.01


def noise_pvalue(tau, alpha):
    """Chi-square goodness of fit of integer noise ``tau`` to 2Geo(alpha)."""
    half = int(math.log(1e-12) / math.log(alpha)) + 1
    pmf = np.exp(M.noise_logpmf(np.arange(-half, half + 1), alpha))
    return chisquare_pvalue(tau, -half, pmf)


def urandom_from(seed):
    """A reproducible stand-in for ``os.urandom`` (to test the secure path's arithmetic)."""
    rng = np.random.default_rng(seed)
    return lambda n: rng.bytes(n)


# --- the noise law ------------------------------------------------------------------------------


def test_noise_logpmf_is_normalized():
    k = np.arange(-2000, 2001)
    for alpha in (0.0, 0.3, 0.95):
        assert np.exp(M.noise_logpmf(k, alpha)).sum() == pytest.approx(1.0, abs=1e-12)
    assert M.noise_logpmf(0, 0.0) == 0.0 and M.noise_logpmf(1, 0.0) == -np.inf


@pytest.mark.parametrize("alpha", [0.05, 0.5, 0.9])
def test_scalar_alpha_noise_is_two_sided_geometric(alpha):
    Y = np.full((200, 100), 7)
    tau = M.privatize(Y, alpha, rng=int(alpha * 100)) - Y
    assert noise_pvalue(tau, alpha) > P_MIN


def test_per_row_and_per_cell_alpha():
    alphas = np.array([0.2, 0.8])
    Y = sp.random(400, 300, density=0.1, format="csr", random_state=3)
    Y.data = np.ceil(5 * Y.data)
    rows = np.repeat(alphas, 200)
    for alpha in (rows, rows[:, None], np.broadcast_to(rows[:, None], Y.shape).copy()):
        noisy = M.privatize(Y, alpha, rng=5)
        assert noisy.dtype == np.int64 and isinstance(noisy, np.ndarray)
        tau = noisy - Y.toarray().astype(np.int64)
        for j, a in enumerate(alphas):
            assert noise_pvalue(tau[200 * j: 200 * (j + 1)], a) > P_MIN
    cells = np.where(np.arange(300) < 150, 0.3, 0.7) * np.ones((400, 1))
    tau = M.privatize(Y, cells, rng=6) - Y.toarray().astype(np.int64)
    assert noise_pvalue(tau[:, :150], 0.3) > P_MIN
    assert noise_pvalue(tau[:, 150:], 0.7) > P_MIN


def test_alpha_zero_adds_no_noise():
    Y = np.arange(20).reshape(4, 5)
    np.testing.assert_array_equal(M.privatize(Y, 0.0, rng=1), Y)
    np.testing.assert_array_equal(M.privatize(Y, 0.0, secure=True), Y)
    mixed = M.privatize(Y, np.array([0.0, 0.9, 0.0, 0.9]), rng=2)
    np.testing.assert_array_equal(mixed[[0, 2]], Y[[0, 2]])


def test_seeded_noise_is_reproducible():
    Y = np.zeros((50, 40), dtype=np.int64)
    first = M.privatize(Y, 0.7, rng=42)
    np.testing.assert_array_equal(first, M.privatize(Y, 0.7, rng=np.random.default_rng(42)))
    assert not np.array_equal(first, M.privatize(Y, 0.7, rng=43))


@pytest.mark.parametrize("alpha", [0.1, 0.6, 0.97])
def test_secure_noise_arithmetic_is_two_sided_geometric(alpha, monkeypatch):
    """The secure path turns OS bytes into noise by inversion; fed reproducible bytes, its
    output must follow 2Geo(alpha)."""
    monkeypatch.setattr(M.os, "urandom", urandom_from(int(alpha * 1000)))
    monkeypatch.setattr(M, "_opendp", lambda: None)
    tau = M.privatize(np.zeros((300, 100), dtype=np.int64), alpha, secure=True)
    assert noise_pvalue(tau, alpha) > P_MIN


def test_secure_noise_reads_the_os_generator_and_refuses_seeds(monkeypatch):
    calls = []

    def fake(n):
        calls.append(n)
        return bytes(n)  # all-zero bits: V = 2^-53, the largest geometric count

    monkeypatch.setattr(M.os, "urandom", fake)
    monkeypatch.setattr(M, "_opendp", lambda: None)
    noisy = M.privatize(np.zeros((3, 4), dtype=np.int64), np.array([0.5, 0.5, 0.0]), secure=True)
    assert calls == [8 * 12, 8 * 12]
    assert not noisy.any()  # g+ = g- for every cell
    monkeypatch.undo()
    Y = np.zeros((30, 30), dtype=np.int64)
    assert not np.array_equal(M.privatize(Y, 0.5, secure=True), M.privatize(Y, 0.5, secure=True))
    for rng in (0, np.random.default_rng(0)):
        with pytest.raises(InputError, match="cannot be seeded"):
            M.privatize(Y, 0.5, rng=rng, secure=True)


def test_secure_is_the_default_and_says_so():
    Y = np.zeros((30, 30), dtype=np.int64)
    info = M.privatize(Y, 0.5, return_info=True)[1]
    assert info == {"source": "secure", "sampler": M.noise_sampler(), "mechanism": "geometric",
                    "alpha": 0.5}
    assert M.privatize(Y, 0.5, rng=3, return_info=True)[1] == {
        "source": "seeded", "sampler": "numpy", "mechanism": "geometric", "alpha": 0.5}
    with pytest.raises(InputError, match="secure=False needs rng"):
        M.privatize(Y, 0.5, secure=False)


@pytest.mark.skipif(M._opendp() is None, reason="OpenDP not installed (lppf[secure])")
@pytest.mark.parametrize("alpha", [0.3, 0.9])
def test_opendp_noise_is_two_sided_geometric(alpha):
    """OpenDP reads the operating system's randomness and cannot be seeded: this test's false
    alarm rate is its threshold, 1e-6 (a scale off by 5% fails it at both levels)."""
    alphas = np.array([alpha, 0.0])[:, None] * np.ones((2, 30000))
    noisy, info = M.privatize(np.zeros((2, 30000), dtype=np.int64), alphas, return_info=True)
    assert info["sampler"] == "opendp" and not noisy[1].any()
    assert noise_pvalue(noisy[0], alpha) > 1e-6


def test_a_dataframe_keeps_its_names():
    import pandas as pd

    frame = pd.DataFrame([[1, 2], [3, 4]], index=["a", "b"], columns=["x", "y"])
    noisy = M.privatize(frame, 0.5, rng=0)
    assert list(noisy.index) == ["a", "b"] and list(noisy.columns) == ["x", "y"]
    np.testing.assert_array_equal(noisy.to_numpy(), M.privatize(frame.to_numpy(), 0.5, rng=0))


def test_privacy_statement_names_the_weakest_cell():
    assert "epsilon = 0.693147 N for every precision N (alpha = 0.5" in \
        M.privacy_statement(np.array([0.5, 0.9]))
    assert "(1 without noise)" in M.privacy_statement(np.array([0.0, 0.5]))
    assert M.privacy_statement(0.0).startswith("no privacy")
    assert "epsilon = 1 at precision N = 10" in M.privacy_statement(0.9, 1.0, 10.0)


def test_alpha_too_close_to_one_is_refused():
    """Noise beyond the count range: refused before anything is drawn or fitted."""
    for alpha in (1 - 1e-16, 1 - 1e-9):
        with pytest.raises(InputError, match=r"too close to 1: .* \(at most 1 - 2\*\*-26\)"):
            M.privatize(np.zeros((2, 2), dtype=np.int64), alpha)
    check_alpha(ALPHA_MAX)


def test_theorem2_exponentially_randomized_skellam_is_two_sided_geometric():
    """lambda+- ~ Exp(mean alpha/(1-alpha)), g+- ~ Pois(lambda+-): g+ - g- ~ 2Geo(alpha)."""
    rng = np.random.default_rng(2)
    for alpha in (0.3, 0.85):
        lam = rng.exponential(alpha / (1 - alpha), size=(2, 100_000))
        g = rng.poisson(lam)
        assert noise_pvalue(g[0] - g[1], alpha) > P_MIN


# --- privacy ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("epsilon", "precision"), [(1.0, 10.0), (0.5, 1.0), (3.0, 4.0)])
def test_log_likelihood_ratio_is_bounded_by_epsilon_and_attained(epsilon, precision):
    alpha = M.epsilon_to_alpha(epsilon, precision)
    outputs = np.arange(-300, 400)
    y = 20
    for shift in range(-int(precision), int(precision) + 1):
        llr = M.noise_logpmf(outputs - y, alpha) - M.noise_logpmf(outputs - y - shift, alpha)
        assert llr.max() == pytest.approx(abs(shift) * math.log(1 / alpha))
        assert np.all(np.abs(llr) <= epsilon + 1e-12)
    shift = int(precision)
    llr = M.noise_logpmf(outputs - y, alpha) - M.noise_logpmf(outputs - y - shift, alpha)
    assert llr.max() == pytest.approx(epsilon)


def test_empirical_log_ratio_of_outputs_matches_the_exact_one():
    """Outputs for neighbours y and y + N: the log-ratio of their frequencies agrees with the
    exact log-likelihood ratio (in [-epsilon, epsilon]) within sampling error."""
    epsilon, precision, n = 1.0, 3, 400_000
    alpha = M.epsilon_to_alpha(epsilon, precision)
    y = np.array([[10], [10 + precision]])
    noisy = M.privatize(np.broadcast_to(y, (2, n)), alpha, rng=11)
    lo = min(noisy[0].min(), noisy[1].min())
    counts = np.stack([np.bincount(row - lo, minlength=noisy.max() - lo + 1) for row in noisy])
    values = np.arange(lo, lo + counts.shape[1])
    keep = (counts >= 100).all(axis=0)
    emp = np.log(counts[0, keep] / counts[1, keep])
    exact = (M.noise_logpmf(values[keep] - y[0, 0], alpha)
             - M.noise_logpmf(values[keep] - y[1, 0], alpha))
    z2 = (emp - exact) ** 2 / (1 / counts[0, keep] + 1 / counts[1, keep])
    assert keep.sum() > 20
    assert np.abs(exact).max() == pytest.approx(epsilon)
    assert stats.chi2.sf(z2.sum(), keep.sum()) > P_MIN


# --- conversions and validation -----------------------------------------------------------------


def test_epsilon_alpha_conversions():
    assert M.epsilon_to_alpha(1.0, 10) == pytest.approx(math.exp(-0.1))  # about 0.905
    eps = np.array([0.1, 1.0, 5.0])
    np.testing.assert_allclose(M.alpha_to_epsilon(M.epsilon_to_alpha(eps, 4.0), 4.0), eps)
    assert M.alpha_to_epsilon(0.0, 3.0) == np.inf
    for bad in (0.0, -1.0, np.nan):
        with pytest.raises(InputError, match="epsilon must be finite and > 0"):
            M.epsilon_to_alpha(bad, 1.0)
        with pytest.raises(InputError, match="precision must be finite and > 0"):
            M.alpha_to_epsilon(0.5, bad)
    with pytest.raises(InputError, match=r"alpha must lie in \[0, 1\)"):
        M.alpha_to_epsilon(1.0, 1.0)


@pytest.mark.parametrize(
    ("Y", "alpha", "message"),
    [
        (np.ones((2, 3)), 1.0, r"alpha must lie in \[0, 1\), got 1.0"),
        (np.ones((2, 3)), -0.1, r"alpha must lie in \[0, 1\), got -0.1"),
        (np.ones((2, 3)), np.nan, r"alpha must lie in \[0, 1\), got nan"),
        (np.ones((2, 3)), [0.1, 0.2, 0.3], r"alpha: shape \(3, 1\) does not match .* \(2, 3\)"),
        (np.ones((2, 3)), np.full((3, 2), 0.5), r"alpha: shape \(3, 2\) does not match"),
        (np.ones((2, 3)), "high", "alpha: expected numbers"),
        (-np.ones((2, 3)), 0.5, "Y: contains negative counts"),
        (np.full((2, 3), 0.5), 0.5, "Y: contains non-integer values"),
        (np.full((2, 3), np.nan), 0.5, "Y: contains NaN"),
        (np.ones(3), 0.5, "Y: expected a 2-d matrix"),
    ],
)
def test_bad_input_raises_a_clear_error(Y, alpha, message):
    with pytest.raises(InputError, match=message):
        M.privatize(Y, alpha, rng=0)
