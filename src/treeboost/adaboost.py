"""AdaBoost (SPEC §5): discrete AdaBoost for two classes, SAMME for K classes.

The classic algorithm keeps a distribution p over the training rows. Each
round fits the weak learner h_t to the weighted rows, measures its weighted
error eps_t = sum p_i [h_t(x_i) != y_i], and multiplies the weight of every
correctly classified row by beta_t = eps_t / (1 - eps_t) (Freund & Schapire
1997, AdaBoost.M1); the final vote weighs h_t by log(1 / beta_t). With K > 2
classes, SAMME (Zhu, Zou, Rosset & Hastie 2009) adds log(K - 1) to the vote
weight and multiplies the misclassified rows by exp(vote weight), which for
K = 2 is the same update once the weights are normalised.

The default weak learner is ``StumpClassifier``: a depth-1 tree on the
engine's bins (``BinMapper``: exact thresholds when a feature has at most
``max_bins`` distinct values, a learned side for missing values). The data
are binned once per ``fit`` and every round scans weighted class histograms.
"""

from __future__ import annotations

import numbers

import numpy as np
from scipy.special import softmax
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.preprocessing import LabelEncoder
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from ._dtypes import MAX_BINS, MISSING_BIN, N_BINS, X_DTYPE
from .binning import BinMapper


def _check_max_bins(max_bins):
    if isinstance(max_bins, bool) or not isinstance(max_bins, numbers.Integral) \
            or not 2 <= max_bins <= MAX_BINS:
        raise ValueError(f"max_bins={max_bins!r} must be an int in [2, {MAX_BINS}]")


class StumpClassifier(ClassifierMixin, BaseEstimator):
    """A depth-1 classification tree on treeboost's histogram bins.

    The split (feature, bin threshold, side of the missing values) is the
    one that minimises the weighted Gini impurity of the two children, or
    their weighted misclassification error; each child predicts its
    heaviest class. It is AdaBoost's default weak learner.

    Parameters
    ----------
    criterion : {"gini", "error"}, default="gini"
        Impurity minimised by the split: Gini (as scikit-learn's trees) or
        the weighted number of misclassified rows (the classic stump).
    max_bins : int, default=255
        Maximum bins of non-missing values per feature; features with at
        most this many distinct values are split exactly.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    feature_ : int
        Split feature, or -1 when no split lowers the impurity (one leaf).
    threshold_ : float
        Rows with ``x[feature_] <= threshold_`` go left.
    missing_left_ : bool
        Whether rows with a missing ``x[feature_]`` go left.
    leaf_class_ : ndarray of shape (2,)
        Index into ``classes_`` predicted by the left and right child.
    n_features_in_ : int
        Number of features seen during fit.
    """

    def __init__(self, criterion="gini", max_bins=MAX_BINS):
        self.criterion = criterion
        self.max_bins = max_bins

    def fit(self, X, y, sample_weight=None):
        """Fit the stump.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data; NaN marks missing values.
        y : array-like of shape (n_samples,)
            Class labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative row weights.

        Returns
        -------
        self : object
            The fitted stump.
        """
        if self.criterion not in ("gini", "error"):
            raise ValueError(f"criterion={self.criterion!r} must be 'gini' or 'error'")
        _check_max_bins(self.max_bins)
        X, y = validate_data(self, X, y, dtype=X_DTYPE, order="C",
                             ensure_all_finite="allow-nan")
        check_classification_targets(y)
        encoder = LabelEncoder().fit(y)
        self.classes_ = encoder.classes_
        w = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
        keep = w > 0  # a row of weight 0 is not there: it must not move the bin edges
        if not keep.any():
            raise ValueError("sample_weight must have a positive sum")
        mapper = BinMapper(self.max_bins, random_state=0).fit(X[keep])
        self._fit_binned(mapper.transform(X[keep]), mapper, encoder.transform(y[keep]), w[keep],
                         len(self.classes_))
        return self

    def _fit_binned(self, X_binned, mapper, y_idx, w, n_classes, codes=None):
        """Find the best split from weighted class histograms of binned data.

        ``codes`` (from ``_histogram_codes``) may be passed when the same
        binned data and labels are fitted many times (AdaBoost's rounds).
        """
        K, n_features = n_classes, X_binned.shape[0]
        if codes is None:
            codes = _histogram_codes(X_binned, y_idx, K)
        # one bincount fills every feature's (bin, class) histogram
        hist = np.bincount(codes, weights=np.tile(w, n_features),
                           minlength=n_features * N_BINS * K).reshape(n_features, N_BINS, K)
        total = hist[0].sum(axis=0)
        missing = hist[:, MISSING_BIN, :]  # (n_features, K)
        # left child of "bins <= b": cumulative value bins, plus the missing bin or not
        # value bins past the widest feature's are empty for every feature: not scanned
        width = int(mapper.n_bins_non_missing_.max())
        cum = np.cumsum(hist[:, :width, :], axis=1)  # (n_features, width, K)
        left = np.stack([cum, cum + missing[:, None, :]])  # side 0: missing right, 1: left
        right = total - left
        score = np.where(_valid(left, right), self._score(left) + self._score(right), -np.inf)
        # bins past the feature's last value bin repeat its last split: not candidates
        n_bins = mapper.n_bins_non_missing_[:, None]
        score[:, np.arange(width)[None, :] >= n_bins] = -np.inf
        side, f, b = np.unravel_index(np.argmax(score), score.shape)
        parent = float(self._score(total[None])[0])
        if score[side, f, b] <= parent * (1.0 + 1e-12):  # no split lowers the impurity
            self.feature_, self.threshold_, self.missing_left_ = -1, np.inf, True
            self._bin_threshold = MISSING_BIN
            self.leaf_class_ = np.array([np.argmax(total)] * 2)
            return self
        self.feature_, self._bin_threshold = int(f), int(b)
        self.threshold_ = float(mapper.thresholds(np.array([f]), np.array([b]))[0])
        self.missing_left_ = bool(side)
        self.leaf_class_ = np.array([np.argmax(left[side, f, b]), np.argmax(right[side, f, b])])
        return self

    def _score(self, counts):
        """Higher is purer: sum_k w_k^2 / W (Gini) or max_k w_k (error), over the last axis."""
        if self.criterion == "error":
            return counts.max(axis=-1)
        weight = counts.sum(axis=-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(weight > 0, (counts**2).sum(axis=-1) / weight, 0.0)

    def _goes_left_binned(self, X_binned):
        if self.feature_ < 0:
            return np.ones(X_binned.shape[1], dtype=bool)
        b = X_binned[self.feature_]
        return np.where(b == MISSING_BIN, self.missing_left_, b <= self._bin_threshold)

    def _predict_index(self, X):
        if self.feature_ < 0:
            return np.full(X.shape[0], self.leaf_class_[0])
        x = X[:, self.feature_]
        go_left = np.where(np.isnan(x), self.missing_left_, x <= self.threshold_)
        return np.where(go_left, self.leaf_class_[0], self.leaf_class_[1])

    def predict(self, X):
        """Predicted class of each row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data.

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        check_is_fitted(self, "leaf_class_")
        X = validate_data(self, X, reset=False, dtype=X_DTYPE, ensure_all_finite="allow-nan")
        return self.classes_[self._predict_index(X)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.classifier_tags.poor_score = True  # one split cannot separate 3 blobs
        return tags


def _histogram_codes(X_binned, y_idx, n_classes):
    """Flat index (feature, bin, class) of every (feature, row) pair, feature-major."""
    feature_base = np.arange(X_binned.shape[0], dtype=np.intp)[:, None] * N_BINS
    codes = (feature_base + X_binned.astype(np.intp)) * n_classes
    return (codes + np.asarray(y_idx, dtype=np.intp)[None, :]).ravel()


def _valid(left, right):
    """Both children carry weight."""
    return (left.sum(axis=-1) > 0) & (right.sum(axis=-1) > 0)


class AdaBoostClassifier(ClassifierMixin, BaseEstimator):
    """AdaBoost: discrete AdaBoost for two classes, SAMME for more (SPEC §5).

    Each round normalises the row weights into a distribution p, fits the
    weak learner h_t on them, and computes eps_t = sum p_i [h_t(x_i) != y_i]
    and beta_t = eps_t / (1 - eps_t). Two classes: correct rows are
    multiplied by beta_t^learning_rate and h_t votes with weight
    learning_rate * log(1 / beta_t). K classes (SAMME): the vote weight is
    learning_rate * (log(1 / beta_t) + log(K - 1)) and misclassified rows are
    multiplied by exp(vote weight). Training stops early when a learner is
    perfect (kept with vote weight 1) or no better than chance (dropped).

    Parameters
    ----------
    estimator : classifier, default=None
        Weak learner; its ``fit`` must accept ``sample_weight``. None: a
        ``StumpClassifier`` (depth-1 tree on the engine's bins), fitted on
        data binned once for all rounds.
    n_estimators : int, default=50
        Maximum number of rounds.
    learning_rate : float, default=1.0
        Shrinks every vote weight and weight update (1 is the classic algorithm).
    max_bins : int, default=255
        Bins per feature of the default stumps.
    random_state : int, RandomState instance or None, default=None
        Seeds the ``random_state`` of each clone of ``estimator``.

    Attributes
    ----------
    estimators_ : list of classifiers
        Fitted weak learners (predicting class indices 0..K-1).
    estimator_weights_ : ndarray of shape (n_rounds,)
        Vote weight of each learner.
    estimator_errors_ : ndarray of shape (n_rounds,)
        Weighted error eps_t of each learner.
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    n_classes_ : int
        Number of classes.
    n_features_in_ : int
        Number of features seen during fit.
    """

    def __init__(self, estimator=None, *, n_estimators=50, learning_rate=1.0,
                 max_bins=MAX_BINS, random_state=None):
        self.estimator = estimator
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_bins = max_bins
        self.random_state = random_state

    def _check_params(self):
        if isinstance(self.n_estimators, bool) or not isinstance(
                self.n_estimators, numbers.Integral) or self.n_estimators < 1:
            raise ValueError(f"n_estimators={self.n_estimators!r} must be an int >= 1")
        if isinstance(self.learning_rate, bool) or not isinstance(
                self.learning_rate, numbers.Real) or not 0 < self.learning_rate < np.inf:
            raise ValueError(f"learning_rate={self.learning_rate!r} must be a float > 0")
        _check_max_bins(self.max_bins)

    def fit(self, X, y, sample_weight=None):
        """Run the boosting rounds.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data (NaN allowed with the default stumps).
        y : array-like of shape (n_samples,)
            Class labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Initial row weights (uniform by default).

        Returns
        -------
        self : object
            The fitted estimator.
        """
        self._check_params()
        X, y = validate_data(self, X, y, dtype=X_DTYPE, order="C",
                             ensure_all_finite="allow-nan" if self.estimator is None else True)
        check_classification_targets(y)
        encoder = LabelEncoder().fit(y)
        self.classes_, self.n_classes_ = encoder.classes_, len(encoder.classes_)
        if self.n_classes_ < 2:
            raise ValueError("AdaBoostClassifier needs samples of at least 2 classes in the "
                             f"data; got 1 class ({self.classes_[0]!r})")
        y_idx = encoder.transform(y)
        w = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
        if not w.sum() > 0:
            raise ValueError("sample_weight must have a positive sum")
        keep = w > 0  # weights only ever get multiplied: rows of weight 0 stay out
        X, y_idx, w = X[keep], y_idx[keep], w[keep]
        learn = self._stump_rounds(X) if self.estimator is None else self._estimator_rounds(X)
        self.estimators_, weights, errors = [], [], []
        for t in range(self.n_estimators):
            p = w / w.sum()
            learner, pred = learn(y_idx, p)
            miss = pred != y_idx
            eps = float(p @ miss)
            if eps <= 0.0:  # a perfect learner decides alone
                self.estimators_.append(learner)
                weights.append(1.0)
                errors.append(0.0)
                break
            if eps >= 1.0 - 1.0 / self.n_classes_:
                if t == 0:
                    raise ValueError(f"the weak learner's weighted error {eps:.4g} is no better "
                                     f"than chance for {self.n_classes_} classes; AdaBoost "
                                     "cannot start")
                break  # later rounds: stop and drop the learner
            w = self._reweight(w, miss, eps)
            self.estimators_.append(learner)
            weights.append(self._vote_weight(eps))
            errors.append(eps)
        self.estimator_weights_ = np.array(weights)
        self.estimator_errors_ = np.array(errors)
        return self

    def _vote_weight(self, eps):
        """learning_rate * (log(1 / beta) + log(K - 1)), beta = eps / (1 - eps)."""
        return self.learning_rate * (np.log((1.0 - eps) / eps) + np.log(self.n_classes_ - 1))

    def _reweight(self, w, miss, eps):
        """Two classes: w *= beta^(1 - miss); K classes (SAMME): w *= exp(alpha miss)."""
        if self.n_classes_ == 2:
            beta = eps / (1.0 - eps)
            return w * np.where(miss, 1.0, beta ** self.learning_rate)
        return w * np.exp(self._vote_weight(eps) * miss)

    def _stump_rounds(self, X):
        """Round function of the default learner: bins once, one stump per round."""
        mapper = BinMapper(self.max_bins, random_state=0).fit(X)
        X_binned = mapper.transform(X)
        codes = {}

        def learn(y_idx, p):
            if not codes:  # labels are the same every round: index the histograms once
                codes["all"] = _histogram_codes(X_binned, y_idx, self.n_classes_)
            stump = StumpClassifier(max_bins=self.max_bins)
            stump._fit_binned(X_binned, mapper, y_idx, p, self.n_classes_, codes["all"])
            stump.classes_ = np.arange(self.n_classes_)
            stump.n_features_in_ = X.shape[1]
            pred = np.where(stump._goes_left_binned(X_binned), stump.leaf_class_[0],
                            stump.leaf_class_[1])
            return stump, pred

        return learn

    def _estimator_rounds(self, X):
        """Round function of a user learner: a fresh seeded clone per round."""
        rng = check_random_state(self.random_state)

        def learn(y_idx, p):
            learner = clone(self.estimator)
            if "random_state" in learner.get_params():
                learner.set_params(random_state=int(rng.randint(np.iinfo(np.int32).max)))
            learner.fit(X, y_idx, sample_weight=p)
            return learner, np.asarray(learner.predict(X)).astype(np.intp)

        return learn

    # ---- prediction ------------------------------------------------------------
    def _votes(self, X):
        """Sum of vote weights per class, normalised by their total, (n_samples, K)."""
        check_is_fitted(self, "estimators_")
        X = validate_data(self, X, reset=False, dtype=X_DTYPE, order="C",
                          ensure_all_finite="allow-nan" if self.estimator is None else True)
        votes = np.zeros((X.shape[0], self.n_classes_))
        rows = np.arange(X.shape[0])
        for learner, alpha in zip(self.estimators_, self.estimator_weights_, strict=True):
            idx = learner._predict_index(X) if isinstance(learner, StumpClassifier) \
                else np.asarray(learner.predict(X)).astype(np.intp)
            votes[rows, idx] += alpha
        return votes / self.estimator_weights_.sum()

    def decision_function(self, X):
        """Weighted vote of the learners, in SAMME's symmetric coding.

        A learner predicting class k adds its vote weight to class k and
        subtracts 1/(K - 1) of it from the others; the sums are divided by the
        total vote weight (scikit-learn's scale).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data.

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
            Two classes: twice the vote share of the second class minus that
            of the first (>= 0 predicts the second); else the coded vote of
            each class.
        """
        votes = self._votes(X)
        if self.n_classes_ == 2:
            return 2.0 * (votes[:, 1] - votes[:, 0])
        return (self.n_classes_ * votes - 1.0) / (self.n_classes_ - 1)

    def predict(self, X):
        """Class with the largest weighted vote.

        Two classes: the second class when sum_t log(1/beta_t) h_t(x) >=
        (1/2) sum_t log(1/beta_t) (Freund & Schapire's final hypothesis).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data.

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        d = self.decision_function(X)
        idx = (d >= 0).astype(np.intp) if d.ndim == 1 else d.argmax(axis=1)
        return self.classes_[idx]

    def predict_proba(self, X):
        """Class probabilities: softmax of the votes (scikit-learn's SAMME mapping).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        d = self.decision_function(X)
        if d.ndim == 1:
            d = np.column_stack([-d, d]) / 2.0
        else:
            d = d / (self.n_classes_ - 1)
        return softmax(d, axis=1)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = self.estimator is None
        return tags
