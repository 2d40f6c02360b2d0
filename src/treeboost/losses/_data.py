"""``TrainingData``: the one view of the training rows a loss is given.

Built once per fit by the engine (``_stage_state._TrainingState``), handed to
``Loss.prepare`` and, with the stage's random stream, to ``Loss.gradients`` and
``Loss.line_search`` at every stage (``TrainingData.at_stage``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

import numpy as np

#: the name of the stage stream a loss draws from (``TrainingData.rng``)
OBJECTIVE_STREAM = "objective"


@dataclass(frozen=True, eq=False)
class TrainingData:
    """The training rows as a loss sees them: labels, weights, groups, extra columns, draws.

    Parameters
    ----------
    y : ndarray of shape (n_samples,) or (n_samples, n_labels), dtype float64
        The encoded labels (class indices for classification, signed times for
        ``loss="cox"``). A loss reads as many label columns as it needs.
    weight : ndarray of shape (n_samples,), dtype float64
        The positive sample weights (ones when none were given).
    group_offsets : ndarray of int64 or None, default=None
        Row offsets of the query groups (``Dataset.group_offsets``): query q is rows
        ``group_offsets[q]:group_offsets[q + 1]``. None without groups.
    extra : mapping of str to ndarray of shape (n_samples,), default={}
        Per-row float64 columns beyond the labels, by name (for instance the upper
        bounds of interval-censored times). Read-only.
    n_outputs : int, default=1
        Raw scores per row (the loss's ``n_outputs``).
    streams : mapping of str to numpy.random.Generator or None, default=None
        The stage's random streams (``sampling.stage_streams``), set by
        ``at_stage``; a loss reads its own through ``rng``.

    Notes
    -----
    Over a ``treeboost.collective`` group each process's view holds its own rows;
    what a loss computes from every row goes through ``Loss.stage_context``.
    """

    y: np.ndarray
    weight: np.ndarray
    group_offsets: np.ndarray | None = None
    extra: Mapping[str, np.ndarray] = field(default_factory=dict)
    n_outputs: int = 1
    streams: Mapping[str, np.random.Generator] | None = field(default=None, repr=False)

    def __post_init__(self):
        if not isinstance(self.extra, MappingProxyType):
            object.__setattr__(self, "extra", MappingProxyType(dict(self.extra)))

    @property
    def n_samples(self) -> int:
        """The number of rows."""
        return int(self.y.shape[0])

    @property
    def rng(self) -> np.random.Generator | None:
        """The stage's generator for a loss's own draws (rank_xendcg's noise), or None.

        One stream per stage, from ``random_state``: the same draws whatever
        ``n_jobs``, and the same stage draws the same when training continues. It
        is made when first read: a loss that draws nothing costs nothing.
        """
        return None if self.streams is None else self.streams[OBJECTIVE_STREAM]

    def at_stage(self, streams) -> TrainingData:
        """This view with the random ``streams`` of one stage (``rng`` reads them)."""
        return self if streams is self.streams else replace(self, streams=streams)

    def with_weight(self, weight) -> TrainingData:
        """This view with other row weights (a stage's sample, up-weighted by GOSS)."""
        return self if weight is self.weight else replace(self, weight=weight)
