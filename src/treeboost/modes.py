"""Boosting modes (SPEC §5) as strategies plugged into ``Booster``'s one stage loop.

A mode (``BoostingMode``) is chosen once from ``params.boosting`` by
``boosting_mode``, and the row sampling of the stages (``sampling.RowSampler``)
by ``row_sampler``; the stage loop calls their hooks and checks no mode
name. Per stage, in this order:

1. ``begin_stage`` -- before growing (DART: drop stages, take them out of the
   raw scores); returns the dropped stages.
2. ``gradient_scores`` -- the raw scores the gradients are taken at (rf: F0).
3. the row sampler's ``sample`` -- the stage's rows (subsample, GOSS, all).
4. ``shrinkage`` -- the new trees' shrinkage and the dropped trees' factor.
5. ``end_stage`` -- after the new trees were added (DART: rescale the dropped
   stages and put them back into the raw scores).

Once per fit: ``resume`` before the raw scores are rebuilt from the kept
trees (rf: undo the averaging), and ``end_training`` after the last stage
(rf: average the trees). ``truncate`` (early stopping), ``mean_scores``,
``scores_drift`` and ``stage_mean_factor`` (prediction) let a forest be the
mean of its trees.

The modes:

- ``"rf"``: a random forest on the same engine (LightGBM's ``rf``). Every tree
  is fitted to the gradients at F0 on its own row/column sample, with
  unshrunk leaf values; the model is F0 plus the *mean* of the trees, so
  the learning rate plays no part.
- ``"dart"``: dropout trees (Rashmi and Gilad-Bachrach 2015, "DART: Dropouts
  meet Multiple Additive Regression Trees"). Before each stage some earlier
  stages are dropped, the new tree is fitted to the gradients without them,
  and new and dropped trees are normalised so that the ensemble keeps its
  scale. The drop rules and the normalisation follow LightGBM's ``dart``
  (see ``dart_drops`` and ``dart_scales``).
- ``"goss"``: gradient-based one-side sampling (Ke et al. 2017), row
  sampling by |gradient| (``sampling.goss_sample``); the rest is gbdt. It is
  not a mode of its own: ``boosting="goss"`` is the gbdt mode with the GOSS
  row sampler (as LightGBM 4 made GOSS a ``data_sample_strategy``).
"""

from __future__ import annotations

import numpy as np

from .sampling import (
    ColumnSampler,
    GossSampler,
    NoSampler,
    RowSampler,
    SubSampler,
    goss_start,
)

__all__ = ["BOOSTING_MODES", "BoostingMode", "Dart", "RandomForest", "boosting_mode",
           "check_mode", "column_sampler", "dart_drops", "dart_scales", "goss_start",
           "mode_named", "row_sampler"]

#: the values of ``params.boosting``
BOOSTING_MODES = ("gbdt", "rf", "dart", "goss")
#: ``params.boosting`` -> (mode, row sampling); "goss" is gbdt with GOSS sampling
_RESOLVED = {"gbdt": ("gbdt", None), "rf": ("rf", None), "dart": ("dart", None),
             "goss": ("gbdt", "goss")}
_NOTHING_DROPPED = np.zeros(0, dtype=np.intp)


def check_mode(params) -> None:
    """Raise ``ValueError`` for parameter combinations a mode cannot train with.

    Parameters
    ----------
    params : BoostingParams
        Stage-loop parameters, with ``boosting`` and the modes' parameters.
    """
    p = params
    if p.boosting == "rf" and p.subsample >= 1.0 and p.colsample_bytree >= 1.0 \
            and p.grower.colsample_bynode >= 1.0:
        # every tree would be fitted to the same gradients on the same data: M copies
        raise ValueError("boosting='rf' needs row or column sampling: set subsample < 1, "
                         "colsample_bytree < 1 or colsample_bynode < 1 (with subsample=1 "
                         "and colsample=1 every tree of the forest is the same tree)")
    if p.boosting == "goss":
        if p.subsample < 1.0:
            raise ValueError(f"boosting='goss' samples rows by gradient itself and cannot "
                             f"be combined with subsample={p.subsample!r} < 1")
        if p.top_rate + p.other_rate > 1.0:
            raise ValueError(f"top_rate + other_rate = {p.top_rate + p.other_rate:g} must be "
                             "at most 1 with boosting='goss'")


def dart_drops(stage_weights: np.ndarray, params, rng: np.random.Generator) -> np.ndarray:
    """The earlier stages to drop before a DART stage (LightGBM ``DART::DroppingTrees``).

    With probability ``skip_drop`` nothing is dropped. Otherwise each earlier
    stage i is dropped with probability ``drop_rate`` (``uniform_drop``) or
    ``drop_rate * w_i / mean(w)`` with w the stages' current weights (so
    trees that carry more of the model are dropped more often), the rate
    being capped so that about ``max_drop`` stages are expected, and at most
    ``max_drop`` stages dropped (``max_drop <= 0``: no limit).

    Parameters
    ----------
    stage_weights : ndarray of shape (n_stages,)
        Current weight of each earlier stage (its shrinkage times every
        normalisation it went through).
    params : BoostingParams
        ``drop_rate``, ``skip_drop``, ``max_drop``, ``uniform_drop``.
    rng : numpy.random.Generator
        The stage's ``dart`` stream.

    Returns
    -------
    ndarray of int
        Indices of the dropped stages, increasing.
    """
    n = stage_weights.size
    if n == 0 or rng.random() < params.skip_drop:
        return np.zeros(0, dtype=np.intp)
    rate = params.drop_rate
    if params.uniform_drop:
        if params.max_drop > 0:
            rate = min(rate, params.max_drop / n)
        prob = np.full(n, rate)
    else:
        total = float(np.sum(stage_weights))
        inv_mean = n / total
        if params.max_drop > 0:
            # LightGBM's cap, kept as written there: max_drop * n / total**2
            rate = min(rate, params.max_drop * inv_mean / total)
        prob = rate * stage_weights * inv_mean
    dropped = np.flatnonzero(rng.random(n) < prob)
    if params.max_drop > 0:
        dropped = dropped[:params.max_drop]
    return dropped


def dart_scales(n_dropped: int, learning_rate: float, xgboost_dart_mode: bool):
    """(shrinkage of the new tree, factor applied to each dropped tree).

    With k dropped trees, LightGBM (and the DART paper) shrink the new tree
    by nu / (k + 1) and multiply every dropped tree by k / (k + 1), so that
    the dropped trees and the new one together weigh what the dropped trees
    weighed. ``xgboost_dart_mode`` uses XGBoost's normalisation instead:
    nu / (k + nu) and k / (k + nu). With nothing dropped the new tree is
    shrunk by nu, as in gbdt.
    """
    k, nu = float(n_dropped), learning_rate
    if n_dropped == 0:
        return nu, 1.0
    if xgboost_dart_mode:
        return nu / (k + nu), k / (k + nu)
    return nu / (k + 1.0), k / (k + 1.0)


# ---- the mode strategies -------------------------------------------------------------
class BoostingMode:
    """Plain gradient boosting (``"gbdt"``), and the hooks every mode implements.

    Modes hold no state: the stage weights and trees they act on are the
    booster's, and their parameters are read from ``booster.params``, which
    the callers may replace between fits.

    Attributes
    ----------
    name : str
        The mode's name.
    averaged : bool
        Whether the model is F0 plus the mean of its trees (rf) rather than
        their sum; the divergence bound of the raw scores is then the
        largest tree, not the sum of the trees.
    prefix_is_model : bool
        Whether the first stages of a model are the model those stages
        trained; early stopping keeps a prefix, so it needs this (not DART,
        whose later stages rescale earlier ones).
    stage_weights_state : bool
        Whether the stages' weights (``booster.stage_weights``) are state that
        continued training needs beyond the trees, and so saved (DART).
    """

    name = "gbdt"
    averaged = False
    prefix_is_model = True
    stage_weights_state = False

    def resume(self, booster) -> None:
        """Before a fit rebuilds the raw scores from the booster's kept trees (if any)."""

    def begin_stage(self, booster, state, rngs) -> np.ndarray:
        """Before a stage's trees are grown: the stages dropped from the raw scores.

        Parameters
        ----------
        booster : Booster
            The booster being trained.
        state : _TrainingState
            Its raw scores of the training rows and eval sets.
        rngs : Mapping of str to numpy.random.Generator
            The stage's streams (``sampling.stage_streams``).

        Returns
        -------
        ndarray of int
            Indices of the earlier stages taken out of ``state``'s raw scores,
            increasing; empty for modes that drop nothing.
        """
        return _NOTHING_DROPPED

    def gradient_scores(self, state) -> np.ndarray:
        """The raw scores, shape (n_outputs, n_samples), the gradients are taken at."""
        return state.raw

    def shrinkage(self, params, n_dropped: int) -> tuple[float, float]:
        """(shrinkage of the stage's new trees, factor of each dropped stage)."""
        return params.learning_rate, 1.0

    def end_stage(self, booster, state, dropped: np.ndarray, dropped_scale: float) -> None:
        """After the stage's trees were appended and added to the raw scores."""

    def end_training(self, booster) -> None:
        """After the last stage of a fit, before the callbacks' ``after_training``."""

    def truncate(self, booster, n_before: int) -> None:
        """After ``booster.trees`` was cut from ``n_before`` stages to fewer."""

    def mean_scores(self, init: np.ndarray, raw: np.ndarray, n_stages: int) -> np.ndarray:
        """The raw scores: ``init`` (F0 as a column, or per-row start scores) plus trees ``raw``."""
        return raw

    def scores_drift(self, drift: float, n_stages: int) -> float:
        """max |scores - F0| given ``drift`` = max |raw - F0| over ``n_stages`` stages."""
        return drift

    def stage_mean_factor(self, n_stages: int, stop: int) -> float | None:
        """The factor of the first ``stop`` of ``n_stages`` stored stages' sum, or None.

        None: the model's scores after ``stop`` stages are F0 plus the sum of
        their trees. A forest stores its trees divided by ``n_stages``; the
        mean of the first ``stop`` is then their sum times ``n_stages / stop``.
        """
        return None


class Dart(BoostingMode):
    """Dropout trees (``"dart"``): drops before the stage, renormalises after it."""

    name = "dart"
    prefix_is_model = False
    stage_weights_state = True

    def begin_stage(self, booster, state, rngs) -> np.ndarray:
        """Draw the dropped stages (``dart_drops``) and subtract them from the raw scores."""
        dropped = dart_drops(np.asarray(booster.stage_weights), booster.params, rngs["dart"])
        state.add_stages(booster, dropped, sign=-1.0)
        return dropped

    def shrinkage(self, params, n_dropped: int) -> tuple[float, float]:
        """``dart_scales``: nu / (k + 1) and k / (k + 1) (or XGBoost's) for k dropped."""
        return dart_scales(n_dropped, params.learning_rate, params.xgboost_dart_mode)

    def end_stage(self, booster, state, dropped: np.ndarray, dropped_scale: float) -> None:
        """Scale the dropped stages' trees and weights, and add them back to the scores."""
        if dropped.size:
            booster._scale_stages(dropped, dropped_scale)
            for m in dropped:
                booster.stage_weights[m] *= dropped_scale
            state.add_stages(booster, dropped, sign=1.0)


class RandomForest(BoostingMode):
    """A random forest (``"rf"``): unshrunk trees at F0, averaged at the end."""

    name = "rf"
    averaged = True

    def resume(self, booster) -> None:
        """Back to the unscaled trees (their sum), averaged again by ``end_training``."""
        if booster.trees:
            booster._scale_stages(range(len(booster.trees)), float(len(booster.trees)))

    def gradient_scores(self, state) -> np.ndarray:
        """F0 on every row: each tree of a forest is fitted to the gradients at F0."""
        return state.rf_raw

    def shrinkage(self, params, n_dropped: int) -> tuple[float, float]:
        """No shrinkage: a forest's trees are averaged, not shrunk."""
        return 1.0, 1.0

    def end_training(self, booster) -> None:
        """Divide every tree by the number of stages: F0 plus the mean of the trees."""
        booster._scale_stages(range(len(booster.trees)), 1.0 / len(booster.trees))

    def truncate(self, booster, n_before: int) -> None:
        """Rescale the kept trees to the mean of the kept stages."""
        if 0 < len(booster.trees) < n_before:
            booster._scale_stages(range(len(booster.trees)), n_before / len(booster.trees))

    def mean_scores(self, init: np.ndarray, raw: np.ndarray, n_stages: int) -> np.ndarray:
        """F0 plus the mean of the ``n_stages`` unscaled trees summed in ``raw``."""
        return init + (raw - init) / n_stages

    def scores_drift(self, drift: float, n_stages: int) -> float:
        """The drift of the mean over the ``n_stages`` earlier stages and the new one."""
        return drift / (n_stages + 1)

    def stage_mean_factor(self, n_stages: int, stop: int) -> float | None:
        """``n_stages / stop`` (None for ``stop`` = 0: F0 alone)."""
        return n_stages / stop if stop else None


_MODES = {"gbdt": BoostingMode(), "rf": RandomForest(), "dart": Dart()}


def boosting_mode(params) -> BoostingMode:
    """The mode strategy of ``params.boosting`` (``"goss"``: gbdt, sampled by GOSS).

    Parameters
    ----------
    params : BoostingParams
        Stage-loop parameters.

    Returns
    -------
    BoostingMode
        A shared, stateless strategy object.
    """
    return mode_named(params.boosting)


def mode_named(boosting: str) -> BoostingMode:
    """The mode strategy of a ``boosting`` value; two values share one when their models
    are of one family ("gbdt" and "goss": a GOSS model continues as gbdt and back)."""
    return _MODES[_RESOLVED[boosting][0]]


def row_sampler(params) -> RowSampler:
    """The row sampling of the stages: GOSS for ``boosting="goss"``, else ``subsample``.

    Parameters
    ----------
    params : BoostingParams
        ``boosting``, ``subsample``, ``learning_rate``, ``top_rate``, ``other_rate``.

    Returns
    -------
    RowSampler
        ``GossSampler``, ``SubSampler`` (``subsample < 1``) or ``NoSampler``.
    """
    if _RESOLVED[params.boosting][1] == "goss":
        return GossSampler(params.top_rate, params.other_rate, goss_start(params.learning_rate))
    if params.subsample < 1.0:
        return SubSampler(params.subsample)
    return NoSampler()


def column_sampler(params) -> ColumnSampler:
    """The column sampling of the stages and their trees' nodes.

    Parameters
    ----------
    params : BoostingParams
        ``colsample_bytree`` and ``grower.colsample_bynode``.

    Returns
    -------
    ColumnSampler
    """
    return ColumnSampler(params.colsample_bytree, params.grower.colsample_bynode)
