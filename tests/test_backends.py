"""The table of backends (lppf.backends) and the settings that call them (lppf.fitting)."""

import inspect

import numpy as np
import pytest

from lppf.backends import BACKENDS, backend
from lppf.cavi import fit_cavi
from lppf.fitting import DEFAULTS, Settings
from lppf.mcmc import fit_mcmc
from lppf.validation import INFERENCES, MODELS, FitData


@pytest.mark.parametrize("inference", INFERENCES)
@pytest.mark.parametrize("model", MODELS)
def test_every_backend_takes_the_settings_keywords(model, inference):
    assert (model, inference) in BACKENDS
    parameters = inspect.signature(backend(model, inference)).parameters
    keywords = Settings(inference=inference).keywords(np.random.default_rng(0))
    assert set(keywords) == {n for n, p in parameters.items() if p.kind is p.KEYWORD_ONLY}


@pytest.mark.parametrize("fit", [fit_mcmc, fit_cavi])
def test_an_unknown_model_is_refused(fit):
    data = FitData(np.ones((3, 3), np.int64), np.zeros((1, 1)), np.eye(3, dtype=bool))
    with pytest.raises(ValueError, match="unknown model 'network'"):
        fit("network", data, method="nonprivate", n_components=2, a0=1.0, b0=1.0,
            rng=np.random.default_rng(0))


def test_the_defaults_are_the_settings():
    assert Settings.of(DEFAULTS) == Settings()
    assert list(DEFAULTS) == [name for name in inspect.signature(Settings).parameters]
