"""Regression losses: squared, absolute, Huber, quantile, Poisson, gamma, Tweedie."""

from __future__ import annotations

import numpy as np

from .._dtypes import SUM_DTYPE, readonly
from .._kernels import losses as k
from .base import Loss, argmin_constant, weighted_quantile


def _spread(y, sample_weight) -> float:
    """max(w) * max(1, max(y) - min(y)): |w (F - y)| and w at F0 within [min y, max y]."""
    if y.size == 0:
        return 0.0
    return float(np.max(sample_weight)) * max(1.0, float(np.max(y)) - float(np.min(y)))


def _bounded(y, sample_weight) -> float:
    """max(w) for gradients bounded by the weight; inf if residuals overflow float64."""
    if y.size == 0:
        return 0.0
    finite = np.isfinite(float(np.max(y)) - float(np.min(y)))
    return float(np.max(sample_weight)) if finite else np.inf


def _exact_leaves(quantile_fn, y, raw, sample_weight, sample_indices, leaf_starts,
                  leaf_stops):
    """Leaf values by a line search over each leaf's residuals y - F."""
    values = np.empty(leaf_starts.size, dtype=SUM_DTYPE)
    for j, (start, stop) in enumerate(zip(leaf_starts, leaf_stops, strict=False)):
        rows = sample_indices[start:stop]
        values[j] = quantile_fn(y[rows] - raw[rows], sample_weight[rows])
    return values


class SquaredError(Loss):
    """L = (y - F)^2 / 2; F0 is the weighted mean, leaves the mean residual."""

    name = "squared_error"
    leaf_line_search = "newton"

    def pointwise(self, y, raw):
        """Half squared error of each row."""
        return 0.5 * (y - raw[0]) ** 2

    def init_statistics(self, y, sample_weight):
        """(sum of w y, sum of w): F0 is a function of the weighted mean of y."""
        return np.array([np.dot(sample_weight, y), sample_weight.sum()])

    def init_from_statistics(self, stats):
        """F0 of the weighted mean ``stats[0] / stats[1]``."""
        return self.init_score(np.array([stats[0] / stats[1]]), np.ones(1))

    def init_score(self, y, sample_weight):
        """The weighted mean of y."""
        return np.array([np.average(y, weights=sample_weight)])

    def gradient_hessian(self, y, raw, sample_weight, gradient, hessian):
        """g = F - y, h = 1."""
        k.grad_hess_squared_error(y, raw[0], sample_weight, gradient[0], hessian[0])

    def gradient_scale(self, y, sample_weight):
        """max(w) * the range of y."""
        return _spread(y, sample_weight)


class AbsoluteError(Loss):
    """L = |y - F|; F0 and leaves are weighted medians (Friedman's LAD_TreeBoost)."""

    name = "absolute_error"
    leaf_line_search = "exact"

    def pointwise(self, y, raw):
        """Absolute error of each row."""
        return np.abs(y - raw[0])

    def init_score(self, y, sample_weight):
        """The weighted median of y."""
        return np.array([weighted_quantile(y, sample_weight, 0.5)])

    def gradient_hessian(self, y, raw, sample_weight, gradient, hessian):
        """g = sign(F - y), h = 1."""
        k.grad_hess_absolute_error(y, raw[0], sample_weight, gradient[0], hessian[0])

    def gradient_scale(self, y, sample_weight):
        """max(w): |g| <= w (the residuals of the leaves' medians must be finite)."""
        return _bounded(y, sample_weight)

    def leaf_values(self, y, raw, sample_weight, sample_indices, leaf_starts, leaf_stops,
                    sum_g, sum_h, context, reg_lambda, reg_alpha):
        """Weighted median of each leaf's residuals."""
        return _exact_leaves(lambda r, w: weighted_quantile(r, w, 0.5), y, raw[0],
                             sample_weight, sample_indices, leaf_starts, leaf_stops)


class Quantile(Loss):
    """Pinball loss of level ``alpha``; F0 and leaves are weighted alpha-quantiles."""

    name = "quantile"
    leaf_line_search = "exact"

    def __init__(self, alpha: float = 0.9):
        self.alpha = float(alpha)

    def pointwise(self, y, raw):
        """Pinball loss of each row."""
        d = y - raw[0]
        return np.where(d > 0, self.alpha * d, (self.alpha - 1.0) * d)

    def init_score(self, y, sample_weight):
        """The weighted alpha-quantile of y."""
        return np.array([weighted_quantile(y, sample_weight, self.alpha)])

    def gradient_hessian(self, y, raw, sample_weight, gradient, hessian):
        """g = -alpha if y > F else 1 - alpha, h = 1."""
        k.grad_hess_quantile(y, raw[0], sample_weight, gradient[0], hessian[0], self.alpha)

    def gradient_scale(self, y, sample_weight):
        """max(w): |g| <= w (the residuals of the leaves' quantiles must be finite)."""
        return _bounded(y, sample_weight)

    def leaf_values(self, y, raw, sample_weight, sample_indices, leaf_starts, leaf_stops,
                    sum_g, sum_h, context, reg_lambda, reg_alpha):
        """Weighted alpha-quantile of each leaf's residuals."""
        return _exact_leaves(lambda r, w: weighted_quantile(r, w, self.alpha), y, raw[0],
                             sample_weight, sample_indices, leaf_starts, leaf_stops)

    def get_params(self):
        """``alpha``."""
        return {"alpha": self.alpha}


class Huber(Loss):
    """Huber loss; delta is the alpha-quantile of |y - F| at each stage (Friedman 2001).

    Leaves take Friedman's M-regression step: the median residual plus the
    mean of the residuals' deviations from it clipped to [-delta, delta].
    """

    name = "huber"
    leaf_line_search = "exact"
    gradients_read_every_row = True  # delta: a quantile of every row's |residual|

    def __init__(self, alpha: float = 0.9):
        self.alpha = float(alpha)

    def _delta(self, y, raw, sample_weight):
        return weighted_quantile(np.abs(y - raw[0]), sample_weight, self.alpha)

    def pointwise(self, y, raw, delta=None):
        """Huber loss of each row, delta from the current residuals if not given."""
        d = np.abs(y - raw[0])
        if delta is None:
            delta = weighted_quantile(d, np.ones_like(d), self.alpha)
        return np.where(d <= delta, 0.5 * d**2, delta * (d - 0.5 * delta))

    def __call__(self, y, raw, sample_weight=None):
        """Weighted mean Huber loss, delta the weighted alpha-quantile of |y - F|."""
        w = np.ones_like(y) if sample_weight is None else sample_weight
        delta = self._delta(y, raw, w)
        return float(np.average(self.pointwise(y, raw, delta), weights=w))

    def init_score(self, y, sample_weight):
        """argmin_c of the Huber loss with delta set from |y - median(y)|."""
        med = weighted_quantile(y, sample_weight, 0.5)
        delta = weighted_quantile(np.abs(y - med), sample_weight, self.alpha)

        def objective(c):
            return np.average(self.pointwise(y, np.full((1, y.size), c), delta),
                              weights=sample_weight)

        lo, hi = float(y.min()), float(y.max())
        if hi <= lo:
            return np.array([lo])
        if hi - lo <= 1e6 * delta:
            return np.array([argmin_constant(objective, lo, hi)])
        # an outlier far beyond delta (1e30 among values of order 1) adds delta * |y - c|
        # to the objective, next to which its variation in c is below float64's
        # resolution: solve sum w clip(y - c, -delta, delta) = 0 instead, whose root lies
        # within delta of the median (at med +- delta half the weight is clipped one way)
        from scipy.optimize import brentq  # imported on use: slow to import

        def psi(c):
            return float(sample_weight @ np.clip(y - c, -delta, delta))

        return np.array([brentq(psi, med - delta, med + delta, xtol=1e-12 * (1 + abs(med)))])

    def stage_context(self, y, raw, sample_weight):
        """delta: the weighted alpha-quantile of |y - F| over the rows given."""
        return self._delta(y, raw, sample_weight)

    def gradient_hessian(self, y, raw, sample_weight, gradient, hessian, context=None):
        """g = clip(F - y, -delta, delta), h = 1; returns delta (``context`` if given)."""
        delta = self._delta(y, raw, sample_weight) if context is None else context
        k.grad_hess_huber(y, raw[0], sample_weight, gradient[0], hessian[0], delta)
        return delta

    def gradient_scale(self, y, sample_weight):
        """max(w) * the range of y, which bounds delta."""
        return _spread(y, sample_weight)

    def leaf_values(self, y, raw, sample_weight, sample_indices, leaf_starts, leaf_stops,
                    sum_g, sum_h, context, reg_lambda, reg_alpha):
        """Friedman's step: median + mean(clip(r - median, -delta, delta))."""
        delta = context

        def step(r, w):
            med = weighted_quantile(r, w, 0.5)
            return med + np.average(np.clip(r - med, -delta, delta), weights=w)

        return _exact_leaves(step, y, raw[0], sample_weight, sample_indices, leaf_starts,
                             leaf_stops)

    def get_params(self):
        """``alpha``."""
        return {"alpha": self.alpha}


class _LogLinkLoss(Loss):
    """Losses with a log link: F0 = log of the weighted mean target.

    Their Newton steps are unbounded in one direction and overshoot the
    leaf's exact minimiser there: for gamma, -G/H = 1 - W/T (W the leaf's
    weight, T = sum w y exp(-F)) against the exact log(T/W), so a leaf of
    targets 1e-3 under a prediction of 7 gets -7000 and exp of the raw score
    overflows; for Poisson, -G/H = Y/M - 1 (Y, M the sums of w y and w mu)
    against the exact log(Y/M). Leaf values are therefore capped at
    ``max_delta_step`` (the estimator's parameter when given): 1 for gamma
    and Tweedie (a factor e on the prediction per unshrunk step), 5 for
    Poisson, whose steps down are bounded by -1 anyway and whose accuracy
    on skewed counts gained up to a cap of 5 (tests/test_divergence.py).
    LightGBM and XGBoost bound Poisson steps by computing the hessian at
    F + 0.7 instead, which halves every step, and leave gamma and Tweedie
    unbounded: on targets spanning orders of magnitude they (and
    scikit-learn) predict NaN, 0 or a constant where the cap is accurate.
    """

    link = "log"
    strictly_positive = False
    max_delta_step = 1.0

    def validate_target(self, y):
        """Targets must be >= 0 (> 0 for gamma) with a positive mean."""
        if self.strictly_positive and np.any(y <= 0):
            raise ValueError(f"loss='{self.name}' requires strictly positive targets y > 0")
        if np.any(y < 0):
            raise ValueError(f"loss='{self.name}' requires non-negative targets y >= 0")
        if not np.any(y > 0):
            raise ValueError(f"loss='{self.name}' requires some positive targets")

    def init_statistics(self, y, sample_weight):
        """(sum of w y, sum of w): F0 is a function of the weighted mean of y."""
        return np.array([np.dot(sample_weight, y), sample_weight.sum()])

    def init_from_statistics(self, stats):
        """F0 of the weighted mean ``stats[0] / stats[1]``."""
        return self.init_score(np.array([stats[0] / stats[1]]), np.ones(1))

    def init_score(self, y, sample_weight):
        """log of the weighted mean of y."""
        return np.array([np.log(np.average(y, weights=sample_weight))])

    def _mean(self, y, sample_weight) -> float:
        return float(np.average(y, weights=sample_weight)) if y.size else 1.0


class Poisson(_LogLinkLoss):
    """Poisson deviance / 2 with log link: L = exp(F) - y F."""

    name = "poisson"
    leaf_line_search = "newton"
    max_delta_step = 5.0

    def pointwise(self, y, raw):
        """exp(F) - y F for each row."""
        return np.exp(raw[0]) - y * raw[0]

    def gradient_hessian(self, y, raw, sample_weight, gradient, hessian):
        """g = exp(F) - y, h = exp(F)."""
        k.grad_hess_poisson(y, raw[0], sample_weight, gradient[0], hessian[0])

    def gradient_scale(self, y, sample_weight):
        """max(w) * max(y): g = w (mu - y), h = w mu with mu = mean(y) at F0."""
        return float(np.max(sample_weight, initial=0.0)) * max(1.0, float(np.max(y,
                                                                               initial=0.0)))


class Gamma(_LogLinkLoss):
    """Gamma deviance / 2 with log link: L = y exp(-F) + F."""

    name = "gamma"
    leaf_line_search = "newton"
    strictly_positive = True

    def pointwise(self, y, raw):
        """y exp(-F) + F for each row."""
        return y * np.exp(-raw[0]) + raw[0]

    def gradient_hessian(self, y, raw, sample_weight, gradient, hessian):
        """g = 1 - y exp(-F), h = y exp(-F)."""
        k.grad_hess_gamma(y, raw[0], sample_weight, gradient[0], hessian[0])

    def gradient_scale(self, y, sample_weight):
        """max(w) * max(y) / mean(y): scale-free in y (g = w (1 - y / mu), h = w y / mu)."""
        ratio = float(np.max(y, initial=0.0)) / self._mean(y, sample_weight)
        return float(np.max(sample_weight, initial=0.0)) * max(1.0, ratio)


class Tweedie(_LogLinkLoss):
    """Tweedie deviance with log link and variance power ``power`` in (1, 2) or > 2."""

    name = "tweedie"
    leaf_line_search = "newton"

    def __init__(self, power: float = 1.5):
        self.power = float(power)
        self.strictly_positive = self.power >= 2

    def pointwise(self, y, raw):
        """-y exp((1-p)F)/(1-p) + exp((2-p)F)/(2-p) for each row."""
        a, b = 1.0 - self.power, 2.0 - self.power
        return -y * np.exp(a * raw[0]) / a + np.exp(b * raw[0]) / b

    def gradient_hessian(self, y, raw, sample_weight, gradient, hessian):
        """Derivatives of the deviance above."""
        k.grad_hess_tweedie(y, raw[0], sample_weight, gradient[0], hessian[0], self.power)

    def gradient_scale(self, y, sample_weight):
        """max(w) * (max(y) mu^(1-p) + mu^(2-p)) * max(1, p), mu = mean(y): g and h at F0."""
        mu, p = self._mean(y, sample_weight), self.power
        terms = float(np.max(y, initial=0.0)) * mu ** (1.0 - p) + mu ** (2.0 - p)
        return float(np.max(sample_weight, initial=0.0)) * terms * max(1.0, p)

    def get_params(self):
        """``power``."""
        return {"power": self.power}


def _column(data, j):
    """``data`` (a ``TrainingData``) seen by one output: label column ``j`` (all of a 1-D y)."""
    from dataclasses import replace

    # read-only as the fit's labels are: one compiled loss kernel for both
    y = data.y if data.y.ndim == 1 else readonly(np.ascontiguousarray(data.y[:, j]))
    return replace(data, y=y, n_outputs=1)


class PerOutput(Loss):
    """Several single-output losses side by side: one tree per output and stage.

    Output k is fitted by ``losses[k]`` on label column ``k`` of a 2-D y
    (multi-output regression, ``n_targets``), or on the one column of a 1-D y
    (multi-quantile, one ``Quantile`` per ``alpha``): F0, gradients and line
    search of each output are those of its loss alone, so each output's trees are
    those of a single-output fit on its column (``multi_strategy=
    "one_output_per_tree"``, as XGBoost's). Predictions have shape (n, n_outputs).

    With ``multi_strategy="multi_output_tree"`` a stage grows one tree for every
    output instead, its split gain summed over the outputs (``_kernels.multi_output``),
    each output's leaves still set by its own loss's line search; the tree is kept as
    n_outputs ordinary trees that share every split, one per output with its values.

    Parameters
    ----------
    losses : list of Loss
        Single-output losses of one class (one per output).
    multi_quantile : bool, default=False
        The outputs are quantiles of one 1-D y (``alpha`` a list): predictions are
        sorted within each row, in the order of the alphas, so that they never cross.
    band_offset : float, default=None
        Multi-quantile after conformal calibration: the widening of the band.
    multi_strategy : {"one_output_per_tree", "multi_output_tree"}, default=None
        How a stage grows its trees (None: one per output). Not part of
        ``get_params``: the model is the same kind of trees either way.
    """

    leaf_line_search = "exact"  # the instance's is its losses' (Newton: the fused kernel)

    def __init__(self, losses, multi_quantile: bool = False, band_offset: float | None = None,
                 multi_strategy: str | None = None):
        self.losses = list(losses)
        #: one tree a stage for every output (``Booster._stage`` reads it)
        self.multi_output_tree = multi_strategy == "multi_output_tree"
        #: multi-quantile after ``TreeBoostRegressor.calibrate`` (CQR): subtracted from the
        #: lowest quantile's predictions and added to the highest's; None: not calibrated
        self.band_offset = None if band_offset is None else float(band_offset)
        base = self.losses[0]
        self.name = base.name
        self.n_outputs = len(self.losses)
        self.multi_quantile = bool(multi_quantile)
        self.link = base.link
        self.leaf_line_search = base.leaf_line_search
        self.max_delta_step = base.max_delta_step
        self.gradients_read_every_row = base.gradients_read_every_row

    @property
    def task(self) -> str:
        """``"regression"``."""
        return "regression"

    def _y(self, y, j):
        return y if y.ndim == 1 else y[:, j]

    def prepare(self, data):
        """Each output's loss's ``prepare`` on its column."""
        for j, loss in enumerate(self.losses):
            loss.prepare(_column(data, j))

    def init_raw(self, data):
        """F0 of each output on its column, shape (n_outputs,)."""
        return np.concatenate([np.asarray(loss.init_raw(_column(data, j)), dtype=np.float64)
                               for j, loss in enumerate(self.losses)])

    def init_score(self, y, sample_weight):
        """F0 of each output on its column."""
        return np.concatenate([loss.init_score(self._y(y, j), sample_weight)
                               for j, loss in enumerate(self.losses)])

    def gradients(self, data, raw, gradient, hessian, context=None):
        """Each output's gradients on its column; returns the list of their contexts."""
        out = [loss.gradients(_column(data, j), raw[j:j + 1], gradient[j:j + 1],
                              hessian[j:j + 1], None if context is None else context[j])
               for j, loss in enumerate(self.losses)]
        return None if all(c is None for c in out) else out

    def stage_context(self, y, raw, sample_weight):
        """Each output's stage context on its column."""
        return [loss.stage_context(self._y(y, j), raw[j:j + 1], sample_weight)
                if loss.gradients_read_every_row else None
                for j, loss in enumerate(self.losses)]

    def line_search(self, data, output, raw, sample_indices, leaf_starts, leaf_stops, sum_g,
                    sum_h, context, reg_lambda, reg_alpha):
        """Output ``output``'s loss's line search on its column (its alpha, its delta)."""
        return self.losses[output].line_search(
            _column(data, output), 0, raw, sample_indices, leaf_starts, leaf_stops, sum_g,
            sum_h, None if context is None else context[output], reg_lambda, reg_alpha)

    def validate_target(self, y):
        """Each output's loss's check on its column."""
        for j, loss in enumerate(self.losses):
            loss.validate_target(self._y(y, j))

    def pointwise(self, y, raw):
        """The mean over the outputs of each output's loss, per row."""
        return np.mean([loss.pointwise(self._y(y, j), raw[j:j + 1])
                        for j, loss in enumerate(self.losses)], axis=0)

    def check_scale(self, y, sample_weight):
        """Each output's loss's check on its column."""
        for j, loss in enumerate(self.losses):
            loss.check_scale(self._y(y, j), sample_weight)

    def inverse_link(self, raw):
        """Predictions of shape (n_samples, n_outputs); multi-quantile: sorted per row.

        Sorting each row's quantile predictions (in the order of the alphas) can
        only lower the pinball loss summed over the levels (the rearrangement of
        Chernozhukov, Fernandez-Val and Galichon, Econometrica 2010): the bands
        never cross.
        """
        out = np.stack([loss.inverse_link(raw[j:j + 1])
                        for j, loss in enumerate(self.losses)], axis=1)
        if self.multi_quantile:
            order = np.argsort([loss.alpha for loss in self.losses], kind="stable")
            if self.band_offset is not None and order.size > 1:  # CQR's widened band
                out[:, order[0]] -= self.band_offset
                out[:, order[-1]] += self.band_offset
            out[:, order] = np.sort(out, axis=1)
        return out

    def get_params(self):
        """The base loss's parameters with ``n_targets`` (and ``multi_strategy`` when
        one tree serves every output: a loaded model's continued fit grows the same way),
        or ``alpha`` as a list."""
        if self.multi_quantile:
            alphas = {"alpha": [loss.alpha for loss in self.losses]}
            return alphas if self.band_offset is None else {**alphas,
                                                            "band_offset": self.band_offset}
        params = {**self.losses[0].get_params(), "n_targets": self.n_outputs}
        if self.multi_output_tree:  # absent otherwise: earlier model files unchanged
            params["multi_strategy"] = "multi_output_tree"
        return params


#: the losses a 2-D y may take, one output per column (``per_target``)
PER_COLUMN_LOSSES = ("squared_error", "absolute_error", "huber", "quantile", "poisson",
                     "gamma", "tweedie")


def per_target(loss: Loss, n_targets: int, multi_strategy: str | None = None) -> Loss:
    """``loss`` fitted to each of ``n_targets`` label columns (``PerOutput``).

    ``multi_strategy`` is ``PerOutput``'s. Raises ``ValueError`` for a loss that is not
    one of ``PER_COLUMN_LOSSES``.
    """
    if isinstance(loss, PerOutput) or loss.name not in PER_COLUMN_LOSSES \
            or type(loss).__module__ != __name__:
        what = ("a list of alphas (multi-quantile) takes a 1-D y"
                if isinstance(loss, PerOutput) else f"one of {list(PER_COLUMN_LOSSES)}")
        raise ValueError(f"a 2-D y (n_samples, {n_targets}) needs loss={what}; got "
                         f"loss={loss.name!r}")
    import copy

    return PerOutput([copy.deepcopy(loss) for _ in range(n_targets)],
                     multi_strategy=multi_strategy)


def multi_quantile(alphas, band_offset: float | None = None) -> Loss:
    """One ``Quantile`` output per alpha, predictions sorted per row (``PerOutput``)."""
    alphas = [float(a) for a in alphas]
    if len(alphas) < 1 or not all(0.0 < a < 1.0 for a in alphas) \
            or len(set(alphas)) != len(alphas):
        raise ValueError(f"alpha={alphas!r} must be distinct floats in (0, 1)")
    return PerOutput([Quantile(a) for a in alphas], multi_quantile=True,
                     band_offset=band_offset)


def conformal_offset(lower, upper, y, miscoverage: float) -> float:
    """CQR's correction of a quantile band from held-out rows (Romano et al. 2019).

    The conformity scores E_i = max(lower_i - y_i, y_i - upper_i) of the n
    calibration rows; the correction is their empirical quantile of level
    (1 - miscoverage)(1 + 1/n), the ceil((n + 1)(1 - miscoverage))-th smallest score.
    The band [lower - Q, upper + Q] then covers a new row exchangeable with the
    calibration rows with probability at least 1 - miscoverage (marginally).

    Parameters
    ----------
    lower, upper : ndarray of shape (n,)
        The band's predictions at the calibration rows.
    y : ndarray of shape (n,)
        Their targets.
    miscoverage : float
        alpha of the guarantee, in (0, 1).

    Returns
    -------
    float
        Q (negative when the band was too wide); inf when n is too small for the
        level ((n + 1)(1 - miscoverage) > n).
    """
    scores = np.sort(np.maximum(lower - y, y - upper))
    n = scores.size
    rank = int(np.ceil((n + 1) * (1.0 - miscoverage)))
    return float(scores[rank - 1]) if 1 <= rank <= n else float(np.inf)
