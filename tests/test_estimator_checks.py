"""scikit-learn's estimator contract (issue 2, acceptance 1).

The estimators are checked with their default parameters. The only checks
scikit-learn skips are its array-API checks, which it runs only when the
environment variable SCIPY_ARRAY_API is set; treeboost converts every input
to a NumPy float64 array, so those checks do not apply.
"""

from sklearn.utils.estimator_checks import parametrize_with_checks

from treeboost import TreeBoostClassifier, TreeBoostRegressor


@parametrize_with_checks([TreeBoostRegressor(), TreeBoostClassifier()])
def test_sklearn_compatible(estimator, check):
    check(estimator)
