"""Native categorical splits vs LightGBM's native categoricals (issue 3, acceptance 5).

On the categorical classification datasets of ../shared/datasets large enough
that 0.5 % of test accuracy is more than a few rows (>= 1,700 rows; on smaller
ones one split's noise is several percent), treeboost's test accuracy must not
be more than 0.5 % below LightGBM's with the same categorical settings. Both
read the same pandas frame (category columns) and the same folds of a stratified
5-fold cross-validation, and the mean over the folds is compared: one 80/20 split
moves either library by more than the tolerance (credit_data, 891 test rows: from
-1.5 % to +3.1 % of treeboost over LightGBM across five split seeds).
"""

from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import accuracy_score
from sklearn.model_selection import StratifiedKFold

from treeboost import TreeBoostClassifier
from treeboost.datasets import load

lgb = pytest.importorskip("lightgbm")
DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets"

CASES = [("car.arff", None), ("chicago_taxi_tip.csv", "tip"), ("credit_data.csv", "Status"),
         ("hpc_data.csv", "class"), ("hypothyroid.arff", None), ("kr-vs-kp.arff", None),
         ("mpls_stops.csv.gz", "problem"), ("mushroom.arff", None), ("nursery.arff.gz", None),
         ("sick.arff", None), ("splice.arff", None)]


@pytest.mark.parametrize(("file", "target"), CASES, ids=[c[0].split(".")[0] for c in CASES])
def test_native_categoricals_match_lightgbm(file, target):
    if not (DATA / file).exists():
        pytest.skip(f"{DATA / file} not available")
    X, y = load(DATA / file, target=target)
    y = np.asarray(y.astype(str))
    acc_ours, acc_theirs = [], []
    for train, test in StratifiedKFold(5, shuffle=True, random_state=0).split(X, y):
        ours = TreeBoostClassifier(n_estimators=100, min_samples_leaf=5, max_cat_to_onehot=4,
                                   random_state=0, n_jobs=1).fit(X.iloc[train], y[train])
        # LightGBM's categorical settings set to ours; min_data_in_bin=1 and
        # min_data_per_group=1 because treeboost has no such thresholds
        theirs = lgb.LGBMClassifier(
            n_estimators=100, learning_rate=0.1, num_leaves=31, min_child_samples=5,
            min_child_weight=1e-3, reg_lambda=0.0, min_data_in_bin=1, min_data_per_group=1,
            cat_smooth=10.0, cat_l2=10.0, max_cat_to_onehot=4, max_cat_threshold=32,
            random_state=0, n_jobs=1, verbose=-1).fit(X.iloc[train], y[train])
        acc_ours.append(accuracy_score(y[test], ours.predict(X.iloc[test])))
        acc_theirs.append(accuracy_score(y[test], theirs.predict(X.iloc[test])))
    acc_ours, acc_theirs = np.mean(acc_ours), np.mean(acc_theirs)
    assert acc_ours >= acc_theirs * (1 - 0.005), (acc_ours, acc_theirs)
