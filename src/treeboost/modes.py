"""Boosting modes other than plain gradient boosting (SPEC §5), used by ``Booster.fit``.

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
  sampling by |gradient| (``sampling.goss_sample``); the rest is gbdt.
"""

from __future__ import annotations

import numpy as np

BOOSTING_MODES = ("gbdt", "rf", "dart", "goss")


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


def goss_start(learning_rate: float) -> int:
    """First stage that samples by gradient: LightGBM uses every row for 1/nu stages.

    The early gradients are all large, so sampling them by size would keep an
    arbitrary subset; LightGBM's ``GOSS::Bagging`` skips sampling while
    ``iter < int(1 / learning_rate)``, and so do we.
    """
    return int(1.0 / learning_rate)


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
