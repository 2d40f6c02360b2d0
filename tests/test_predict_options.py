"""Predict options (SPEC §9, issue 34): iteration_range, booster slicing, pred_leaf / apply,
pred_contribs over a range, raw_score, importance types, and the same on Dask.

Every expectation is computed independently of the code under test: stage sums by
walking the trees with the NumPy twin (``reference.leaf_of``), staged predictions,
importances by counting the trees' nodes by hand.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal

from reference import leaf_of
from treeboost import TreeBoostClassifier, TreeBoostRanker, TreeBoostRegressor
from treeboost._dtypes import X_DTYPE

COMMON = {"n_estimators": 8, "max_leaf_nodes": 6, "min_samples_leaf": 5, "random_state": 0}
#: sums of the same float64 leaf values in another order than the kernels' (the twin
#: adds each stage's trees to zeros, then F0): a few ulps of scores of order 10
SUM_TOL = 1e-12


def make_data(n=400, seed=0):
    """Continuous features with NaN, and an integer-coded categorical feature (column 0)
    with NaN; the target depends on all of them and on which side NaN falls."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.integers(0, 8, n), rng.normal(size=(n, 3))]).astype(X_DTYPE)
    X[rng.random(n) < 0.1, 0] = np.nan
    X[rng.random(n) < 0.15, 1] = np.nan
    signal = (2.0 * np.isin(X[:, 0], [1, 4, 6]) + np.nan_to_num(X[:, 1], nan=2.0) - X[:, 2]
              + 0.3 * rng.normal(size=n))
    return X, signal


def fitted(kind, boosting="gbdt"):
    """A fitted estimator of ``kind`` ("regressor", "binary", "multiclass", "ranker")."""
    X, signal = make_data()
    extra = {"boosting": boosting, **({"subsample": 0.7} if boosting == "rf" else {}),
             **({"skip_drop": 0.0} if boosting == "dart" else {})}
    if kind == "regressor":
        model = TreeBoostRegressor(categorical_features=[0], **extra, **COMMON)
        return model.fit(X, signal), X
    if kind == "ranker":
        labels = np.digitize(signal, [0.0, 1.0, 2.0])
        model = TreeBoostRanker(categorical_features=[0], **extra, **COMMON)
        return model.fit(X, labels, group=np.full(20, 20)), X
    y = signal > 0.5 if kind == "binary" else np.digitize(signal, [-0.5, 0.5, 1.5])
    return TreeBoostClassifier(categorical_features=[0], **extra, **COMMON).fit(X, y), X


def categories_of(bin_mapper):
    """The training categories of every feature, as ``reference.leaf_of`` reads them."""
    return [bin_mapper.bin_edges_[f, :bin_mapper.n_edges_[f]]
            for f in range(bin_mapper.n_edges_.size)]


def twin_leaves(booster, X, start, stop):
    """Leaf of every row in every tree of stages [start, stop), by the NumPy twin walk."""
    cats = categories_of(booster.bin_mapper)
    return np.column_stack([leaf_of(tree, X, categories=cats)
                            for stage in booster.trees[start:stop] for tree in stage])


def twin_stage_sum(booster, X, start, stop):
    """Sum over stages [start, stop) of each tree's leaf value, per output (no F0)."""
    cats = categories_of(booster.bin_mapper)
    out = np.zeros((X.shape[0], booster.n_outputs))
    for stage in booster.trees[start:stop]:
        for k, tree in enumerate(stage):
            out[:, k] += tree.value[leaf_of(tree, X, categories=cats)]
    return out


def with_unseen(X):
    """X with categories never seen in training (they go with the missing values)."""
    X = X.copy()
    X[:7, 0] = [99.0, -3.0, 8.0, 2.5, 1e9, 99.0, 7.5]
    return X


# ---- iteration_range ---------------------------------------------------------------
@pytest.mark.parametrize("kind", ["regressor", "binary", "multiclass", "ranker"])
@pytest.mark.parametrize("boosting", ["gbdt", "dart"])
def test_iteration_range_is_the_sum_of_its_stages(kind, boosting):
    model, X = fitted(kind, boosting)
    booster, X = model.booster_, with_unseen(X)
    n = len(booster.trees)
    for start, stop in [(0, n), (0, 1), (0, 3), (2, 5), (3, n), (n - 1, n), (1, 2)]:
        expected = twin_stage_sum(booster, X, start, stop)
        if start == 0:  # F0 only when the range starts at the first stage (SPEC §9)
            expected += booster.init_score
        got = booster.predict_raw(X, iteration_range=(start, stop))
        assert_allclose(got, expected, rtol=SUM_TOL, atol=SUM_TOL)
    # stop = 0 is "to the last stage", XGBoost's convention: (0, 0) is the whole model
    assert_array_equal(booster.predict_raw(X, iteration_range=(0, 0)), booster.predict_raw(X))
    assert_array_equal(booster.predict_raw(X, iteration_range=(3, 0)),
                       booster.predict_raw(X, iteration_range=(3, n)))
    # n_stages=k is iteration_range=(0, k), bit for bit
    assert_array_equal(booster.predict_raw(X, n_stages=3),
                       booster.predict_raw(X, iteration_range=(0, 3)))


def test_iteration_ranges_add_up_and_match_staged_differences():
    model, X = fitted("multiclass")
    booster = model.booster_
    staged = [booster.init_score + np.zeros((X.shape[0], booster.n_outputs))]
    staged += list(booster.staged_predict_raw(X))
    n = len(booster.trees)
    for a in range(1, n):
        head = booster.predict_raw(X, iteration_range=(0, a))
        tail = booster.predict_raw(X, iteration_range=(a, n))
        # F0 is counted once: the ranges split the model (XGBoost counts its base score
        # in every range; SPEC §9 asks for F0 only in the first)
        assert_allclose(head + tail, staged[n], rtol=SUM_TOL, atol=SUM_TOL)
        assert_allclose(tail, staged[n] - staged[a], rtol=SUM_TOL, atol=SUM_TOL)
        assert_array_equal(head, staged[a])


def test_forest_range_is_the_mean_of_its_trees():
    model, X = fitted("regressor", "rf")
    booster = model.booster_
    n = len(booster.trees)
    # a forest stores its trees divided by n: the mean of stages [a, b) is their sum
    # times n / (b - a), plus F0 when a = 0 (as predict_raw(n_stages=b) is for a = 0)
    for start, stop in [(0, 3), (2, 6), (5, n)]:
        mean = twin_stage_sum(booster, X, start, stop) * n / (stop - start)
        expected = mean + (booster.init_score if start == 0 else 0.0)
        assert_allclose(booster.predict_raw(X, iteration_range=(start, stop)), expected,
                        rtol=SUM_TOL, atol=SUM_TOL)
        assert_allclose(booster[start:stop].predict_raw(X), expected, rtol=SUM_TOL,
                        atol=SUM_TOL)


def test_estimators_predict_over_a_range():
    model, X = fitted("binary")
    booster = model.booster_
    raw = booster.predict_raw(X, iteration_range=(2, 6))[:, 0]
    assert_array_equal(model.decision_function(X, iteration_range=(2, 6)), raw)
    assert_array_equal(model.predict(X, raw_score=True, iteration_range=(2, 6)), raw)
    p = 1.0 / (1.0 + np.exp(-raw))
    assert_allclose(model.predict_proba(X, iteration_range=(2, 6)), np.column_stack([1 - p, p]),
                    rtol=1e-15, atol=1e-15)  # the logistic evaluated another way: an ulp
    assert_array_equal(model.predict(X, iteration_range=(2, 6)), model.classes_[(raw > 0) * 1])
    reg, Xr = fitted("regressor")
    assert_array_equal(reg.predict(Xr, iteration_range=(1, 4)),
                       reg.booster_.predict_raw(Xr, iteration_range=(1, 4))[:, 0])


def test_default_range_is_the_stages_kept_by_early_stopping():
    X, signal = make_data(600)
    model = TreeBoostRegressor(n_estimators=200, learning_rate=0.5, n_iter_no_change=3,
                               validation_fraction=0.2, random_state=0).fit(X, signal)
    # early stopping keeps the stages up to the best one: None (and XGBoost's (0, 0))
    # predict with those, as the estimators always did
    assert model.best_iteration_ is not None
    assert model.n_iter_ == model.best_iteration_ + 1
    assert model.n_iter_ < 200
    expected = model.predict(X)
    assert_array_equal(model.predict(X, iteration_range=(0, model.n_iter_)), expected)
    assert_array_equal(model.predict(X, iteration_range=(0, 0)), expected)
    with pytest.raises(ValueError, match=r"iteration_range=\(0, 200\)"):
        model.predict(X, iteration_range=(0, 200))


@pytest.mark.parametrize(("value", "error", "match"), [
    ((2, 2), ValueError, "holds no stage"),
    ((5, 3), ValueError, "holds no stage"),
    ((-1, 3), ValueError, r"iteration_range=\(-1, 3\).*\[0, 8\]"),
    ((0, 9), ValueError, r"iteration_range=\(0, 9\).*the model has 8 stages"),
    ((8, 0), ValueError, "holds no stage"),
    ((0.0, 3), TypeError, "pair of ints"),
    ((True, 3), TypeError, "pair of ints"),
    ((1, 2, 3), TypeError, "pair of ints"),
    (3, TypeError, "iteration_range=3 must be a pair"),
])
def test_bad_iteration_range_is_refused_by_name(value, error, match):
    model, X = fitted("regressor")
    for call in (lambda: model.booster_.predict_raw(X, iteration_range=value),
                 lambda: model.booster_.predict_leaf(X, iteration_range=value),
                 lambda: model.predict(X, iteration_range=value),
                 lambda: model.apply(X, iteration_range=value),
                 lambda: model.predict(X, pred_contribs=True, iteration_range=value)):
        with pytest.raises(error, match=match):
            call()


def test_n_stages_and_iteration_range_together_are_refused():
    model, X = fitted("regressor")
    with pytest.raises(ValueError, match="n_stages=3 and iteration_range=.*give one"):
        model.booster_.predict_raw(X, n_stages=3, iteration_range=(0, 3))


def test_two_outputs_at_once_are_refused():
    model, X = fitted("regressor")
    with pytest.raises(ValueError, match="pred_leaf=True and raw_score=True"):
        model.predict(X, pred_leaf=True, raw_score=True)
    with pytest.raises(ValueError, match="pred_contribs=True and pred_leaf=True"):
        model.predict(X, pred_contribs=True, pred_leaf=True)


# ---- slicing -------------------------------------------------------------------------
def _snapshot(booster):
    return ([[{k: v.copy() for k, v in vars(t).items()} for t in stage]
             for stage in booster.trees], booster.init_score.copy(),
            list(booster.stage_weights))


def _assert_unchanged(booster, snapshot):
    trees, init, weights = snapshot
    assert len(booster.trees) == len(trees)
    for stage, saved in zip(booster.trees, trees, strict=True):
        for tree, fields in zip(stage, saved, strict=True):
            for name, value in fields.items():
                assert_array_equal(getattr(tree, name), value, err_msg=name)
    assert_array_equal(booster.init_score, init)
    assert booster.stage_weights == weights


@pytest.mark.parametrize(("kind", "boosting"), [("regressor", "gbdt"), ("multiclass", "gbdt"),
                                                ("binary", "dart"), ("regressor", "rf")])
def test_slice_is_a_new_booster_predicting_its_range(kind, boosting):
    model, X = fitted(kind, boosting)
    booster = model.booster_
    before, snapshot = booster.predict_raw(X), _snapshot(booster)
    n = len(booster.trees)
    for key, (start, stop) in [(slice(2, 5), (2, 5)), (slice(None, 3), (0, 3)),
                               (slice(4, None), (4, n)), (3, (3, 4)), (np.int64(0), (0, 1)),
                               (..., (0, n)), (slice(0, n, 1), (0, n))]:
        part = booster[key]
        assert part is not booster
        assert len(part.trees) == stop - start
        if boosting == "rf":  # the slice's trees are rescaled to the mean of its stages
            assert_allclose(part.predict_raw(X), booster.predict_raw(
                X, iteration_range=(start, stop)), rtol=SUM_TOL, atol=SUM_TOL)
        else:
            assert_array_equal(part.predict_raw(X),
                               booster.predict_raw(X, iteration_range=(start, stop)))
            for stage, original in zip(part.trees, booster.trees[start:stop], strict=True):
                assert all(np.array_equal(a.value, b.value) and a is not b
                           for a, b in zip(stage, original, strict=True))
        assert_array_equal(part.init_score,
                           booster.init_score if start == 0 else np.zeros(booster.n_outputs))
        assert part.stage_weights == booster.stage_weights[start:stop]
        assert part.best_iteration is None  # removed, as XGBoost's slices
        # the slice is independent: changing its trees leaves the original as it was
        part.trees[0][0].value[:] = 123.0
        part.init_score[:] = -7.0
    _assert_unchanged(booster, snapshot)
    assert_array_equal(booster.predict_raw(X), before)


@pytest.mark.parametrize("boosting", ["gbdt", "dart"])
def test_slice_saves_as_a_model(tmp_path, boosting):
    from treeboost.serialization import load_booster, save_booster

    model, X = fitted("regressor", boosting)
    part = model.booster_[2:6]
    path = tmp_path / "part.json"
    save_booster(part, path)
    loaded = load_booster(path)
    assert_array_equal(loaded.predict_raw(X), part.predict_raw(X))
    if boosting == "dart":  # the stages' weights, state of continued DART training
        assert loaded.stage_weights == part.stage_weights == model.booster_.stage_weights[2:6]


@pytest.mark.parametrize(("key", "error", "match"), [
    (-1, IndexError, "negative"),
    (slice(-2, None), IndexError, "negative"),
    (slice(None, -1), IndexError, "negative"),
    (8, IndexError, r"booster\[8\]: stage index out of range \(the model has 8"),
    (slice(0, 9), IndexError, "out of range"),
    (slice(3, 3), ValueError, "holds no stage"),
    (slice(None, 0), ValueError, "holds no stage"),
    (slice(5, 2), ValueError, "holds no stage"),
    (slice(0, 8, 2), ValueError, "step of 2"),
    (slice(None, None, -1), ValueError, "step of -1"),
    ((0, 1), TypeError, "tuple"),
    (1.0, TypeError, "float"),
    (slice(0.0, 2), TypeError, "start must be an int"),
])
def test_bad_slice_is_refused(key, error, match):
    model, _ = fitted("regressor")
    with pytest.raises(error, match=match):
        model.booster_[key]


# ---- pred_leaf -----------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["regressor", "multiclass", "ranker"])
def test_leaf_values_reproduce_predict_raw(kind):
    model, X = fitted(kind)
    booster, X = model.booster_, with_unseen(X)
    K, n = booster.n_outputs, len(booster.trees)
    # categorical splits: predict's general kernel
    assert any(t.is_categorical.any() for stage in booster.trees for t in stage)
    leaves = booster.predict_leaf(X)
    assert leaves.dtype == np.int32
    assert leaves.shape == (X.shape[0], n * K)
    # the same leaves as the NumPy twin's walk (NaN sides, categories, unseen ones)
    assert_array_equal(leaves, twin_leaves(booster, X, 0, n))
    # stage-major columns; adding their values to F0 in model order is predict_raw's sum
    raw = np.repeat(booster.init_score[None, :], X.shape[0], axis=0)
    for m in range(n):
        for k, tree in enumerate(booster.trees[m]):
            leaf = leaves[:, m * K + k]
            assert np.all(tree.left[leaf] < 0)  # a leaf, by its node index in this tree
            raw[:, k] += tree.value[leaf]
    assert_array_equal(raw, booster.predict_raw(X))
    assert_array_equal(model.apply(X), leaves)
    assert_array_equal(model.predict(X, pred_leaf=True), leaves)
    # a range: its stages' columns; the same as the slice's leaves
    ranged = model.predict(X, pred_leaf=True, iteration_range=(2, 5))
    assert_array_equal(ranged, leaves[:, 2 * K:5 * K])
    assert_array_equal(booster[2:5].predict_leaf(X), ranged)


def test_leaves_of_a_numerical_model():
    # no categorical split: predict's split-record kernel, on float64, float32 and CSR rows
    X, signal = make_data(500, seed=3)
    X = X[:, 1:]
    model = TreeBoostClassifier(**COMMON).fit(X, np.digitize(signal, [0.0, 1.0]))
    booster = model.booster_
    K, n = booster.n_outputs, len(booster.trees)
    assert not any(t.is_categorical.any() for stage in booster.trees for t in stage)
    leaves = booster.predict_leaf(X)
    assert_array_equal(leaves, twin_leaves(booster, X, 0, n))
    raw = np.repeat(booster.init_score[None, :], X.shape[0], axis=0)
    for m in range(n):
        for k, tree in enumerate(booster.trees[m]):
            raw[:, k] += tree.value[leaves[:, m * K + k]]
    assert_array_equal(raw, booster.predict_raw(X))
    X32 = X.astype(np.float32)
    assert_array_equal(booster.predict_leaf(X32), twin_leaves(booster, X32.astype(float), 0, n))
    dense = np.nan_to_num(X)
    assert_array_equal(booster.predict_leaf(sp.csr_matrix(dense)),
                       twin_leaves(booster, dense, 0, n))


def test_leaves_of_float32_sparse_and_frame_input():
    pd = pytest.importorskip("pandas")
    model, X = fitted("binary")
    booster = model.booster_
    expected = booster.predict_leaf(X)
    assert_array_equal(booster.predict_leaf(X.astype(np.float32)),
                       booster.predict_leaf(X.astype(np.float32).astype(np.float64)))
    dense = np.nan_to_num(X)  # sparse: absent entries are zeros, as predict_raw reads them
    assert_array_equal(model.apply(sp.csr_matrix(dense)), model.apply(dense))
    assert_array_equal(model.apply(sp.csc_matrix(dense)), model.apply(dense))
    assert_array_equal(model.apply(pd.DataFrame(X)), expected)
    assert booster.predict_leaf(X[:0]).shape == (0, len(booster.trees))


# ---- pred_contribs over a range ------------------------------------------------------
@pytest.mark.parametrize("kind", ["regressor", "multiclass"])
def test_contributions_of_a_range_sum_to_its_raw_score(kind):
    model, X = fitted(kind)
    booster = model.booster_
    for start, stop in [(0, 3), (2, 6), (5, 0)]:
        contribs = model.predict(X, pred_contribs=True, iteration_range=(start, stop))
        raw = booster.predict_raw(X, iteration_range=(start, stop))
        total = contribs.sum(axis=-1)  # (n,) or (n, K)
        # TreeSHAP's sums against the traversal: float64 round-off over a few trees
        assert_allclose(total, raw[:, 0] if raw.shape[1] == 1 else raw, rtol=1e-10,
                        atol=1e-10)
        sliced = booster[start:stop or len(booster.trees)].predict_contribs(X)
        assert_array_equal(booster.predict_contribs(X, iteration_range=(start, stop)), sliced)
    # the bias is F0 plus the trees' expected values: F0 only when the range starts at
    # stage 0, so the bias of [2, 6) is that of [0, 6) less that of [0, 2)
    def bias(start, stop):
        return booster.predict_contribs(X[:1], iteration_range=(start, stop))[0, :, -1]

    assert np.all(np.abs(booster.init_score) > 1e-3)  # an F0 the 1e-12 check would see
    assert_allclose(bias(2, 6), bias(0, 6) - bias(0, 2), rtol=1e-12, atol=1e-12)
    assert_array_equal(model.predict(X, pred_contribs=True, iteration_range=(0, 0)),
                       model.predict(X, pred_contribs=True))


# ---- raw_score -----------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["regressor", "binary", "multiclass", "ranker"])
def test_raw_score_is_the_boosters_raw_score(kind):
    model, X = fitted(kind)
    raw = model.booster_.predict_raw(X)
    got = model.predict(X, raw_score=True)
    assert_array_equal(got, raw[:, 0] if raw.shape[1] == 1 else raw)
    if kind in ("binary", "multiclass"):
        assert_array_equal(got, model.decision_function(X))


def test_raw_score_before_the_link():
    X, signal = make_data()
    model = TreeBoostRegressor(loss="poisson", **COMMON).fit(X, np.exp(signal / 2))
    raw = model.predict(X, raw_score=True)
    assert_array_equal(raw, model.booster_.predict_raw(X)[:, 0])
    assert_allclose(model.predict(X), np.exp(raw), rtol=1e-15)  # the log link's inverse


# ---- importance types ----------------------------------------------------------------
def hand_count(booster):
    """Per feature, the gain and the cover of each split on it, node by node."""
    gains = [[] for _ in range(booster.n_features)]
    covers = [[] for _ in range(booster.n_features)]
    for stage in booster.trees:
        for tree in stage:
            for node in range(tree.n_nodes):
                if tree.left[node] >= 0:
                    gains[tree.feature[node]].append(tree.gain[node])
                    covers[tree.feature[node]].append(tree.cover[node])
    return gains, covers


@pytest.mark.parametrize("kind", ["regressor", "multiclass"])
def test_importance_types_against_a_hand_count(kind):
    model, _ = fitted(kind)
    booster = model.booster_
    gains, covers = hand_count(booster)
    if kind == "regressor":  # a feature no split uses: 0 for every type (no 0 / 0)
        assert not gains[3]
    # totals added in node order, as the library adds them: equal bit for bit
    expected = {"split": np.array([len(g) for g in gains], dtype=float),
                "total_gain": np.array([sum(g, 0.0) for g in gains]),
                "gain": np.array([sum(g, 0.0) for g in gains]),  # the total, as always
                "total_cover": np.array([sum(c, 0.0) for c in covers])}
    for name, values in expected.items():
        assert_array_equal(booster.feature_importances(name), values, err_msg=name)
        model.set_params(importance_type=name)
        normalised = values if name == "split" else values / values.sum()
        assert_array_equal(model.feature_importances_, normalised, err_msg=name)
    # XGBoost's "cover": the mean cover per split (0 for a feature never split on); NumPy's
    # pairwise mean adds in another order than the running sum: a few ulps
    mean_cover = np.array([np.mean(c) if c else 0.0 for c in covers])
    assert_allclose(booster.feature_importances("cover"), mean_cover, rtol=1e-14, atol=0)
    model.set_params(importance_type="cover")
    assert_allclose(model.feature_importances_, mean_cover / mean_cover.sum(), rtol=1e-14,
                    atol=0)


def test_cover_is_the_hessian_sum_per_split():
    # log-loss hessians p(1 - p) < 1: cover differs from the row count, as XGBoost's
    model, _ = fitted("binary")
    booster = model.booster_
    rows = np.zeros(booster.n_features)
    for stage in booster.trees:
        for tree in stage:
            internal = tree.left >= 0
            np.add.at(rows, tree.feature[internal], tree.count[internal])
    used = booster.feature_importances("split") > 0
    assert np.all(booster.feature_importances("total_cover")[used] < rows[used])


def test_unknown_importance_type_is_refused():
    model, X = fitted("regressor")
    with pytest.raises(ValueError, match="importance_type='weight' must be"):
        model.booster_.feature_importances("weight")
    with pytest.raises(ValueError, match="importance_type='average_gain' must be"):
        TreeBoostRegressor(importance_type="average_gain").fit(X, X[:, 2])


# ---- Dask ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    # two worker processes, as tests/test_dask.py; small data keeps the test to seconds
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


@pytest.mark.parametrize("kind", ["regressor", "multiclass"])
def test_dask_predict_options_equal_the_local_ones(client, kind):
    da = pytest.importorskip("dask.array")
    from treeboost.dask import DaskTreeBoostClassifier, DaskTreeBoostRegressor

    rng = np.random.default_rng(1)
    X = rng.normal(size=(600, 4))
    X[rng.random(X.shape) < 0.05] = np.nan
    signal = np.nan_to_num(X[:, 0]) - np.nan_to_num(X[:, 1]) ** 2
    cls, y = ((DaskTreeBoostRegressor, signal) if kind == "regressor"
              else (DaskTreeBoostClassifier, np.digitize(signal, [-1.0, 0.0]).astype(float)))
    Xd, yd = da.from_array(X, chunks=150), da.from_array(y, chunks=150)
    model = cls(n_estimators=6, max_leaf_nodes=5, random_state=0, client=client).fit(Xd, yd)
    local = model.to_local()
    # each block is the local model's prediction of its rows: equal to round-off or better
    tol = 1e-9
    for options in [{}, {"raw_score": True}, {"raw_score": True, "iteration_range": (2, 5)},
                    {"pred_contribs": True}, {"pred_contribs": True, "iteration_range": (1, 0)},
                    {"pred_interactions": True, "iteration_range": (0, 4)},
                    {"iteration_range": (0, 3)}]:
        got = model.predict(Xd, **options)
        expected = local.predict(X, **options)
        assert got.shape == expected.shape, options
        assert_allclose(got.compute(), expected, rtol=tol, atol=tol, err_msg=str(options))
    for options in [{"pred_leaf": True}, {"pred_leaf": True, "iteration_range": (3, 6)}]:
        got = model.predict(Xd, **options)
        assert got.dtype == np.int32
        assert got.shape == local.predict(X, **options).shape
        assert_array_equal(got.compute(), local.predict(X, **options))
    if kind == "multiclass":
        assert_allclose(model.predict_proba(Xd, iteration_range=(1, 4)).compute(),
                        local.predict_proba(X, iteration_range=(1, 4)), rtol=tol, atol=tol)
    with pytest.raises(ValueError, match=r"iteration_range=\(0, 7\)"):
        model.predict(Xd, iteration_range=(0, 7))  # refused on the client, not at compute
