"""treeboost: fast histogram gradient tree boosting in Python and Numba."""

import gc
import os

# GNU OpenMP's threads spin for some 300,000 rounds after each parallel region
# before they sleep, holding a core: a stage's trees grown side by side on Python
# threads (Booster) waited on them, multiclass 100,000 x 20 fit 7.07 s against
# 6.20 s with 30,000 rounds; regression and binary unchanged (6.15/6.13 s,
# 10.6/10.6 s). libgomp reads this when Numba first starts it, so a user's own
# setting (or OMP_WAIT_POLICY) wins, as does an earlier parallel Numba call.
if "OMP_WAIT_POLICY" not in os.environ:
    os.environ.setdefault("GOMP_SPINCOUNT", "30000")

# scikit-learn entered through sklearn.base imports ~0.1 s faster (1.25 vs 1.37 s for
# `import treeboost`, measured) than through sklearn.utils.validation, which
# _estimator_io would otherwise import first
# The imports below (scikit-learn, SciPy, pandas, Numba) create some million objects, and
# the cyclic garbage collector walked them over and over as they piled up: about 0.2 s of
# a 1.35 s `import treeboost`, measured. Collection is paused meanwhile, then restored.
_collecting = gc.isenabled()
gc.disable()
try:
    import sklearn.base  # noqa: F401

    from ._estimator_io import load_model
    from ._version import __version__
    from .adaboost import AdaBoostClassifier
    from .dataset import Dataset
    from .generic import GradientBoostingWithLearner
    from .losses import Formula, available_losses, get_loss, register_loss, unregister_loss
    from .sklearn import TreeBoostClassifier, TreeBoostRanker, TreeBoostRegressor
    from .training import train
finally:
    if _collecting:
        gc.enable()
del _collecting

__all__ = ["AdaBoostClassifier", "Dataset", "Formula", "GradientBoostingWithLearner",
           "TreeBoostClassifier", "TreeBoostRanker", "TreeBoostRegressor", "available_losses",
           "get_loss", "load_model", "register_loss", "train", "unregister_loss",
           "__version__"]
