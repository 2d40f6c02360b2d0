"""treeboost: fast histogram gradient tree boosting in Python and Numba.

The public names below are imported on first use (a module ``__getattr__``, PEP 562):
``import treeboost`` loads only the version, and ``from treeboost import
TreeBoostClassifier`` loads what the estimators need, not AdaBoost, the generic booster
over any learner, survival analysis or model loading until they are asked for.
"""

import gc
import importlib

from ._version import __version__

#: each public name and the module defining it
_PUBLIC = {
    "AdaBoostClassifier": ".adaboost",
    "Dataset": ".dataset",
    "Formula": ".losses",
    "GradientBoostingWithLearner": ".generic",
    "TreeBoostClassifier": ".sklearn",
    "TreeBoostRanker": ".sklearn",
    "TreeBoostRegressor": ".sklearn",
    "TreeBoostSurvival": ".survival",
    "available_losses": ".losses",
    "get_loss": ".losses",
    "load_model": "._estimator_io",
    "register_loss": ".losses",
    "train": ".training",
    "unregister_loss": ".losses",
}

__all__ = sorted(_PUBLIC) + ["__version__"]


def __getattr__(name):
    """Import the module defining the public ``name`` on first use, and keep the name."""
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # The imports (Numba, and scikit-learn, SciPy and pandas for the modules that use
    # them) create some million objects, and the cyclic garbage collector walked them
    # over and over as they piled up: about 0.2 s of a 1.35 s `import treeboost` with
    # scikit-learn, measured. Collection is paused meanwhile.
    collecting = gc.isenabled()
    gc.disable()
    try:
        value = getattr(importlib.import_module(module, __name__), name)
    finally:
        if collecting:
            gc.enable()
    globals()[name] = value
    return value


def __dir__():
    """The module's names, the public ones not yet imported included."""
    return sorted(set(globals()) | set(__all__))
