"""The one boundary check of a fit (lppf.validation): the backends trust what it returns."""

import numpy as np
import pytest

from lppf.validation import InputError, check_params, fit_data

SCHEDULE = {"method": "private", "inference": "mcmc", "n_components": 2, "a0": 1.0, "b0": 1.0,
            "max_iter": 10, "burnin": 1, "thin": 1, "tol": 0.0, "restarts": 1}


@pytest.mark.parametrize(("change", "message"), [
    ({"Y": np.zeros((3, 4), int)}, "square"),
    ({"mask": np.zeros((3, 3), bool)}, "mask"),
    ({"alpha": np.full((1, 1), 1.0)}, "alpha"),
    ({"alpha": np.zeros((2, 1))}, "alpha"),
    ({"fix": {"pi": np.eye(3)}}, r"fix\['pi'\]"),
    ({"fix": {"phi": np.eye(2)}}, "theta, pi"),
])
def test_community_bad_input_names_the_culprit(change, message):
    args = {"Y": np.zeros((4, 4), int), "mask": np.eye(4, dtype=bool), "alpha": np.zeros((1, 1)),
            "fix": {}, **change}
    with pytest.raises(InputError, match=message):
        fit_data("community", "private", args["Y"], args["alpha"], args["mask"], args["fix"],
                 n_components=2)


def test_schedule_keeps_one_sample():
    with pytest.raises(InputError, match="burnin") as info:
        check_params(**{**SCHEDULE, "burnin": 10})
    assert info.value.param == "burnin"


@pytest.mark.parametrize("change, message", [
    ({"alpha": np.full((1, 1), 1.0)}, "alpha must lie"),
    ({"alpha": np.ones((3, 2)) * 0.5}, "does not fit"),
    ({"mask": np.zeros((2, 2), bool)}, "mask: shape"),
    ({"fix": {"pi": np.ones((2, 2))}}, "unknown factor 'pi'"),
    ({"fix": {"phi": np.ones((3, 5))}}, "expected (2, 5)"),
    ({"fix": {"phi": -np.ones((2, 5))}}, "finite and > 0"),
])
def test_pmf_bad_input_raises_one_line_errors(change, message):
    base = {"Y": np.ones((4, 5), np.int64), "alpha": np.full((1, 1), 0.5),
            "mask": np.zeros((4, 5), bool), "fix": {}}
    args = {**base, **change}
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        fit_data("pmf", "private", args["Y"], args["alpha"], args["mask"], args["fix"],
                 n_components=2)


def test_noiseless_cells_need_nonnegative_counts():
    with pytest.raises(InputError, match="no noise"):
        fit_data("pmf", "private-collapsed", -np.ones((3, 3), np.int64), np.zeros((1, 1)),
                 n_components=2)


ALPHA_SHAPES = [(), (1,), (4,), (1, 1), (4, 1), (1, 5), (4, 5), (3,), (5,), (4, 5, 1), (2, 5),
                (1, 1, 1)]


@pytest.mark.parametrize("shape", ALPHA_SHAPES, ids=str)
def test_fit_accepts_the_noise_levels_the_mechanism_accepts(shape):
    """privatize and fit agree on every shape of alpha; a fit reads alpha as its broadcast."""
    from lppf.mechanisms import privatize

    Y = np.arange(20).reshape(4, 5) % 3
    alpha = np.full(shape, 0.4) + (np.arange(np.prod(shape)).reshape(shape) % 2) / 10
    try:
        privatize(Y, alpha, rng=0)
    except InputError:
        with pytest.raises(InputError, match="alpha"):
            fit_data("pmf", "private", Y, alpha, n_components=2)
        return
    data = fit_data("pmf", "private", Y, alpha, n_components=2)
    assert data.alpha.ndim == 2 and data.alpha.shape in ((1, 1), (4, 1), (4, 5))
    column = alpha[:, None] if alpha.ndim == 1 else alpha
    np.testing.assert_array_equal(np.broadcast_to(data.alpha, Y.shape),
                                  np.broadcast_to(column, Y.shape))
