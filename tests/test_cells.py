"""A row of cells by closed forms, the series and the walks: each cell's E[y] and ln Z as the
walk of its pmf gives them, cell by cell."""

import math

import numpy as np
import pytest

from lppf import cells, conditional
from lppf import noise_conditional as nc


def row_and_walks(mechanism, params, seed):
    """cells.row over one row mixing every way a cell can take, and each cell's walk."""
    rng = np.random.default_rng(seed)
    C = 400
    Y = rng.integers(-8, 12, size=(1, C))
    mu = rng.gamma(0.7, 1.5, size=C)
    Y[0, :6], mu[:6] = [60, 45, 0, 3, 200, 31], [50.0, 1e-3, 30.0, 1e-14, 150.0, 4.0]
    code = rng.integers(0, len(params), size=(1, C))
    code[0, 6:9] = -1  # noiseless
    param_C = np.asarray(params)[code]
    param_C[code < 0] = 0.0
    T = nc.tables(mechanism, param_C, Y)
    mask = np.zeros((1, C), bool)
    mask[0, 9:12] = True
    a = np.exp(T.par) if T.kind == nc.GEOMETRIC else np.zeros(0)
    e_C, lz_C, s_C = np.full(C, -1.0), np.full(C, -1.0), np.full(C, -1.0)
    s = T.series
    cells.row(0, Y, T.code, mask, mu, T.kind, a, T.par, T.var, T.lnorm, T.lr, T.lc, s.lo, s.coef,
              s.ratio, s.log_p, e_C, lz_C, s_C, *cells.scratch(C))
    want = []
    for c in range(C):
        p, t = T.code[0, c], Y[0, c]
        if p < 0:
            want.append(conditional.mean_log_z_noiseless(t, mu[c]))
        elif T.kind == nc.GEOMETRIC:
            want.append(conditional.mean_log_z_noisy(t, a[p], mu[c], 1.0 / a[p], T.par[p]))
        else:
            want.append(nc.mean_log_z(t, mu[c], T.kind, T.par[p], T.var[p], T.lnorm[p], T.lr,
                                      T.lc, p))
    return Y, T, mask, e_C, lz_C, s_C, np.array(want)


@pytest.mark.parametrize(("mechanism", "params"), [("geometric", [0.5, 0.9]),
                                                   ("discrete-gaussian", [2.5, 6.0]),
                                                   ("skellam", [3.0, 0.4])])
def test_row_gives_each_cells_walk(mechanism, params):
    Y, T, mask, e_C, lz_C, s_C, want = row_and_walks(mechanism, params, 3)
    used = ~mask[0]
    assert (e_C[~used] == -1).all() and (lz_C[~used] == -1).all()  # masked: untouched
    np.testing.assert_allclose(e_C[used], want[used, 0], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(lz_C[used] + np.log(s_C[used]), want[used, 1], rtol=1e-13,
                               atol=1e-12)
    closed = (T.code[0] < 0) | ((T.kind == nc.GEOMETRIC) & (Y[0] <= 0))
    assert (s_C[used & closed] == 1.0).all()
    series_cells = used & ~closed & (s_C != 1.0)
    walked = used & ~closed & (s_C == 1.0)
    assert series_cells.sum() > 200 and 1 <= walked.sum() < 10  # every way taken


def test_row_is_exact_where_the_series_stops_at_its_tail_bound():
    """Rates across the bound of the series' tail for one count: the covered cells and the
    walked ones meet without a jump (E[y] and ln Z smooth across the switch)."""
    mu = np.linspace(3.0, 8.0, 400)
    Y = np.full((1, 400), 12)
    T = nc.tables("geometric", np.array([[0.95]]), Y)
    e_C, lz_C, s_C = np.empty(400), np.empty(400), np.empty(400)
    s = T.series
    cells.row(0, Y, T.code, np.zeros((1, 400), bool), mu, T.kind, np.exp(T.par), T.par, T.var,
              T.lnorm, T.lr, T.lc, s.lo, s.coef, s.ratio, s.log_p, e_C, lz_C, s_C,
              *cells.scratch(400))
    walked = s_C == 1.0
    assert walked.any() and not walked.all()
    for c in range(400):
        e, lz = conditional.mean_log_z_noisy(12, 0.95, mu[c], 1 / 0.95, math.log(0.95))
        assert e_C[c] == pytest.approx(e, rel=1e-12)
        assert lz_C[c] + math.log(s_C[c]) == pytest.approx(lz, rel=1e-13)
