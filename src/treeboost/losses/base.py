"""The Loss interface: F0, gradients and hessians, leaf line search, link, metric.

A loss works on raw scores of shape (n_outputs, n_samples) (n_outputs is 1
except for softmax) and sees the training rows through one typed view,
``TrainingData`` (labels of any width, weights, query groups, extra per-row
columns, the stage's random stream). The engine calls, per fit, ``prepare(data)``
and ``init_raw(data)`` (F0); per stage, ``gradients(data, raw, gradient, hessian)``,
which fills float32 arrays and may return a per-stage context (Huber's delta);
and per tree, ``line_search(data, output, ...)`` for the leaves of output
``output`` (the loss's own line search; Newton leaves are set inside the tree
kernel). The defaults of these four adapt the per-row methods of the earlier
interface (``init_score(y, w)``, ``gradient_hessian(y, raw, w, g, h)``,
``leaf_values(y, raw, w, ...)``), which the built-in pointwise losses and user
losses written for it still implement. Finishing a tree (monotone bounds, then
``max_delta_step``) is the engine's, in one compiled function
(``_kernels.booster.finish_values``).
"""

from __future__ import annotations

import numpy as np

from .._kernels.booster import newton_values
from ..exceptions import DataError
from ._data import TrainingData

#: the largest |gradient| or |hessian| accepted at F0 (``Loss.check_scale``): gradients
#: are stored as float32, whose maximum is 3.4e38; the margin of 1000 leaves room for raw
#: scores that move away from F0 during training before a gradient overflows
GRADIENT_LIMIT = 3e35


def weighted_quantile(values: np.ndarray, weights: np.ndarray, alpha: float) -> float:
    """Minimiser of the weighted pinball loss: the weighted alpha-quantile.

    When the cumulative weight hits ``alpha * total`` exactly, every value
    between the two neighbouring order statistics is a minimiser; the
    midpoint is returned, so with unit weights and alpha = 0.5 this equals
    ``np.median``.
    """
    if values.size == 0:
        return 0.0
    order = np.argsort(values, kind="stable")
    v = values[order]
    cw = np.cumsum(weights[order])
    target = alpha * cw[-1]
    lo = min(int(np.searchsorted(cw, target, side="left")), v.size - 1)
    hi = min(int(np.searchsorted(cw, target, side="right")), v.size - 1)
    # guard against the cumulative sum's rounding at the exact boundary
    if not np.isclose(cw[lo], target, rtol=1e-12, atol=0.0):
        hi = lo
    return 0.5 * (float(v[lo]) + float(v[hi]))


def argmin_constant(objective, lo: float, hi: float) -> float:
    """argmin of ``objective(c)`` over [lo, hi] by bounded Brent's method."""
    from scipy.optimize import minimize_scalar  # imported on use: slow to import

    res = minimize_scalar(objective, bounds=(lo, hi), method="bounded",
                          options={"xatol": 1e-10})
    return float(res.x)


def check_hessian(name: str, y: np.ndarray, f: np.ndarray, hessian: np.ndarray) -> None:
    """Refuse a user loss's negative hessians (``LossError``); zeros are accepted.

    Leaves take the Newton step -G / (H + lambda), a step downhill only when
    H > 0; with negative hessians the split gains G^2 / H rank the worst
    splits first and the steps climb the loss. A zero hessian is fine at some
    rows (a loss flat in f far from the target, a row of weight 0): a node
    whose H + lambda is 0 gets the value 0, no step.
    """
    negative = hessian < 0
    if negative.any():
        from ..exceptions import LossError

        i = int(np.argmin(hessian))
        raise LossError(f"loss={name} gave negative hessians at {int(negative.sum())} of "
                        f"{hessian.size} rows (the lowest, {hessian[i]:.3g}, at y={y[i]:.3g}, "
                        f"f={f[i]:.3g}): Newton steps need a loss convex in f, "
                        "with hessians >= 0")


def newton_leaf_value(sum_g, sum_h, reg_lambda, reg_alpha):
    """-T(G) / (H + lambda), T the L1 soft-threshold (XGBoost eq. 5); 0 where H + lambda <= 0.

    Parameters
    ----------
    sum_g, sum_h : float or array-like
        Gradient and hessian sums of the nodes (the same shape).
    reg_lambda, reg_alpha : float
        L2 and L1 regularisation.

    Returns
    -------
    ndarray of float64
        The values, of the shape of ``sum_g`` (the arithmetic of the fused kernel,
        ``_kernels.booster.newton_values``).
    """
    g, h = np.broadcast_arrays(np.asarray(sum_g, dtype=np.float64),
                               np.asarray(sum_h, dtype=np.float64))
    out = np.empty(g.shape, dtype=np.float64)
    newton_values(np.ascontiguousarray(g).reshape(-1), np.ascontiguousarray(h).reshape(-1),
                  float(reg_lambda), float(reg_alpha), out.reshape(-1))
    return out


#: the values of ``Loss.leaf_line_search``: "newton" uses the base ``leaf_values``, the
#: others a ``leaf_values`` the loss overrides
LEAF_LINE_SEARCHES = ("newton", "exact", "backtracking")


def check_leaf_line_search(cls) -> None:
    """Raise ``TypeError`` if ``cls.leaf_line_search`` disagrees with its ``leaf_values``.

    Parameters
    ----------
    cls : type
        A ``Loss`` subclass.

    Raises
    ------
    TypeError
        If ``leaf_line_search`` is not one of ``LEAF_LINE_SEARCHES``, is
        ``"newton"`` while ``leaf_values`` is overridden, or is another
        search while ``leaf_values`` is the base Newton step.
    """
    search = getattr(cls, "leaf_line_search", None)
    label = f"loss class {cls.__qualname__} (name={getattr(cls, 'name', None)!r})"
    if search not in LEAF_LINE_SEARCHES:
        raise TypeError(f"{label}: leaf_line_search={search!r} must be one of "
                        f"{list(LEAF_LINE_SEARCHES)}")
    # the earlier interface's leaf_values or the TrainingData one's line_search
    method = ("line_search" if cls.line_search is not Loss.line_search
              else "leaf_values" if cls.leaf_values is not Loss.leaf_values else None)
    overridden = method is not None
    if search == "newton" and overridden:
        raise TypeError(f"{label} overrides {method} but declares "
                        "leaf_line_search='newton': declare 'exact' or 'backtracking' "
                        "(or drop the override)")
    if search != "newton" and not overridden:
        raise TypeError(f"{label} declares leaf_line_search={search!r} but does not "
                        "override leaf_values (nor line_search), which would take the "
                        "Newton step")


class Loss:
    """Base class of every loss; subclasses set the class attributes below.

    The engine talks to a loss through four methods, each given the training rows as
    one ``TrainingData`` (``data``): ``prepare(data)`` once per fit (sort, index,
    cache what the labels fix), ``init_raw(data)`` for F0, ``gradients(data, raw,
    gradient, hessian, context=None)`` at every stage, and ``line_search(data,
    output, raw, ...)`` for the leaves of one output's tree when ``leaf_line_search``
    is not ``"newton"``. Their defaults call the per-row methods ``init_score``,
    ``gradient_hessian`` and ``leaf_values``, so a loss may implement either form:
    the ``TrainingData`` methods when it reads more than one label column, the
    query groups, ``data.extra`` columns or ``data.rng``, or needs the output index;
    the per-row ones otherwise (``docs/guide/losses.rst``, "Custom losses").

    Attributes
    ----------
    task : str
        What the loss fits: ``"regression"``, ``"binary"``, ``"multiclass"``,
        ``"ranking"`` or ``"survival"`` (``metrics.loss_task``; the metrics and
        checks of that task apply). Derived from ``is_classification``,
        ``n_outputs`` and ``needs_group`` unless a subclass sets it.

        .. versionadded:: 0.2.0
    name : str
        Registry name.
    link : str
        ``"identity"``, ``"log"``, ``"logit"`` or ``"softmax"``: maps raw
        scores to predictions.
    is_classification : bool
        Whether targets are class indices.
    n_outputs : int
        Raw scores per row (the number of classes for softmax, else 1).
    leaf_line_search : str
        How leaf values are set, one of ``LEAF_LINE_SEARCHES``: ``"newton"``,
        the Newton step -G / (H + lambda) from the leaf's gradient and
        hessian sums (``leaf_values`` must not be overridden; the engine then
        computes leaves inside the tree kernel), ``"exact"``, a loss-specific
        minimiser over each leaf's rows (median, quantile, Friedman's Huber
        step), or ``"backtracking"``, a Newton step shortened while it raises
        the leaf's loss; both of the latter are implemented by overriding
        ``leaf_values``. Checked when a subclass is defined.
    max_delta_step : float or None
        The cap on |leaf value| (before shrinkage) used when the estimator's
        ``max_delta_step`` is None; None: no cap.
    needs_group : bool
        Whether the loss reads query groups (its ``task`` is then ``"ranking"``):
        ``train`` refuses a training set without groups, and the default
        ``gradients`` calls ``gradient_hessian`` with the keyword ``group_offsets``
        (``data.group_offsets``). A ``gradients`` override reads
        ``data.group_offsets`` itself.

        .. versionadded:: 0.1.0
    needs_rng : bool
        With ``needs_group``: whether the loss draws random numbers; the default
        ``gradients`` then also passes ``rng=data.rng`` to ``gradient_hessian``
        (see ``TrainingData.rng``). A ``gradients`` override reads ``data.rng``.

        .. versionadded:: 0.1.0
    gradients_read_every_row : bool
        Whether one row's gradient depends on the other rows through a stage
        context (Huber's delta, a quantile of every residual): such a loss has
        ``stage_context(y, raw, sample_weight)``, and ``gradients`` takes
        ``context=`` (computed from every member's rows when training over a
        ``treeboost.collective`` group).
    """

    name = "base"
    needs_group = False
    needs_rng = False
    gradients_read_every_row = False
    link = "identity"
    is_classification = False
    n_outputs = 1
    leaf_line_search = "newton"
    max_delta_step: float | None = None

    def __init_subclass__(cls, **kwargs):
        """Refuse a subclass whose ``leaf_line_search`` disagrees with ``leaf_values``."""
        super().__init_subclass__(**kwargs)
        check_leaf_line_search(cls)

    @property
    def task(self) -> str:
        """What the loss fits (see the class's attributes); a subclass may set it."""
        if self.needs_group:
            return "ranking"
        if self.is_classification:
            return "binary" if self.n_outputs == 1 else "multiclass"
        return "regression"

    # ---- the engine's interface: one view of the training data ----------
    def prepare(self, data: TrainingData) -> None:
        """Per-fit setup from the training rows, before F0 and the first stage.

        Called once per ``fit`` (and again by a continued fit) with the process's
        own rows, and before the check of an ``init_score``'s gradients: it may be
        called more than once with the same rows. The default does nothing; a loss
        sorts, indexes or caches here what its labels fix (Cox's order of the times,
        a ranking loss's queries).
        """

    def init_raw(self, data: TrainingData) -> np.ndarray:
        """F0, the constant raw score of shape (n_outputs,): ``init_score(y, weight)``."""
        return self.init_score(data.y, data.weight)

    def gradients(self, data: TrainingData, raw: np.ndarray, gradient: np.ndarray,
                  hessian: np.ndarray, context=None):
        """Fill ``gradient`` and ``hessian`` (float32 (n_outputs, n_samples)) at ``raw``.

        Parameters
        ----------
        data : TrainingData
            The training rows, with the stage's random stream (``data.rng``).
        raw : ndarray of shape (n_outputs, n_samples)
            The raw scores the stage's gradients are taken at.
        gradient, hessian : ndarray of shape (n_outputs, n_samples), dtype float32
            Filled in place.
        context : object, default=None
            The stage's context from every row (``stage_context``), given when
            training over a collective; None: the loss computes what it needs.

        Returns
        -------
        object or None
            A stage context that ``line_search`` receives (Huber's delta).

        Notes
        -----
        The default is the earlier interface's call: ``gradient_hessian(data.y, raw,
        data.weight, gradient, hessian)``, with ``context=`` when given, and with
        ``group_offsets=`` (and ``rng=``) for a loss with ``needs_group`` (and
        ``needs_rng``).
        """
        if context is not None:
            return self.gradient_hessian(data.y, raw, data.weight, gradient, hessian,
                                         context=context)
        if self.needs_group:
            extra = {"group_offsets": data.group_offsets}
            if self.needs_rng:
                extra["rng"] = data.rng
            return self.gradient_hessian(data.y, raw, data.weight, gradient, hessian,
                                         **extra)
        return self.gradient_hessian(data.y, raw, data.weight, gradient, hessian)

    def line_search(self, data: TrainingData, output: int, raw: np.ndarray, sample_indices,
                    leaf_starts, leaf_stops, sum_g, sum_h, context, reg_lambda,
                    reg_alpha) -> np.ndarray:
        """Value of each leaf of output ``output``'s tree, before shrinkage and caps.

        Parameters
        ----------
        data : TrainingData
            The training rows (over a collective: every member's rows of the tree).
        output : int
            The output (class, target) the tree serves, in [0, n_outputs).
        raw : ndarray of shape (1, n_samples)
            That output's raw scores.
        sample_indices, leaf_starts, leaf_stops : ndarray of int
            Leaf j's rows are ``sample_indices[leaf_starts[j]:leaf_stops[j]]``.
        sum_g, sum_h : ndarray of float64
            The leaves' gradient and hessian sums.
        context : object
            What ``gradients`` returned this stage.
        reg_lambda, reg_alpha : float
            L2 and L1 regularisation.

        Returns
        -------
        ndarray of float64
            One value per leaf. The engine then clips them to the monotone bounds
            and to ``max_delta_step``, and shrinks them.

        Notes
        -----
        The default is the earlier interface's ``leaf_values(data.y, raw,
        data.weight, ...)`` (the Newton step unless overridden).
        """
        return self.leaf_values(data.y, raw, data.weight, sample_indices, leaf_starts,
                                leaf_stops, sum_g, sum_h, context, reg_lambda, reg_alpha)

    # ---- targets ------------------------------------------------------
    def validate_target(self, y: np.ndarray) -> None:
        """Raise ``ValueError`` if ``y`` is outside the loss's domain."""

    # ---- the optimisation ---------------------------------------------
    def pointwise(self, y: np.ndarray, raw: np.ndarray) -> np.ndarray:
        """Loss of each row, shape (n_samples,)."""
        raise NotImplementedError

    def __call__(self, y, raw, sample_weight=None) -> float:
        """Weighted mean loss of raw scores ``raw`` (n_outputs, n_samples)."""
        values = self.pointwise(y, raw)
        return float(np.average(values, weights=sample_weight))

    def init_score(self, y: np.ndarray, sample_weight: np.ndarray) -> np.ndarray:
        """F0: the constant raw score minimising the weighted loss, shape (n_outputs,)."""
        return np.array([self._numeric_init(y, sample_weight)])

    def init_statistics(self, y: np.ndarray, sample_weight: np.ndarray):
        """Sums of the rows from which ``init_from_statistics`` gives F0, or None.

        For training over several processes (``treeboost.collective``): each sums its
        rows, the group adds the sums, and every process computes the same F0. None
        (the default): F0 is no function of sums (a median, a numeric minimum), and
        such a loss cannot train distributed yet.
        """
        return None

    def init_from_statistics(self, stats: np.ndarray) -> np.ndarray:
        """F0 from ``init_statistics`` summed over every row (see there)."""
        raise NotImplementedError(f"loss {self.name!r} has no F0 from sums")

    def _numeric_init(self, y, sample_weight) -> float:
        """argmin_c sum w L(y, c) by Brent's method, bracketed around the targets."""
        def objective(c):
            return self(y, np.full((1, y.size), c), sample_weight)

        lo, hi = float(np.min(y)), float(np.max(y))
        return argmin_constant(objective, *((lo, hi) if hi > lo else (lo - 1, lo + 1)))

    def gradient_hessian(self, y, raw, sample_weight, gradient, hessian):
        """Fill ``gradient`` and ``hessian`` (float32, like ``raw``); return a stage context."""
        raise NotImplementedError

    def gradient_scale(self, y: np.ndarray, sample_weight: np.ndarray) -> float:
        """The order of max |gradient| and |hessian| at F0, sample weights included.

        The default suits losses whose unweighted derivatives are O(1) at F0
        (classification, the losses with bounded gradients); user losses are
        left to the per-stage divergence check.
        """
        return float(np.max(sample_weight, initial=0.0))

    def check_scale(self, y: np.ndarray, sample_weight: np.ndarray) -> None:
        """Refuse targets or weights whose gradients would overflow float32 (``DataError``).

        Called once before training, so that a stage never computes infinite
        gradients and silently grows a constant or NaN model.
        """
        with np.errstate(over="ignore", invalid="ignore"):
            scale = self.gradient_scale(y, sample_weight)
        if not scale <= GRADIENT_LIMIT:  # also NaN
            lo, hi = (float(np.min(y)), float(np.max(y))) if y.size else (0.0, 0.0)
            w = float(np.max(sample_weight, initial=0.0))
            raise DataError(
                f"y in [{lo:.3g}, {hi:.3g}] with sample_weight up to {w:.3g} gives "
                f"gradients of order {scale:.3g} under loss='{self.name}', beyond "
                f"{GRADIENT_LIMIT:.0e}, the limit for float32 gradients: rescale "
                + ("sample_weight" if w > GRADIENT_LIMIT else "y" if w <= 1.0
                   else "y or sample_weight"))

    def leaf_values(self, y, raw, sample_weight, sample_indices, leaf_starts, leaf_stops,
                    sum_g, sum_h, context, reg_lambda, reg_alpha) -> np.ndarray:
        """Value of each leaf before shrinkage: the Newton step (``leaf_line_search``)."""
        return newton_leaf_value(sum_g, sum_h, reg_lambda, reg_alpha)

    @property
    def newton_leaves(self) -> bool:
        """Whether leaves take the plain Newton step (``leaf_line_search == "newton"``)."""
        return self.leaf_line_search == "newton"

    @property
    def exact_leaves(self) -> bool:
        """Whether leaves take the loss's own line search (not the plain Newton step)."""
        return self.leaf_line_search != "newton"

    # ---- predictions ----------------------------------------------------
    def inverse_link(self, raw: np.ndarray) -> np.ndarray:
        """Predictions (mean, probability) from raw scores of shape (n_outputs, n)."""
        if self.link == "identity":
            return raw[0]
        if self.link == "log":
            return np.exp(raw[0])
        if self.link == "logit":
            return 1.0 / (1.0 + np.exp(-raw[0]))
        raise NotImplementedError(self.link)

    def get_params(self) -> dict:
        """Parameters that, with ``name``, rebuild this loss (saved in model files)."""
        return {}
