"""treeboost: fast histogram gradient tree boosting in Python and Numba."""

import gc

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
    from .survival import TreeBoostSurvival
    from .training import train
finally:
    if _collecting:
        gc.enable()
del _collecting

__all__ = ["AdaBoostClassifier", "Dataset", "Formula", "GradientBoostingWithLearner",
           "TreeBoostClassifier", "TreeBoostRanker", "TreeBoostRegressor", "TreeBoostSurvival",
           "available_losses",
           "get_loss", "load_model", "register_loss", "train", "unregister_loss",
           "__version__"]
