"""TreeGrower: grow one regression tree on gradients and hessians, leaf-wise.

Best-first growth (Shi 2007; LightGBM's leaf-wise growth): keep the
splittable leaves in a heap keyed by their best gain and always split the
leaf with the largest gain, until ``max_leaf_nodes`` leaves exist or no leaf
has a valid split. Each split partitions the node's slice of the row-index
array in place; the smaller child's histogram is built from its rows and the
larger child's is the parent's minus the smaller's (in the parent's buffer).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numba
import numpy as np

from ._dtypes import (
    G_H_DTYPE,
    HIST_G,
    HIST_H,
    INDEX_DTYPE,
    MISSING_BIN,
    N_BINS,
    NODE_DTYPE,
    SUM_DTYPE,
)
from ._kernels.grower import grow_tree
from ._kernels.histogram import (
    build_histograms,
    build_histograms_root,
    build_histograms_serial,
    build_root_histograms_multi,
)
from ._kernels.partition import partition_rows, partition_rows_serial
from ._kernels.records import FeatureBins, RootHistograms, Scratch, SplitParams, TreeParams
from ._kernels.sparse import build_histograms_sparse
from ._kernels.splitting import (
    BIN,
    BITSET_WORDS,
    GAIN,
    LEFT_C,
    LEFT_G,
    LEFT_H,
    MISSING_LEFT,
    N_SPLIT_COLUMNS,
    find_best_splits,
)
from .binning import SparseBinned
from .constraints import constraints_record

# Below these sizes a node is handled by the serial kernels: waking the thread
# pool costs more than the work (and much more on a loaded machine).
_SERIAL_PARTITION_ROWS = 32_768
_SERIAL_HISTOGRAM_UPDATES = 200_000
_ALWAYS_SERIAL = np.iinfo(np.int64).max


def _serial_limits() -> tuple[int, int]:
    """Node sizes from which the parallel partition and histogram kernels are used.

    On one thread (study workers, ``n_jobs=1``) never: the serial kernels add the
    same values in the same order and skip the parallel region's start-up. Read
    once per grower: ``numba.get_num_threads`` takes a lock (~15 us), as much as a
    small tree.
    """
    if numba.get_num_threads() == 1:
        return _ALWAYS_SERIAL, _ALWAYS_SERIAL
    return _SERIAL_PARTITION_ROWS, _SERIAL_HISTOGRAM_UPDATES


# A stage's shared root histograms (several outputs) are used up to this size of
# buffer: n_features x N_BINS x 2 n_outputs float64
_MULTI_ROOT_BYTES = 256 * 2**20
_MULTI_ROOT_BLOCK = 2048  # rows gathered at a time
_NO_ROOT = RootHistograms(np.zeros((1, 1, 2), dtype=SUM_DTYPE),
                          np.zeros((1, 1), dtype=SUM_DTYPE), -1)

# Dense data with a bounded number of leaves and no per-node column sampling is
# grown by one kernel call per tree (``_kernels.grower``); the Python loop below
# handles the rest. False forces the Python loop (tests compare the two).
_KERNEL_GROWTH = True


@dataclass
class GrowerParams:
    """Tree-size and regularisation parameters of the grower (SPEC §1.4)."""

    max_leaf_nodes: int | None = 31
    max_depth: int | None = None
    min_samples_leaf: int = 20
    min_child_weight: float = 1e-3
    min_split_gain: float = 0.0
    reg_lambda: float = 0.0
    reg_alpha: float = 0.0
    colsample_bynode: float = 1.0
    cat_l2: float = 10.0
    cat_smooth: float = 10.0
    max_cat_threshold: int = 32
    max_cat_to_onehot: int = 16
    #: as the parameters (``treeboost.constraints``), by index; None: unconstrained
    monotone_constraints: object = None
    interaction_constraints: object = None
    monotone_constraints_method: str = "basic"


class _Node:
    __slots__ = ("node_id", "start", "stop", "sum_g", "sum_h", "count", "depth", "hist",
                 "split")

    def __init__(self, node_id, start, stop, sum_g, sum_h, count, depth):
        self.node_id = node_id
        self.start = start
        self.stop = stop
        self.sum_g = sum_g
        self.sum_h = sum_h
        self.count = count
        self.depth = depth
        self.hist = None
        self.split = None  # (gain, feature, bin, missing_left, gl, hl, cl, bitset)


@dataclass
class GrownTree:
    """What the grower returns: node arrays in bin space and each leaf's rows.

    The rows of leaf j are ``sample_indices[leaf_starts[j]:leaf_stops[j]]``
    (``sample_indices`` reordered in place by the grower).
    """

    feature: np.ndarray
    bin_threshold: np.ndarray
    missing_left: np.ndarray
    is_categorical: np.ndarray
    cat_bitset: np.ndarray
    left: np.ndarray
    right: np.ndarray
    gain: np.ndarray
    count: np.ndarray
    sum_g: np.ndarray
    sum_h: np.ndarray
    leaf_nodes: np.ndarray
    leaf_starts: np.ndarray
    leaf_stops: np.ndarray
    #: each node's value bounds under monotone constraints (None without constraints)
    lower: np.ndarray | None = None
    upper: np.ndarray | None = None
    #: every node's row slice (kernel growth only), for line searches at internal nodes
    starts: np.ndarray | None = None
    stops: np.ndarray | None = None


class TreeGrower:
    """Grow trees on one binned training matrix, reusing buffers across trees.

    Parameters
    ----------
    X_binned : ndarray of shape (n_features, n_samples), dtype uint8, or SparseBinned
        Binned training data, feature-major (``BinMapper.transform``). For
        sparse data every node histogram is built from the stored entries (no
        subtraction trick, so only the two newest histograms are ever held).
    n_bins_non_missing : ndarray of shape (n_features,), dtype int32
        Value bins of each feature (``BinMapper.n_bins_non_missing_``).
    is_categorical : ndarray of shape (n_features,), dtype uint8
        1 for categorical features (``BinMapper.is_categorical_``).
    params : GrowerParams
        Tree size and regularisation.
    """

    def __init__(self, X_binned: np.ndarray, n_bins_non_missing: np.ndarray,
                 is_categorical: np.ndarray, params: GrowerParams):
        self.X_binned = X_binned
        self.n_bins_non_missing = np.ascontiguousarray(n_bins_non_missing, dtype=NODE_DTYPE)
        self.is_categorical = np.ascontiguousarray(is_categorical, dtype=np.uint8)
        self.params = params
        self.n_features, n_samples = X_binned.shape
        self._left_buffer = np.empty(n_samples, dtype=INDEX_DTYPE)
        self._right_buffer = np.empty(n_samples, dtype=INDEX_DTYPE)
        self._ordered_g = np.empty(n_samples, dtype=G_H_DTYPE)
        self._ordered_h = np.empty(n_samples, dtype=G_H_DTYPE)
        self._pool: list[np.ndarray] = []
        self._split_out = np.empty((self.n_features, N_SPLIT_COLUMNS), dtype=SUM_DTYPE)
        self._split_bitsets = np.empty((self.n_features, BITSET_WORDS), dtype=np.uint32)
        self._feature_bins = FeatureBins(self.n_bins_non_missing, self.is_categorical,
                                         MISSING_BIN)
        # float() every scalar: an int reg_lambda=1 would compile another signature
        self._split_params = SplitParams(
            float(params.reg_lambda), float(params.reg_alpha), float(params.min_samples_leaf),
            float(params.min_child_weight), float(params.cat_l2), float(params.cat_smooth),
            int(params.max_cat_threshold), int(params.max_cat_to_onehot))
        self._hist_pool = None
        self._tree = self._scratch = None
        self._multi_root = None
        # the grower lives inside one fit, whose thread count does not change
        self._serial_limits = _serial_limits()
        self._categorical = bool(self.is_categorical.any())
        self.sparse = isinstance(X_binned, SparseBinned)
        #: the kernel's constraints record, or None (constraints.constraints_record)
        self.constraints = constraints_record(
            params.monotone_constraints, params.interaction_constraints,
            params.monotone_constraints_method, self.is_categorical)
        if self.constraints is not None and not self.uses_kernel:
            # the Python loop below is being retired in favour of the kernel grower
            raise ValueError(
                "monotone_constraints and interaction_constraints need dense data, "
                "max_leaf_nodes not None and colsample_bynode=1.0 (got "
                f"{'sparse' if self.sparse else 'dense'} data, max_leaf_nodes="
                f"{params.max_leaf_nodes}, colsample_bynode={params.colsample_bynode})")
        if self.sparse:
            self._mark = np.zeros(n_samples, dtype=np.uint8)  # row -> node slot (1, 2)
            self._column = np.empty((1, n_samples), dtype=np.uint8)  # one feature's bins

    # ---- histogram buffers ---------------------------------------------------
    def _new_hist(self) -> np.ndarray:
        hist = self._pool.pop() if self._pool else np.empty(
            (self.n_features, N_BINS, 3), dtype=SUM_DTYPE)
        if not self.sparse:  # the sparse kernel zeroes the features it builds
            hist.fill(0.0)
        return hist

    def _release(self, node: _Node) -> None:
        if node.hist is not None:
            self._pool.append(node.hist)
            node.hist = None

    # ---- split search -----------------------------------------------------------
    def _can_split(self, node: _Node) -> bool:
        p = self.params
        if p.max_depth is not None and node.depth >= p.max_depth:
            return False
        return (node.count >= 2 * p.min_samples_leaf
                and node.sum_h >= 2 * p.min_child_weight)

    def _find_split(self, node: _Node, features: np.ndarray, rng) -> None:
        p = self.params
        if p.colsample_bynode < 1.0:
            k = max(1, int(round(p.colsample_bynode * features.size)))
            features = np.sort(rng.choice(features, k, replace=False)).astype(NODE_DTYPE)
        # buffers sized for every feature, sliced: a tree of small nodes calls this
        # thousands of times per fit, and allocations were a visible share of it
        out = self._split_out[:features.size]
        bitsets = self._split_bitsets[:features.size]
        find_best_splits(node.hist, features, self._feature_bins, float(node.sum_g),
                         float(node.sum_h), float(node.count), self._split_params, out, bitsets,
                         True, None)
        best = int(out[:, GAIN].argmax())  # first maximum: lowest feature wins ties
        gain = out[best, GAIN]
        if gain > p.min_split_gain and gain > 0.0:
            row = out[best]
            node.split = (gain, int(features[best]), int(row[BIN]), int(row[MISSING_LEFT]),
                          row[LEFT_G], row[LEFT_H], int(row[LEFT_C]), bitsets[best].copy())

    # ---- growth -------------------------------------------------------------------
    def grow(self, gradient: np.ndarray, hessian: np.ndarray, sample_indices: np.ndarray,
             features: np.ndarray, rng=None, all_rows: bool = False) -> GrownTree:
        """Grow one tree.

        Parameters
        ----------
        gradient, hessian : ndarray of shape (n_samples,), dtype float32
            Per-row derivatives of the loss (weighted).
        sample_indices : ndarray of shape (n_rows,), dtype uint32
            Rows of this tree (sorted); reordered in place, grouped by leaf.
        features : ndarray of shape (n_used,), dtype int32
            Features this tree may split on (``colsample_bytree``).
        rng : numpy.random.Generator, default=None
            Source of ``colsample_bynode`` draws.
        all_rows : bool, default=False
            True when ``sample_indices`` is every row in order, which lets the
            root histogram skip the index indirection.

        Returns
        -------
        GrownTree
        """
        p = self.params
        if self.uses_kernel:
            return self._grow_kernel(gradient, hessian, sample_indices, features, all_rows)
        root = _Node(0, 0, sample_indices.size, 0.0, 0.0, sample_indices.size, 0)
        if self.sparse:
            g, h = (gradient, hessian) if all_rows else (gradient[sample_indices],
                                                         hessian[sample_indices])
            root.sum_g, root.sum_h = float(g.sum(dtype=SUM_DTYPE)), float(h.sum(dtype=SUM_DTYPE))
            self._sparse_histograms([root], sample_indices, gradient, hessian, features)
        else:
            self._root_histogram(root, gradient, hessian, sample_indices, features, all_rows)
        nodes = [root]
        children: dict[int, tuple[int, int]] = {}
        heap: list[tuple[float, int]] = []
        if self._can_split(root):
            self._find_split(root, features, rng)
        if self.sparse:
            self._release(root)
        if root.split is not None:
            heapq.heappush(heap, (-root.split[0], 0))
        n_leaves = 1
        max_leaves = p.max_leaf_nodes if p.max_leaf_nodes is not None else np.inf
        while heap and n_leaves < max_leaves:
            _, node_id = heapq.heappop(heap)
            parent = nodes[node_id]
            left, right = self._split(parent, sample_indices, len(nodes))
            nodes += [left, right]
            children[node_id] = (left.node_id, right.node_id)
            n_leaves += 1
            if n_leaves < max_leaves:
                self._children_histograms(parent, left, right, sample_indices, gradient,
                                          hessian, features)
                for child in (left, right):
                    if child.hist is not None and self._can_split(child):
                        self._find_split(child, features, rng)
                    if self.sparse:
                        self._release(child)
                    if child.split is not None:
                        heapq.heappush(heap, (-child.split[0], child.node_id))
                    else:
                        self._release(child)
            self._release(parent)
        for node in nodes:
            self._release(node)
        return self._assemble(nodes, children)

    @property
    def uses_kernel(self) -> bool:
        """Whether ``grow`` builds each tree in one kernel call (``_kernels.grower``)."""
        p = self.params
        return (_KERNEL_GROWTH and not self.sparse and p.max_leaf_nodes is not None
                and p.colsample_bynode >= 1.0)

    def root_histograms(self, gradient, hessian, sample_indices, features):
        """The root histograms of every output of a stage, built in one pass.

        Parameters
        ----------
        gradient, hessian : ndarray of shape (n_outputs, n_samples), dtype float32
            The stage's derivatives (weighted).
        sample_indices : ndarray of shape (n_rows,), dtype uint32
            The stage's rows, sorted.
        features : ndarray of shape (n_used,), dtype int32
            The stage's features.

        Returns
        -------
        tuple or None
            ``(multi, counts)`` to pass to ``kernel_arguments`` with each output's
            index, or None where the trees should build their own roots (one
            output, no kernel growth, or buffers over ``_MULTI_ROOT_BYTES``).
        """
        n_outputs = gradient.shape[0]
        if not self.uses_kernel or n_outputs < 2 or (
                self.n_features * N_BINS * 2 * n_outputs * 8 > _MULTI_ROOT_BYTES):
            return None
        if self._multi_root is None or self._multi_root[0].shape[2] != 2 * n_outputs:
            # np.empty: only the used bins are ever written, and only they commit memory
            self._multi_root = (
                np.empty((self.n_features, N_BINS, 2 * n_outputs), dtype=SUM_DTYPE),
                np.empty((self.n_features, N_BINS), dtype=SUM_DTYPE),
                np.empty((_MULTI_ROOT_BLOCK, 2 * n_outputs), dtype=G_H_DTYPE))
        multi, counts, ordered = self._multi_root
        build_root_histograms_multi(self.X_binned, sample_indices, gradient, hessian,
                                    features, self.n_bins_non_missing, MISSING_BIN, ordered,
                                    multi, counts)
        return multi, counts

    def kernel_arguments(self, gradient, hessian, sample_indices, features,
                         all_rows, root=None, output=-1) -> tuple:
        """The arguments of ``_kernels.grower.grow_tree`` for one tree (``uses_kernel``).

        ``root`` is what ``root_histograms`` returned for the stage and ``output``
        this tree's index in it; by default the tree builds its own root histogram.
        """
        if self._tree is None:  # the records are built once per grower, i.e. per fit
            p = self.params
            max_leaves = self.leaf_capacity()
            self._hist_pool = self._allocate_hist_pool(max_leaves)
            self._tree = TreeParams(max_leaves, -1 if p.max_depth is None else int(p.max_depth),
                                    float(p.min_split_gain), *self._serial_limits)
            self._scratch = Scratch(self._left_buffer, self._right_buffer, self._ordered_g,
                                    self._ordered_h, self._split_out, self._split_bitsets,
                                    self._hist_pool)
        return (self.X_binned, gradient, hessian, sample_indices, features, bool(all_rows),
                self._feature_bins, self._tree, self._split_params, self._scratch,
                _NO_ROOT if root is None else RootHistograms(*root, int(output)),
                self._general(sample_indices.shape[0], features.shape[0], all_rows),
                self.constraints)

    def _general(self, n_rows: int, n_used: int, all_rows: bool):
        """``grow_tree``'s ``general``: True, or None for a lean tree.

        Lean: no categorical feature, and no node the kernel partitions or builds a
        node histogram for reaches the parallel kernels' thresholds. Those nodes
        are the root (partitioned; its histogram built as a node's when it is a
        row sample) and the smaller children, at most half of their parent. The
        lean specialisation then grows the very same tree, compiled without the
        parallel node kernels and the categorical scan.
        """
        if self._categorical:
            return True
        partition_rows_min, histogram_updates_min = self._serial_limits
        largest = n_rows // 2 if all_rows else n_rows
        if n_rows < partition_rows_min and largest * n_used < histogram_updates_min:
            return None
        return True

    def leaf_capacity(self) -> int:
        """``max_leaf_nodes``, or fewer where no tree of these rows can have as many.

        Every leaf holds at least ``min_samples_leaf`` rows and a tree of depth d at most
        2**d leaves, so the cap changes no tree; it sizes the kernel's buffers (one
        histogram per leaf, 2 * leaves - 1 nodes), which ``max_leaf_nodes=10**9`` would
        otherwise make terabytes.
        """
        p = self.params
        n_samples = self.X_binned.shape[1]
        cap = max(2, n_samples // max(1, int(p.min_samples_leaf)))
        if p.max_depth is not None:
            cap = min(cap, 2 ** min(int(p.max_depth), 62))
        return int(min(int(p.max_leaf_nodes), cap))

    def _allocate_hist_pool(self, max_leaves: int) -> np.ndarray:
        shape = (max_leaves, self.n_features, N_BINS, 3)
        try:
            # one histogram per leaf at most; np.empty commits only the slots used
            return np.empty(shape, dtype=SUM_DTYPE)
        except MemoryError:
            gib = np.prod(shape, dtype=np.float64) * np.dtype(SUM_DTYPE).itemsize / 2**30
            raise MemoryError(
                f"max_leaf_nodes={self.params.max_leaf_nodes}: trees of up to {max_leaves} "
                f"leaves over {self.n_features} features need {gib:.1f} GiB of histogram "
                "buffers, more than this machine can allocate; lower max_leaf_nodes or "
                "raise min_samples_leaf") from None

    def _grow_kernel(self, gradient, hessian, sample_indices, features, all_rows) -> GrownTree:
        (n_nodes, feature, bin_thr, missing_left, is_categorical, cat_bitset, left, right,
         gain, count, sum_g, sum_h, start, stop, constrained) = grow_tree(
             *self.kernel_arguments(gradient, hessian, sample_indices, features, all_rows))
        left = left[:n_nodes]
        leaves = np.flatnonzero(left < 0)
        return GrownTree(
            feature=feature[:n_nodes], bin_threshold=bin_thr[:n_nodes],
            missing_left=missing_left[:n_nodes], is_categorical=is_categorical[:n_nodes],
            cat_bitset=cat_bitset[:n_nodes], left=left, right=right[:n_nodes],
            gain=gain[:n_nodes], count=count[:n_nodes], sum_g=sum_g[:n_nodes],
            sum_h=sum_h[:n_nodes], leaf_nodes=leaves, leaf_starts=start[leaves],
            leaf_stops=stop[leaves],
            lower=None if constrained is None else constrained.lower[:n_nodes],
            upper=None if constrained is None else constrained.upper[:n_nodes],
            starts=start[:n_nodes], stops=stop[:n_nodes])

    def _split(self, parent: _Node, sample_indices: np.ndarray, next_id: int):
        _, feature, bin_thr, missing_left, gl, hl, cl, bitset = parent.split
        rows = sample_indices[parent.start:parent.stop]
        partition = partition_rows if rows.size >= self._serial_limits[0] else \
            partition_rows_serial
        X_binned, row_of_feature = self.X_binned, feature
        if self.sparse:
            self.X_binned.column(feature, self._column[0])
            X_binned, row_of_feature = self._column, 0
        n_left = partition(rows, X_binned, row_of_feature, bool(self.is_categorical[feature]),
                           bin_thr, bool(missing_left), MISSING_BIN, bitset,
                           self._left_buffer, self._right_buffer)
        mid = parent.start + int(n_left)
        left = _Node(next_id, parent.start, mid, gl, hl, cl, parent.depth + 1)
        right = _Node(next_id + 1, mid, parent.stop, parent.sum_g - gl, parent.sum_h - hl,
                      parent.count - cl, parent.depth + 1)
        return left, right

    def _children_histograms(self, parent, left, right, sample_indices, gradient, hessian,
                             features):
        if not (self._can_split(left) or self._can_split(right)):
            return
        if self.sparse:
            self._sparse_histograms([c for c in (left, right) if self._can_split(c)],
                                    sample_indices, gradient, hessian, features)
            return
        small, large = (left, right) if left.count <= right.count else (right, left)
        small.hist = self._new_hist()
        self._build(sample_indices[small.start:small.stop], gradient, hessian, features,
                    small.hist)
        # the larger child's histogram is the parent's minus the smaller's
        large.hist, parent.hist = parent.hist, None
        np.subtract(large.hist, small.hist, out=large.hist)

    def _root_histogram(self, root, gradient, hessian, sample_indices, features, all_rows):
        root.hist = self._new_hist()
        if all_rows:
            build_histograms_root(self.X_binned, gradient, hessian, features, root.hist)
        else:
            self._build(sample_indices, gradient, hessian, features, root.hist)
        totals = root.hist[features[0]].sum(axis=0)
        root.sum_g, root.sum_h = float(totals[HIST_G]), float(totals[HIST_H])

    def _sparse_histograms(self, nodes, sample_indices, gradient, hessian, features):
        """Histograms of one or two nodes (sums already known) from the stored entries."""
        totals = np.zeros((2, 3), dtype=SUM_DTYPE)
        for slot, node in enumerate(nodes):
            self._mark[sample_indices[node.start:node.stop]] = slot + 1
            totals[slot] = node.sum_g, node.sum_h, node.count
            node.hist = self._new_hist()
        data = self.X_binned
        build_histograms_sparse(data.col_ptr, data.rows, data.bins, data.zero_bin,
                                self.n_bins_non_missing, MISSING_BIN, self._mark,
                                gradient, hessian, features, totals, len(nodes),
                                nodes[0].hist, nodes[-1].hist)
        for node in nodes:
            self._mark[sample_indices[node.start:node.stop]] = 0

    def _build(self, rows, gradient, hessian, features, hist):
        build = build_histograms if rows.size * features.size >= self._serial_limits[1] \
            else build_histograms_serial
        build(self.X_binned, rows, gradient, hessian, features, self._ordered_g,
              self._ordered_h, hist)

    def _assemble(self, nodes: list[_Node], children: dict[int, tuple[int, int]]) -> GrownTree:
        is_categorical = self.is_categorical
        n = len(nodes)
        feature = np.full(n, -1, dtype=NODE_DTYPE)
        bin_thr = np.full(n, -1, dtype=NODE_DTYPE)
        missing_left = np.zeros(n, dtype=np.uint8)
        cat_bitset = np.zeros((n, BITSET_WORDS), dtype=np.uint32)
        left = np.full(n, -1, dtype=NODE_DTYPE)
        right = np.full(n, -1, dtype=NODE_DTYPE)
        gain = np.zeros(n, dtype=SUM_DTYPE)
        for node_id, (lc, rc) in children.items():
            g, f, b, ml, *_, bitset = nodes[node_id].split
            feature[node_id], bin_thr[node_id], missing_left[node_id] = f, b, ml
            cat_bitset[node_id] = bitset
            left[node_id], right[node_id], gain[node_id] = lc, rc, g
        leaves = np.flatnonzero(left < 0)
        return GrownTree(
            feature=feature, bin_threshold=bin_thr, missing_left=missing_left,
            is_categorical=np.where(feature >= 0, is_categorical[feature], 0).astype(np.uint8),
            cat_bitset=cat_bitset, left=left,
            right=right, gain=gain,
            count=np.array([nd.count for nd in nodes], dtype=np.int64),
            sum_g=np.array([nd.sum_g for nd in nodes], dtype=SUM_DTYPE),
            sum_h=np.array([nd.sum_h for nd in nodes], dtype=SUM_DTYPE),
            leaf_nodes=leaves,
            leaf_starts=np.array([nodes[j].start for j in leaves], dtype=np.int64),
            leaf_stops=np.array([nodes[j].stop for j in leaves], dtype=np.int64))
