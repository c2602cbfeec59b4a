# %% [markdown]
# # Topic models on privatized counts with scikit-learn
#
# A notebook-style session (cells marked `# %%`; run it as a script or open it in Jupyter
# via jupytext): privatize a small document-term matrix, fit topics, fold in new documents,
# clone, pipeline and choose the number of topics by cross-validation on the private data.

# %%
import numpy as np
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import Normalizer

from lppf import CommunityModel, PoissonMF, privatize

rng = np.random.default_rng(0)
Theta_DK = rng.gamma(1.0, 2.0, (160, 3))  # 160 documents, 3 topics
Phi_KV = rng.gamma(0.3, 1.0, (3, 60))  # 60 words
Y_DV = rng.poisson(Theta_DK @ Phi_KV)
alpha = 0.5  # noise level of the two-sided geometric mechanism
Y_noisy = privatize(Y_DV, alpha, rng=1)  # a seeded simulation (a release: no rng); may be < 0
train, new = Y_noisy[:120], Y_noisy[120:]

# %% Fit: the estimator treats the true counts as latent (method="private", the default)
model = PoissonMF(n_components=3, inference="cavi", max_iter=200, random_state=0, alpha=alpha)
model.fit(train)
print(model)
print("components_ (topics x words):", model.components_.shape, "iterations:", model.n_iter_)

# %% Transform: topic weights of new private documents, topics held fixed
Theta_new = model.transform(new)
print("theta of new documents:", Theta_new.shape)
print("held-out log likelihood per cell:", round(model.score(new), 3))

# %% Clone: same settings, unfitted; change a parameter with set_params
mcmc = clone(model).set_params(inference="mcmc", max_iter=300, burnin=200, thin=10)
print(mcmc.fit(train).score(new))

# %% Pipeline: topic proportions (rows summing to one) of new documents
pipe = make_pipeline(clone(model), Normalizer(norm="l1")).fit(train)
print(pipe.transform(new)[:3].round(2))

# %% Grid search: choose K by cross-validated held-out likelihood of the private counts
search = GridSearchCV(clone(model), {"n_components": [1, 3, 6]}, cv=3).fit(Y_noisy)
print("mean test score per K:", search.cv_results_["mean_test_score"].round(3))
print("chosen:", search.best_params_)

# %% Networks: the community model folds in new actors (their counts to the fitted actors)
Theta_VC = rng.gamma(0.5, 1.0, (50, 3))
Pi_CC = np.diag(rng.gamma(5.0, 1.0, 3)) + 0.05
Y_VV = rng.poisson(Theta_VC @ Pi_CC @ Theta_VC.T)
np.fill_diagonal(Y_VV, 0)
Y_VV_noisy = privatize(Y_VV, 0.3, rng=2)
network = CommunityModel(3, inference="cavi", max_iter=200, random_state=0, alpha=0.3)
network.fit(Y_VV_noisy[:40, :40])
print("new actors' memberships:", network.transform(Y_VV_noisy[40:, :40]).shape)
