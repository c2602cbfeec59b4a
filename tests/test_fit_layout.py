"""The fit file's layout (lppf.results): a result survives its arrays, every key is named once."""

import numpy as np

from lppf.results import FitResult, part, part_key, samples_key


def full_result(rng):
    return FitResult(
        mu_hat=rng.random((4, 3)), factors={"theta": rng.random((4, 2)), "phi": rng.random((2, 3))},
        n_iter=7, elapsed={"burnin": 0.5, "sampling": 1.5}, y_hat=rng.random((4, 3)),
        samples={"theta": rng.random((5, 4, 2)), "phi": rng.random((5, 2, 3))},
        log_joint=rng.random(5), trace={"loglik": rng.random(7)},
        variational={"theta_shape": rng.random((4, 2))},
        extra={"n_chains": np.int64(2), "start_loglik": rng.random(3)},
        diagnostics={"rhat_loglik": np.float64(1.01), "cells": np.zeros((2, 2), int)})


def test_a_result_survives_its_arrays():
    result = full_result(np.random.default_rng(0))
    arrays = result.to_arrays(seconds=2.5)
    back = FitResult.from_arrays(arrays, "pmf", arrays.__getitem__)
    for name in ("mu_hat", "y_hat", "log_joint"):
        np.testing.assert_array_equal(getattr(back, name), getattr(result, name))
    assert back.n_iter == 7 and back.elapsed == result.elapsed
    for name in ("factors", "samples", "trace", "variational", "extra", "diagnostics"):
        got, want = getattr(back, name), getattr(result, name)
        assert got.keys() == want.keys(), name
        for key in want:
            np.testing.assert_array_equal(got[key], want[key])
    assert arrays["elapsed_seconds"] == 2.5 and "elapsed_seconds" not in {
        part_key("elapsed", k) for k in back.elapsed}


def test_keys_are_the_documented_ones():
    arrays = full_result(np.random.default_rng(1)).to_arrays()
    assert {"theta_samples", "phi_samples", "trace_loglik", "q_theta_shape", "elapsed_burnin",
            "extra_n_chains", "diag_rhat_loglik", "diag_cells", "iterations"} <= arrays.keys()
    assert samples_key("phi") == "phi_samples"
    assert part(arrays, "diagnostics").keys() == {"rhat_loglik", "cells"}
