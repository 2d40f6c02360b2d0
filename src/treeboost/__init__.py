"""treeboost: fast histogram gradient tree boosting in Python and Numba."""

from .adaboost import AdaBoostClassifier
from .generic import GradientBoostingWithLearner
from .losses import Formula, available_losses, get_loss
from .sklearn import TreeBoostClassifier, TreeBoostRegressor

__version__ = "0.1.0"


def load_model(path):
    """Load an estimator saved with ``save_model`` (see ``treeboost.serialization``).

    Parameters
    ----------
    path : str or path-like
        Model file.

    Returns
    -------
    TreeBoostRegressor or TreeBoostClassifier
    """
    from .serialization import load_model as _load

    return _load(path)


__all__ = ["AdaBoostClassifier", "Formula", "GradientBoostingWithLearner",
           "TreeBoostClassifier", "TreeBoostRegressor", "available_losses", "get_loss",
           "load_model", "__version__"]
