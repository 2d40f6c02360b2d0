"""Tree: one fitted regression tree as a struct of arrays.

Node 0 is the root; a leaf has ``left == right == -1``. ``value`` holds
shrunk leaf values (learning rate applied), so a prediction is the sum of
leaf values over trees plus F0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._dtypes import NODE_DTYPE, SUM_DTYPE, X_DTYPE

#: per-node arrays and their dtypes, in model-file order
TREE_FIELDS = {
    "feature": NODE_DTYPE,  # split feature (-1 at leaves)
    "threshold": X_DTYPE,  # go left if x <= threshold
    "bin_threshold": NODE_DTYPE,  # go left if bin <= bin_threshold
    "missing_left": np.uint8,  # where NaN goes
    "is_categorical": np.uint8,  # 1: split on a set of categories
    "cat_bitset": np.uint32,  # (n_nodes, 8): bins of the categories going left
    "left": NODE_DTYPE,
    "right": NODE_DTYPE,
    "value": SUM_DTYPE,  # shrunk leaf value (leaves); node's Newton value (internal)
    "gain": SUM_DTYPE,  # split gain (0 at leaves)
    "count": np.int64,  # training rows reaching the node
    "cover": SUM_DTYPE,  # sum of hessians of those rows
}


@dataclass(frozen=True, eq=False)
class Tree:
    """A fitted tree: one array per field of ``TREE_FIELDS``, all of length n_nodes."""

    feature: np.ndarray
    threshold: np.ndarray
    bin_threshold: np.ndarray
    missing_left: np.ndarray
    is_categorical: np.ndarray
    cat_bitset: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    gain: np.ndarray
    count: np.ndarray
    cover: np.ndarray

    @property
    def n_nodes(self) -> int:
        """Number of nodes."""
        return int(self.left.size)

    @property
    def n_leaves(self) -> int:
        """Number of leaves."""
        return int(np.count_nonzero(self.left < 0))

    @property
    def is_leaf(self) -> np.ndarray:
        """Boolean mask of leaves."""
        return self.left < 0

    def depth(self) -> int:
        """Depth of the deepest leaf (a single-leaf tree has depth 0)."""
        depth = np.zeros(self.n_nodes, dtype=np.int64)
        for node in range(self.n_nodes):  # children always come after parents
            if self.left[node] >= 0:
                depth[self.left[node]] = depth[node] + 1
                depth[self.right[node]] = depth[node] + 1
        return int(depth.max())

    def to_dict(self) -> dict:
        """Arrays as lists, for the JSON model file."""
        return {name: getattr(self, name).tolist() for name in TREE_FIELDS}

    @classmethod
    def from_dict(cls, data: dict) -> Tree:
        """Inverse of ``to_dict`` (no validation: see ``serialization``)."""
        return cls(**{name: np.asarray(data[name], dtype=dtype)
                      for name, dtype in TREE_FIELDS.items()})
