"""scikit-learn's estimator contract (issue 2, acceptance 1; the ranker: issue 14).

The estimators are checked with their default parameters. The only checks
scikit-learn skips are its array-API checks, which it runs only when the
environment variable SCIPY_ARRAY_API is set; treeboost converts every input
to a NumPy float64 array, so those checks do not apply.

The ranker needs query groups, which scikit-learn's checks never pass (its
``fit(X, y)`` has no place for them, and ``TreeBoostRanker.fit`` refuses to guess
them, as LightGBM's and XGBoost's rankers do). It is checked through
``_OneQueryRanker``, which only adds the one assumption the checks need: data
without groups is a single query. scikit-learn knows no ranker type, so it runs
its generic checks (40, none skipped but the array-API one): cloning, parameters,
fit/predict on arrays, lists, sparse matrices and frames, NaN, shapes, pickling,
determinism, sample weights of ones, n_features_in_, no mutation of the input.
"""

from sklearn.utils.estimator_checks import parametrize_with_checks
from sklearn.utils.validation import _num_samples

from treeboost import TreeBoostClassifier, TreeBoostRanker, TreeBoostRegressor


class _OneQueryRanker(TreeBoostRanker):
    """TreeBoostRanker whose data is one query when no groups are given."""

    def fit(self, X, y, **kwargs):
        if kwargs.get("group") is None and kwargs.get("qid") is None:
            kwargs["group"] = [_num_samples(X)]
        return super().fit(X, y, **kwargs)

    def score(self, X, y, **kwargs):
        if kwargs.get("group") is None and kwargs.get("qid") is None:
            kwargs["group"] = [_num_samples(X)]
        return super().score(X, y, **kwargs)


@parametrize_with_checks([TreeBoostRegressor(), TreeBoostClassifier(), _OneQueryRanker()])
def test_sklearn_compatible(estimator, check):
    check(estimator)
