"""Compile budget (DESIGN §1.3): every kernel compiles at most 2 signatures.

(At most 2 for each combination of the optional concerns a kernel takes as a record or
None, see ``OPTIONAL_RECORDS``, and of unit hessians, a ``hessian`` of None: those
specialisations compile only for their users.)

The test drives every kernel through the public estimators in a fresh Python
process, so it measures what the package compiles, whatever other tests (kernel
unit tests call kernels directly) ran before it in the suite's process; its slow
variant does so with an empty kernel cache, to see the kernels called from
other kernels too.

Binned data is feature-major (n_features, n_samples) in C order, so its Numba
type does not depend on the shape; raw X may be float64 or float32, so the
kernels reading raw X (map_to_bins, predict_raw) get exactly one signature per
dtype and every other kernel exactly one.
"""

import importlib
import inspect
import json
import os
import pkgutil
import subprocess
import sys

import numba
import numpy as np
import pytest
from numba.core.registry import CPUDispatcher

import treeboost._kernels
from treeboost import TreeBoostClassifier, TreeBoostRegressor
from treeboost.losses import REGRESSION_LOSSES


def all_kernels():
    """{module.name: dispatcher} of every kernel in treeboost._kernels.

    Helpers jitted with inline="always" are left out: they are compiled into
    their callers and never get signatures of their own.
    """
    found = {}
    for info in pkgutil.iter_modules(treeboost._kernels.__path__):
        module = importlib.import_module(f"treeboost._kernels.{info.name}")
        for name, obj in vars(module).items():
            if (isinstance(obj, CPUDispatcher) and obj.py_func.__module__ == module.__name__
                    and obj.targetoptions.get("inline", "never") == "never"):
                found[f"{info.name}.{name}"] = obj
    return found


def fit_predict(estimator, X, y, **fit_params):
    estimator.fit(X, y, **fit_params)
    estimator.predict(X)
    estimator.predict(X[:1])  # one row: (1, n_features) is both C- and F-contiguous
    list(estimator.staged_predict(X[:5]))


def exercise_estimators():
    rng = np.random.default_rng(0)
    n = 160
    X = rng.normal(size=(n, 3))
    X_nan = X.copy()
    X_nan[rng.random(X.shape) < 0.15] = np.nan
    targets = {
        "regressor": (TreeBoostRegressor, X[:, 0] + 0.1 * rng.normal(size=n)),
        "binary": (TreeBoostClassifier, (X[:, 0] > 0).astype(int)),
        "multiclass": (TreeBoostClassifier, np.digitize(X[:, 1], [-0.5, 0.5])),
    }
    common = {"n_estimators": 3, "min_samples_leaf": 5, "random_state": 0}
    for cls, y in targets.values():
        # float32 input is binned and predicted without a copy to float64
        for data in (X, X_nan, X.astype(np.float32), X_nan.astype(np.float32)):
            for subsample in (1.0, 0.6):
                fit_predict(cls(subsample=subsample, **common), data, y,
                            eval_set=[(data[:40], y[:40])])
        # early stopping on a held-out fraction, column sampling, one thread
        fit_predict(cls(n_iter_no_change=2, colsample_bytree=0.7, colsample_bynode=0.5,
                        n_jobs=1, **common), X_nan, y)
        # integer values of float parameters are legal and common in grids
        fit_predict(cls(reg_lambda=1, **common), X, y)
        fit_predict(cls(reg_alpha=1, min_child_weight=1, **common), X, y)
        # a single feature (an (n, 1) raw X is both C- and F-contiguous), a one-row
        # eval set, in both dtypes
        for data in (X_nan[:, :1], X_nan[:, :1].astype(np.float32)):
            fit_predict(cls(**common), data, y, eval_set=[(data[:1], y[:1])])
    # categorical features: one-vs-rest (3 categories) and sorted (12) scans; NaN, and
    # unseen categories at predict time
    X_cat = np.column_stack([rng.integers(0, 3, n), rng.integers(0, 12, n), X[:, 0]])
    X_cat[rng.random(n) < 0.1, 1] = np.nan
    y_cat = np.isin(X_cat[:, 1], [2, 5, 7]) + X_cat[:, 0] + X[:, 0]
    X_unseen = X_cat.copy()
    X_unseen[:5, :2] = 99.0
    for cls, y in ((TreeBoostRegressor, y_cat), (TreeBoostClassifier, (y_cat > 1).astype(int)),
                   (TreeBoostClassifier, np.digitize(y_cat, [0.5, 1.5]))):
        for data in (X_cat, X_cat.astype(np.float32)):
            model = cls(categorical_features=[0, 1], **common)
            fit_predict(model, data, y, eval_set=[(data[:40], y[:40])])
            model.predict(X_unseen)
    # large enough for the parallel histogram and partition kernels of the grower, with
    # a categorical feature among them
    X_big = np.random.default_rng(1).normal(size=(40_000, 6))
    X_big[:, 5] = np.floor(10 * np.abs(X_big[:, 5]))
    fit_predict(TreeBoostRegressor(n_estimators=2, max_leaf_nodes=4, subsample=0.9,
                                   categorical_features=[5], random_state=0), X_big,
                X_big[:, 0] + (X_big[:, 5] % 3 == 1))
    # the same with per-node column sampling
    fit_predict(TreeBoostRegressor(n_estimators=2, max_leaf_nodes=4, subsample=0.9,
                                   colsample_bynode=0.9, random_state=0), X_big, X_big[:, 0])
    # one tree for several outputs (multi_strategy="multi_output_tree", the MultiOutput
    # record: a specialisation of its own), lean and large enough for the parallel kernels
    fit_predict(TreeBoostRegressor(multi_strategy="multi_output_tree", **common), X_nan,
                np.column_stack([X[:, 0], X[:, 1]]))
    fit_predict(TreeBoostRegressor(multi_strategy="multi_output_tree", n_estimators=2,
                                   max_leaf_nodes=4, subsample=0.9, random_state=0), X_big,
                X_big[:, :2])
    # enough rows for the unit-hessian check on every thread (all_ones_parallel)
    X_tall = np.random.default_rng(2).normal(size=(140_000, 2))
    fit_predict(TreeBoostRegressor(n_estimators=1, max_leaf_nodes=3, random_state=0), X_tall,
                X_tall[:, 0])
    # and for a quantised tree's leaf sums refitted on every thread (leaf_sums)
    fit_predict(TreeBoostClassifier(n_estimators=1, max_leaf_nodes=3, use_quantized_grad=True,
                                    random_state=0), X_tall, (X_tall[:, 0] > 0).astype(int))
    # softmax with enough scores (rows x classes) for its parallel row maxima
    fit_predict(TreeBoostClassifier(n_estimators=2, max_leaf_nodes=4, random_state=0), X_big,
                np.digitize(X_big[:, 0], [-0.5, 0.5]))
    # a multiclass fit large enough (rows x features x classes x stages) for its stages'
    # trees to grow side by side in one parallel region (grow_newton_trees)
    X_wide = np.random.default_rng(3).normal(size=(40_000, 12))
    fit_predict(TreeBoostClassifier(n_estimators=60, max_leaf_nodes=4, random_state=0), X_wide,
                np.digitize(X_wide[:, 0], [-1.0, -0.3, 0.3, 1.0]))
    y_pos = np.exp(X[:, 0])
    for loss in REGRESSION_LOSSES:
        fit_predict(TreeBoostRegressor(loss=loss, **common), X_nan, y_pos)
    fit_predict(TreeBoostRegressor(loss="tweedie", power=3, **common), X, y_pos)
    fit_predict(TreeBoostClassifier(loss="exponential", **common), X_nan, targets["binary"][1])
    # boosting modes (their bookkeeping is NumPy, but they drive the kernels with GOSS
    # row samples, DART's dropped-tree traversals and rf's averaged trees), continued
    # training (raw scores rebuilt by traversal) and trace=True (leaves of out-of-sample rows)
    for cls, y in targets.values():
        for mode, extra in (("rf", {"subsample": 0.7}), ("dart", {"skip_drop": 0.0}),
                            ("goss", {"learning_rate": 0.5})):
            fit_predict(cls(boosting=mode, **extra, **common), X_nan, y,
                        eval_set=[(X_nan[:40], y[:40])])
        first = cls(subsample=0.7, trace=True, **common).fit(X_nan, y)
        fit_predict(cls(**common), X_nan, y, init_model=first)
    # monotone and interaction constraints (a specialisation of their own, like general):
    # both methods, row sampling, categorical features and an exact line search
    for cls, y in targets.values():
        fit_predict(cls(monotone_constraints=[1, 0, -1], interaction_constraints=[[0, 1], [1, 2]],
                        **common), X_nan, y)
        fit_predict(cls(monotone_constraints=[1, 0, 0], subsample=0.6,
                        monotone_constraints_method="intermediate", **common), X_nan, y)
    fit_predict(TreeBoostRegressor(loss="absolute_error", monotone_constraints=[0, 0, 1],
                                   categorical_features=[0, 1], **common), X_cat, y_cat)
    # quantised gradients (a specialisation of their own): Newton leaves (fused), a line
    # search (the Python leaf path), softmax, row sampling, large enough for the parallel
    # histogram kernels, and rounding to nearest
    for cls, y in targets.values():
        fit_predict(cls(use_quantized_grad=True, subsample=0.7, **common), X_nan, y)
    fit_predict(TreeBoostRegressor(loss="absolute_error", use_quantized_grad=True, **common),
                X_nan, targets["regressor"][1])
    fit_predict(TreeBoostRegressor(n_estimators=2, max_leaf_nodes=4, use_quantized_grad=True,
                                   stochastic_rounding=False, random_state=0), X_big,
                X_big[:, 0])
    # ranking through train(): every ranking loss over query groups (one kernel each,
    # float64 arrays whatever X's dtype), with NaN and float32 input
    from treeboost import Dataset, train
    from treeboost.losses import RANKING_LOSSES

    relevance = np.digitize(X[:, 0], [-0.5, 0.5, 1.0]).astype(float)
    for loss in RANKING_LOSSES:
        for data in (X_nan, X_nan.astype(np.float32)):
            ranker = train({"loss": loss, **common},
                           Dataset(data, relevance, group=np.full(16, 10)))
            ranker.predict_raw(data)
    # TreeSHAP (rows are made float64 first, so float32 input shares the signature)
    model = TreeBoostClassifier(categorical_features=[0, 1], **common)
    model.fit(X_cat, np.digitize(y_cat, [0.5, 1.5]))
    model.predict(X_cat, pred_contribs=True)
    model.predict(X_cat.astype(np.float32), pred_contribs=True)
    # leaf indices (pred_leaf) walk predict's kernels, node ids as leaf values: no
    # signature of their own
    model.apply(X_cat)
    model.apply(X_cat.astype(np.float32))
    model.predict(X_cat, pred_interactions=True)  # SHAP interaction values (float64 too)
    model.predict(X_cat.astype(np.float32), pred_interactions=True)
    # SciPy sparse input: CSR and CSC (int32 and int64 indices), float64 and float32,
    # with a subsample (out-of-bag rows) and a sparse eval set; predictions on CSR
    import scipy.sparse as sparse

    X_sp = sparse.random(300, 4, density=0.3, format="csr", random_state=2)
    y_sp = X_sp.toarray()[:, 0]
    for data in (X_sp, X_sp.tocsc(), X_sp.astype(np.float32)):
        fit_predict(TreeBoostRegressor(subsample=0.8, **common), data, y_sp,
                    eval_set=[(data[:50], y_sp[:50])])
    X_long = X_sp.copy()
    X_long.indices = X_long.indices.astype(np.int64)
    X_long.indptr = X_long.indptr.astype(np.int64)
    TreeBoostClassifier(**common).fit(X_long, y_sp > 0.1).predict(X_long)
    # float32 straight into predict of a model fitted on float64, and the reverse
    model = TreeBoostRegressor(**common).fit(X_nan, y_pos)
    model.predict(X_nan.astype(np.float32))
    model.predict(X_nan[:1].astype(np.float32))
    model = TreeBoostRegressor(**common).fit(X_nan.astype(np.float32), y_pos)
    model.predict(X_nan)
    model.predict(X_nan[:1, :])
    # survival (Cox) and its concordance index
    from treeboost import TreeBoostSurvival

    signed = np.where(rng.random(n) < 0.7, 1.0, -1.0) * rng.exponential(size=n) + 0.0
    TreeBoostSurvival(**common).fit(X, signed).score(X, signed)
    # AFT, whose concordance index takes time bounds (interval_concordance_sums)
    TreeBoostSurvival("aft", **common).fit(X, signed).score(X, signed)
    # histograms handed to a provider (the plan's seam), float and quantised
    from treeboost import Dataset, train
    from treeboost.histogram_provider import CPUHistogramProvider

    y_bin = (X[:, 0] > 0).astype(np.float64)
    for quantized in (False, True):
        train({"loss": "log_loss", "n_estimators": 2, "random_state": 0,
               "use_quantized_grad": quantized}, Dataset(X_nan, y_bin),
              plan={"histogram_provider": CPUHistogramProvider()})


#: appended to a signature whose ``hessian`` argument is None (compiled_signatures)
UNIT_HESSIAN = " [unit hessian]"


def exercise_read_only():
    """Read-only inputs (joblib memmaps) must reuse the writeable inputs' kernels."""
    rng = np.random.default_rng(3)
    for dtype in (np.float64, np.float32):
        X = rng.normal(size=(200, 3)).astype(dtype)
        y = X[:, 0].astype(np.float64)
        X.flags.writeable = y.flags.writeable = False
        TreeBoostRegressor(n_estimators=2).fit(X, y).predict(X)
        TreeBoostClassifier(n_estimators=2).fit(X, (y > 0).astype(int)).predict_proba(X)


def compiled_signatures():
    """{kernel name: [signature, ...]} after exercising the estimators in this process.

    A signature whose ``hessian`` argument is None (unit hessians: squared error and
    the other losses whose hessian is the row weight, unweighted) is marked
    ``UNIT_HESSIAN``: like an optional record, it is a specialisation of its own,
    compiled only for those losses.
    """
    exercise_estimators()
    exercise_read_only()
    out = {}
    for name, k in all_kernels().items():
        params = list(inspect.signature(k.py_func).parameters)
        at = params.index("hessian") if "hessian" in params else None
        out[name] = [str(s) + (UNIT_HESSIAN if at is not None and str(s[at]) == "none" else "")
                     for s in k.signatures]
    return out


# public kernels called only from other kernels: loaded from the kernel cache, their
# callers do not compile them
# (the node histogram kernels and the split searches are the grower kernel's alone)
CALLED_FROM_KERNELS = {"splitting.leaf_score", "splitting.soft_threshold",
                       "splitting.find_best_splits", "histogram.build_histograms",
                       "histogram.build_histograms_serial", "sparse.build_histograms_sparse",
                       "histogram.build_histograms_root", "histogram.unit_hessians",
                       "partition.partition_rows",
                       "partition.partition_rows_serial", "splitting.clipped_value",
                       "splitting.constrained_split_gain", "splitting.score_given_value",
                       "grower.search_pair", "grower.leaf_sums",
                       "node_histogram.dense_root_histogram",
                       # one tree for several outputs: its steps inside grow_tree
                       "multi_output.build_multi_histogram",
                       "multi_output.build_multi_histogram_serial",
                       "multi_output.multi_node_histogram", "multi_output.subtract_multi",
                       "multi_output.root_sums_multi", "multi_output.find_best_splits_multi"}


#: the records of optional concerns (records.py) whose presence makes a specialisation
OPTIONAL_RECORDS = ("SparseBins(", "NodeColumns(", "Constraints(", "NodeBounds(",
                    "NodeState(", "Resume(", "QuantizedGradients(", "MultiOutput(",
                    UNIT_HESSIAN)


@pytest.mark.skipif(numba.config.DISABLE_JIT, reason="kernels are plain Python")
@pytest.mark.fresh_compile
@pytest.mark.parametrize("cache", ["as found", pytest.param("empty", marks=pytest.mark.slow)])
def test_each_kernel_compiles_at_most_two_signatures(cache, tmp_path):
    # with an empty kernel cache every kernel is compiled, the ones called from other
    # kernels included, whose signatures (a literal argument makes one of its own) a
    # cached caller hides; it costs minutes of compilation. Both variants run their own
    # process, compiling what the cache lacks (with a cold cache, every estimator kernel:
    # 140 s), so both are left out of the default run (marker fresh_compile: CI runs them
    # as a step of its own, after the suite, the first one then finding a warm cache)
    env = dict(os.environ)
    if cache == "empty":
        env["NUMBA_CACHE_DIR"] = str(tmp_path)
    out = subprocess.run([sys.executable, __file__], capture_output=True, text=True,
                         check=True, env=env)
    signatures = json.loads(out.stdout.strip().splitlines()[-1])
    # private helpers (``_name``) are called only from other kernels, and some are
    # reached by rare data only (the merge sort of more than 64 categories)
    exempt = CALLED_FROM_KERNELS if cache != "empty" else set()
    never_run = sorted(name for name, sigs in signatures.items()
                       if not sigs and not name.split(".")[1].startswith("_")
                       and name not in exempt)
    assert not never_run, f"extend exercise_estimators() to reach {never_run}"
    # an optional concern (sparse data, per-node column sampling, constraints) is a record
    # or None, and a kernel that takes one compiles its own specialisations for it, only
    # for the users of that feature: at most 2 signatures per combination of them
    def concerns(sig):
        return tuple(r in sig for r in OPTIONAL_RECORDS)

    too_many = {}
    for name, sigs in signatures.items():
        per_combination = {}
        for sig in sigs:
            per_combination.setdefault(concerns(sig), []).append(sig)
        if any(len(group) > 2 for group in per_combination.values()):
            too_many[name] = sigs
    assert not too_many, f"kernels with more than 2 signatures: {too_many}"

if __name__ == "__main__":
    print(json.dumps(compiled_signatures()))
