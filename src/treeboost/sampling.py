"""Seeded row and column sampling (SPEC §1.3): independent streams from one seed."""

from __future__ import annotations

import numpy as np

from ._dtypes import INDEX_DTYPE, NODE_DTYPE

#: names of the independent random streams drawn from one ``random_state``
STREAMS = ("binning", "rows", "columns", "nodes", "validation")


def make_streams(seed: int) -> dict[str, np.random.Generator]:
    """One ``Generator`` per entry of ``STREAMS``, independent, from an integer seed."""
    children = np.random.SeedSequence(seed).spawn(len(STREAMS))
    return {name: np.random.default_rng(child)
            for name, child in zip(STREAMS, children, strict=True)}


def sample_rows(n_samples: int, subsample: float, rng: np.random.Generator) -> np.ndarray:
    """Sorted row indices: a fraction ``subsample`` drawn without replacement."""
    if subsample >= 1.0:
        return np.arange(n_samples, dtype=INDEX_DTYPE)
    k = max(1, int(round(subsample * n_samples)))
    rows = rng.choice(n_samples, size=k, replace=False)
    rows.sort()
    return rows.astype(INDEX_DTYPE)


def sample_columns(n_features: int, fraction: float, rng: np.random.Generator) -> np.ndarray:
    """Sorted feature indices: a fraction of the columns, at least one."""
    if fraction >= 1.0:
        return np.arange(n_features, dtype=NODE_DTYPE)
    k = max(1, int(round(fraction * n_features)))
    cols = rng.choice(n_features, size=k, replace=False)
    cols.sort()
    return cols.astype(NODE_DTYPE)
