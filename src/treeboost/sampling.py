"""Seeded row and column sampling (SPEC §1.3): independent streams from one seed.

Binning and the validation split draw from ``make_streams(seed)``. Every stage
of the stage loop draws its rows, columns, node columns, GOSS sample and DART
drops from its own generators, ``stage_streams(seed, stage)``, derived from
(seed, stream, stage) alone: stage m draws the same numbers whether the model
is trained in one call or continued from a saved model (``init_model``,
``warm_start``), whatever the earlier stages drew.

The stage loop draws its rows through a row sampling strategy
(``RowSampler``: none, ``SubSampler`` for ``subsample``, ``GossSampler``),
chosen once per fit by ``modes.row_sampler``, and its features through a
``ColumnSampler`` (``modes.column_sampler``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ._dtypes import INDEX_DTYPE, NODE_DTYPE, SUM_DTYPE, readonly

#: names of the independent random streams drawn from one ``random_state``
#: (appended streams leave the earlier ones' draws unchanged: SeedSequence children by index)
STREAMS = ("binning", "rows", "columns", "nodes", "validation", "goss", "dart", "quantize",
           "objective")
#: the streams a stage of the stage loop draws from (``stage_streams``)
#: ("objective": a ranking loss's own draws, such as rank_xendcg's per-row noise)
STAGE_STREAMS = ("rows", "columns", "nodes", "goss", "dart", "quantize", "objective")


def make_streams(seed: int) -> dict[str, np.random.Generator]:
    """One ``Generator`` per entry of ``STREAMS``, independent, from an integer seed."""
    children = np.random.SeedSequence(seed).spawn(len(STREAMS))
    return {name: np.random.default_rng(child)
            for name, child in zip(STREAMS, children, strict=True)}


def stage_streams(seed: int, stage: int) -> Mapping[str, np.random.Generator]:
    """The generators of stage ``stage`` (0-based), one per entry of ``STAGE_STREAMS``.

    Stage m of stream s is the m-th child of the child ``make_streams`` gives
    s (``SeedSequence(seed).spawn(...)[s].spawn(...)[m]``), so streams stay
    independent of each other and of the stages before. Generators are made
    on first use: making one costs ~20 us, a stage of a small fit not much more.
    """
    return _StageStreams(seed, stage)


class _StageStreams(Mapping):
    """Read-only mapping name -> Generator of one stage, each made when first read."""

    def __init__(self, seed: int, stage: int):
        self._seed, self._stage, self._made = seed, stage, {}

    def __getitem__(self, name: str) -> np.random.Generator:
        if name not in self._made:
            if name not in STAGE_STREAMS:
                raise KeyError(name)
            self._made[name] = np.random.default_rng(np.random.SeedSequence(
                self._seed, spawn_key=(STREAMS.index(name), self._stage)))
        return self._made[name]

    def __iter__(self):
        return iter(STAGE_STREAMS)

    def __len__(self) -> int:
        return len(STAGE_STREAMS)


def sample_rows(n_samples: int, subsample: float, rng: np.random.Generator,
                return_outside: bool = False):
    """Sorted row indices: a fraction ``subsample`` drawn without replacement.

    With ``return_outside``, returns ``(rows, outside)``: ``outside`` holds the
    sorted rows not drawn, or is None when every row is drawn.
    """
    if subsample >= 1.0:
        rows = np.arange(n_samples, dtype=INDEX_DTYPE)
        return (rows, None) if return_outside else rows
    k = max(1, int(round(subsample * n_samples)))
    # shuffle=False draws the same set (the shuffle only reorders it); marking the
    # rows and reading them back sorts them in O(n): sorting cost as much as a tree
    drawn = np.zeros(n_samples, dtype=bool)
    drawn[rng.choice(n_samples, size=k, replace=False, shuffle=False)] = True
    rows = np.flatnonzero(drawn).astype(INDEX_DTYPE)
    if not return_outside:
        return rows
    outside = None if rows.size == n_samples else np.flatnonzero(~drawn).astype(INDEX_DTYPE)
    return rows, outside


def sample_columns(n_features: int, fraction: float, rng: np.random.Generator) -> np.ndarray:
    """Sorted feature indices: a fraction of the columns, at least one."""
    if fraction >= 1.0:
        return np.arange(n_features, dtype=NODE_DTYPE)
    k = max(1, int(round(fraction * n_features)))
    cols = rng.choice(n_features, size=k, replace=False)
    cols.sort()
    return cols.astype(NODE_DTYPE)


def goss_sample(score: np.ndarray, top_rate: float, other_rate: float,
                rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Gradient-based one-side sampling (Ke et al. 2017, LightGBM, Algorithm 2).

    Keeps the ``top_rate`` fraction of rows with the largest ``score``
    (|gradient|, summed over outputs) and draws ``other_rate * n_samples`` of
    the others uniformly without replacement.

    Parameters
    ----------
    score : ndarray of shape (n_samples,)
        |g| of each row.
    top_rate, other_rate : float
        a and b of the paper.
    rng : numpy.random.Generator
        Source of the draw of the other rows.

    Returns
    -------
    rows : ndarray of shape (n_kept,), dtype uint32
        Sorted rows of the stage (top and drawn).
    amplified : ndarray of shape (n_drawn,), dtype uint32
        The drawn rows, whose gradient and hessian get the factor (1 - a) / b.
    """
    n = score.size
    top_k = max(1, int(top_rate * n))
    other_k = min(int(other_rate * n), n - top_k)
    # stable sort of -score: ties at the threshold go to the lower row index
    order = np.argsort(-score, kind="stable")
    rest = order[top_k:]
    drawn = np.sort(rest[rng.choice(rest.size, size=other_k, replace=False)]) \
        if other_k > 0 else rest[:0]
    rows = np.sort(np.concatenate([order[:top_k], drawn]))
    return rows.astype(INDEX_DTYPE), drawn.astype(INDEX_DTYPE)


def goss_start(learning_rate: float) -> int:
    """First stage that samples by gradient: LightGBM uses every row for 1/nu stages.

    The early gradients are all large, so sampling them by size would keep an
    arbitrary subset; LightGBM's ``GOSS::Bagging`` skips sampling while
    ``iter < int(1 / learning_rate)``, and so do we.
    """
    return int(1.0 / learning_rate)


# ---- row sampling strategies of the stage loop ----------------------------------------
@dataclass(frozen=True)
class StageRows:
    """The rows a stage's trees are grown on.

    Attributes
    ----------
    rows : ndarray of shape (n_rows,), dtype uint32
        Sorted rows of the stage's sample; the caller copies them before a tree
        reorders them (``RowSampler`` hands every stage the same array).
    outside : ndarray of dtype uint32 or None
        Sorted rows not in it; None when every row is.
    weight : ndarray of shape (n_samples,)
        The sample weights the leaves' line search sees (GOSS: up-weighted).
    amplified : tuple (ndarray, float) or None
        GOSS: the up-weighted rows and their factor; None otherwise.
    """

    rows: np.ndarray
    outside: np.ndarray | None
    weight: np.ndarray
    amplified: tuple | None = None


class RowSampler:
    """No row sampling: every stage grows its trees on every row.

    A row sampler's ``sample`` is called once per stage, after the stage's
    gradients and hessians are computed and before its trees are grown.
    """

    #: every row, made on the first stage and handed to each (a fit's sampler is its own)
    _every_row: np.ndarray | None = None

    def sample(self, m: int, gradient: np.ndarray, hessian: np.ndarray,
               sample_weight: np.ndarray, rngs: Mapping) -> StageRows:
        """The rows of stage ``m``; may scale ``gradient``/``hessian`` in place.

        Parameters
        ----------
        m : int
            The stage, 0-based.
        gradient, hessian : ndarray of shape (n_outputs, n_samples)
            The stage's gradients and hessians, writable.
        sample_weight : ndarray of shape (n_samples,)
            The training weights, read-only.
        rngs : Mapping of str to numpy.random.Generator
            The stage's streams (``stage_streams``).

        Returns
        -------
        StageRows
        """
        # every stage's rows are the same: made once (np.arange of 500,000 rows each
        # stage was ~1% of a two-thread regression fit, all on the main thread)
        every = self._every_row
        if every is None or every.size != sample_weight.size:
            every, _ = sample_rows(sample_weight.size, 1.0, None, return_outside=True)
            self._every_row = every
        return StageRows(every, None, sample_weight)


#: the sampler of ``subsample=1``, ``boosting`` other than "goss"
NoSampler = RowSampler


class SubSampler(RowSampler):
    """Stochastic gradient boosting: a fraction of the rows, drawn without replacement.

    Parameters
    ----------
    fraction : float
        ``subsample``, below 1.
    span : tuple of int, default=None
        ``(offset, n_global)`` when these rows are rows ``offset`` .. ``offset + n - 1``
        of ``n_global`` trained over several processes: every process draws the same
        rows of all ``n_global`` (the draw one process would make) and keeps its own.
    """

    def __init__(self, fraction: float, span: tuple[int, int] | None = None):
        self.fraction = fraction
        self.span = span

    def sample(self, m, gradient, hessian, sample_weight, rngs) -> StageRows:
        """``sample_rows`` from the stage's ``rows`` stream."""
        n = sample_weight.size
        if self.span is None:
            rows, outside = sample_rows(n, self.fraction, rngs["rows"], return_outside=True)
            return StageRows(rows, outside, sample_weight)
        offset, n_global = self.span
        drawn = sample_rows(n_global, self.fraction, rngs["rows"])
        lo, hi = np.searchsorted(drawn, [offset, offset + n])
        rows = (drawn[lo:hi] - offset).astype(INDEX_DTYPE)
        kept = np.zeros(n, dtype=bool)
        kept[rows] = True
        outside = None if rows.size == n else np.flatnonzero(~kept).astype(INDEX_DTYPE)
        return StageRows(rows, outside, sample_weight)


class GossSampler(RowSampler):
    """Gradient-based one-side sampling (``goss_sample``) from stage ``start`` on.

    The drawn small-gradient rows get the factor (1 - a) / b on their
    gradient, hessian and (for the leaves' line search) weight. Stages
    before ``start`` (``goss_start``) use every row.

    Parameters
    ----------
    top_rate, other_rate : float
        a and b of the paper.
    start : int
        The first sampled stage.
    """

    def __init__(self, top_rate: float, other_rate: float, start: int):
        self.top_rate, self.other_rate, self.start = top_rate, other_rate, start

    def sample(self, m, gradient, hessian, sample_weight, rngs) -> StageRows:
        """Every row before ``start``; then the top rows and an up-weighted draw."""
        n = sample_weight.size
        if m < self.start:
            return RowSampler.sample(self, m, gradient, hessian, sample_weight, rngs)
        score = np.abs(gradient).sum(axis=0, dtype=SUM_DTYPE)
        rows, drawn = goss_sample(score, self.top_rate, self.other_rate, rngs["goss"])
        outside = None if rows.size == n else _complement(rows, n)
        factor = (1.0 - self.top_rate) / self.other_rate
        gradient[:, drawn] *= factor
        hessian[:, drawn] *= factor
        weight = sample_weight.copy()
        weight[drawn] *= factor  # the leaves' line search sees the same up-weighting
        return StageRows(rows, outside, readonly(weight), (drawn, factor))


# ---- column sampling strategy of the stage loop -------------------------------------------
class ColumnSampler:
    """Column sampling of the stages: ``colsample_bytree`` and ``colsample_bynode``.

    The trees of a stage (one per output) share the features drawn for the
    stage from its ``columns`` stream; the grower draws each node's share of
    them from the ``nodes`` stream. A fraction of 1 draws nothing (and makes
    no generator).

    Parameters
    ----------
    bytree, bynode : float
        ``colsample_bytree`` and ``colsample_bynode``, in (0, 1].
    """

    def __init__(self, bytree: float, bynode: float):
        self.bytree, self.bynode = bytree, bynode

    def tree_features(self, n_features: int, rngs: Mapping) -> np.ndarray:
        """Sorted features of the stage's trees (``sample_columns``), dtype int32."""
        return sample_columns(n_features, self.bytree,
                              rngs["columns"] if self.bytree < 1.0 else None)

    def node_rng(self, rngs: Mapping) -> np.random.Generator | None:
        """The generator the grower draws node features from; None: every feature."""
        return rngs["nodes"] if self.bynode < 1.0 else None


def _complement(rows: np.ndarray, n: int) -> np.ndarray:
    """Sorted rows of range(n) not in ``rows``."""
    mask = np.ones(n, dtype=bool)
    mask[rows] = False
    return np.flatnonzero(mask).astype(INDEX_DTYPE)
