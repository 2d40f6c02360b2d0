"""TreeGrower: the Python side of the one tree grower (``_kernels.grower``).

Best-first growth (Shi 2007; LightGBM's leaf-wise growth) runs in one kernel
call per tree, for dense and sparse data, bounded and unbounded trees, with
or without per-node column sampling, and one tree for several outputs
(``grow_multi``). The grower holds what lives across the
trees of a fit: the scratch buffers, the histogram pool and the parameter
records the kernel takes.
"""

from __future__ import annotations

import mmap
from dataclasses import dataclass

import numba
import numpy as np

from ._dtypes import (
    G_H_DTYPE,
    INDEX_DTYPE,
    MISSING_BIN,
    N_BINS,
    NODE_DTYPE,
    SUM_DTYPE,
    readonly,
)
from ._kernels.grower import (
    OPEN_ROOT,
    PARTITIONED,
    PHASE,
    _exact_sums,
    grow_tree,
    new_tree,
)
from ._kernels.histogram import (
    all_ones,
    all_ones_parallel,
    build_histograms_root,
    build_histograms_serial,
    build_root_histograms_multi,
)
from ._kernels.quantize import quantize_gradients
from ._kernels.records import (
    ALL_FEATURES,
    FeatureBins,
    MultiOutput,
    NodeColumns,
    QuantizedGradients,
    Resume,
    RootHistograms,
    Scratch,
    SparseBins,
    SplitParams,
    TreeParams,
)
from ._kernels.splitting import BITSET_WORDS, N_SPLIT_COLUMNS
from ._plan import ExecutionPlan, make_plan
from .binning import SparseBinned
from .constraints import constraints_record
from .histogram_provider import (
    grow_external,
    histogram_request,
    needs_histogram,
    new_external_tree,
)

_MULTI_ROOT_BLOCK = 2048  # rows gathered at a time
# Scratch's root_gradient and root_counts until a unit-hessian root's counts are kept
_NO_ROOT_COUNTS = (np.zeros((0, 0), dtype=SUM_DTYPE), np.zeros((0, 0), dtype=SUM_DTYPE))
_NO_ROOT = tuple(RootHistograms(np.zeros((1, 1, 2), dtype=SUM_DTYPE),
                                np.zeros((1, 1), dtype=SUM_DTYPE), -1))


def _kernel_list(items: list):
    """``items`` as a Numba typed list (a plain list when the kernels run as Python)."""
    if numba.config.DISABLE_JIT:
        return list(items)
    typed = numba.typed.List()
    for item in items:
        typed.append(item)
    return typed


@dataclass
class GrowerParams:
    """Tree-size and regularisation parameters of the grower (SPEC §1.4)."""

    max_leaf_nodes: int | None = 31
    max_depth: int | None = None
    min_samples_leaf: int = 20
    min_child_weight: float = 1e-3
    #: what min_samples_leaf counts in a split's children: "rows" or "hessian"
    leaf_count: str = "rows"
    min_split_gain: float = 0.0
    reg_lambda: float = 0.0
    reg_alpha: float = 0.0
    colsample_bynode: float = 1.0
    cat_l2: float = 10.0
    cat_smooth: float = 10.0
    max_cat_threshold: int = 32
    max_cat_to_onehot: int = 4
    max_cat_ordered: int = 32
    #: as the parameters (``treeboost.constraints``), by index; None: unconstrained
    monotone_constraints: object = None
    interaction_constraints: object = None
    monotone_constraints_method: str = "basic"
    #: quantised gradients (``_kernels.quantize``): splits chosen on integer histograms;
    #: "auto" is decided per fit by its plan (``_plan.make_plan``)
    use_quantized_grad: bool | str = "auto"
    num_grad_quant_bins: int = 4
    stochastic_rounding: bool = True


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
    #: every node's row slice, for line searches at internal nodes
    starts: np.ndarray | None = None
    stops: np.ndarray | None = None


def _grown(n_nodes, feature, bin_thr, missing_left, is_categorical, cat_bitset, left, right,
           gain, count, sum_g, sum_h, start, stop, constrained) -> GrownTree:
    """The GrownTree of ``grow_tree``'s arrays (capacity-long; the first n_nodes used)."""
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


def splittable_features(X_binned, n_bins_non_missing: np.ndarray) -> np.ndarray:
    """Which features can split at all: those with rows in two bins or more.

    A feature of one value bin splits only values from missing ones, and only
    if it has both; one without splits costs a histogram and a scan per node
    for nothing (hashed data: a million columns, nearly all empty). Features
    with two value bins or more are taken as splittable without a look.

    Returns
    -------
    ndarray of bool, shape (n_features,)
    """
    n_samples = X_binned.shape[1]
    usable = np.asarray(n_bins_non_missing) >= 2
    if usable.all():
        return usable
    if isinstance(X_binned, SparseBinned):
        # a column without stored entries has every row in its zero bin, one bin: only
        # the few-bin columns with entries are looked at (hashed data: thousands of a
        # million), with arrays of their number, not of the columns'
        col_ptr = X_binned.col_ptr
        few = np.flatnonzero(~usable & (col_ptr[1:] != col_ptr[:-1]))
        start, stop = col_ptr[few], col_ptr[few + 1]
        missing_before = np.concatenate(([0], np.cumsum(X_binned.bins == MISSING_BIN)))
        n_missing = missing_before[stop] - missing_before[start]
        stored = stop - start
        unstored = stored < n_samples  # rows in the zero bin
        zero_missing = X_binned.zero_bin[few] == MISSING_BIN
        has_missing = (n_missing > 0) | (unstored & zero_missing)
        has_value = (stored - n_missing > 0) | (unstored & ~zero_missing)
        usable[few] = has_missing & has_value
    else:
        for f in np.flatnonzero(~usable):
            missing = X_binned[f] == MISSING_BIN
            usable[f] = missing.any() and not missing.all()
    return usable


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
    n_rows_total : int, default=None
        Data-parallel training: the rows of the whole group, which size its trees
        and histograms alike on every member.
    narrowed : tuple of (int, ndarray), default=None
        ``(hist_bins, binned)`` of a grower of the same data and parameters, whose
        narrowed matrix is then shared rather than copied (``serial_twins``).
    plan : ExecutionPlan, default=None
        The fit's plan (``_plan.make_plan``), whose thresholds choose the serial or
        parallel kernels of every node; by default the plan of these rows on Numba's
        current thread count. Its ``quantize`` is not read: ``params`` says that.
    """

    def __init__(self, X_binned: np.ndarray, n_bins_non_missing: np.ndarray,
                 is_categorical: np.ndarray, params: GrowerParams,
                 n_rows_total: int | None = None, narrowed: tuple | None = None,
                 plan: ExecutionPlan | None = None):
        self.X_binned = X_binned
        # data-parallel training: the rows of the whole group, which bound its trees
        self.n_rows_total = n_rows_total
        self.n_bins_non_missing = np.ascontiguousarray(n_bins_non_missing, dtype=NODE_DTYPE)
        self.is_categorical = np.ascontiguousarray(is_categorical, dtype=np.uint8)
        self.params = params
        self.n_features, n_samples = X_binned.shape
        self._categorical = bool(self.is_categorical.any())
        self.sparse = isinstance(X_binned, SparseBinned)
        #: bins a histogram holds per feature, the last the missing bin's; and the
        #: dense binned matrix the kernels read, whose missing bin is that last one
        if self.sparse:
            self.hist_bins, self._binned = _narrow_hist_bins(
                self.n_bins_non_missing, self._categorical), X_binned
        elif narrowed is not None:
            self.hist_bins, self._binned = narrowed
        else:
            self.hist_bins, self._binned = self._dense_layout()
        self._feature_bins = FeatureBins(self.n_bins_non_missing, self.is_categorical,
                                         self.hist_bins - 1)
        # float() every scalar: an int reg_lambda=1 would compile another signature
        self._split_params = SplitParams(
            float(params.reg_lambda), float(params.reg_alpha), float(params.min_samples_leaf),
            float(params.min_child_weight), float(params.cat_l2), float(params.cat_smooth),
            int(params.max_cat_threshold), int(params.max_cat_to_onehot),
            1.0 if params.leaf_count == "hessian" else 0.0,
            float(params.max_cat_ordered))
        self._tree = self._scratch = None  # built at the first tree
        self._splittable = None  # splittable_features, found at the first tree
        self._multi_root = None
        #: a histogram's channels: 3 (gradient, hessian, count), or n_outputs + 2 for one
        #: tree of several outputs (``grow_multi``), whose scratch ``_multi`` holds
        self._channels = 3
        self._multi = None
        # the grower lives inside one fit, whose plan does not change
        if plan is None:
            plan = make_plan(n_rows_total or n_samples, sparse=self.sparse,
                             use_quantized_grad=params.use_quantized_grad)
        self.plan = plan
        #: (serial_partition_rows, serial_histogram_updates, n_threads), the kernel's
        self._serial_limits = (plan.serial_partition_rows, plan.serial_histogram_updates,
                               plan.n_threads)
        self._serial_twins: list[TreeGrower] = []  # serial_twins
        self._twin_records = None  # side_by_side_arguments' per-worker records
        self._sparse = None
        if self.sparse:
            bins, zero_bin = X_binned.bins, X_binned.zero_bin
            if self.hist_bins < N_BINS:  # the missing bin moves to the histogram's last
                bins, zero_bin = (_move_missing(a, self.hist_bins - 1) for a in (bins, zero_bin))
            self._sparse = SparseBins(X_binned.col_ptr, X_binned.rows, bins, zero_bin,
                                      np.zeros(n_samples, dtype=np.uint8),
                                      np.zeros(2, dtype=SUM_DTYPE))
            # the kernel's X_binned: the split feature's column is written there
            self._column = np.empty((1, n_samples), dtype=np.uint8)
        #: the kernel's constraints record, or None (constraints.constraints_record)
        self.constraints = constraints_record(
            params.monotone_constraints, params.interaction_constraints,
            params.monotone_constraints_method, self.is_categorical)
        # "auto" is decided where the loss is known (quantize_by_default); unresolved, off
        self.quantized = (not isinstance(params.use_quantized_grad, str)
                          and bool(params.use_quantized_grad))
        #: data-parallel training: the index of this process's first row among all the
        #: processes' (the stochastic rounding draws by global row), and the maxima of
        #: every process's |gradient| and hessian (negative: this process's own)
        self.row_offset = 0
        self.quant_maxima = np.full(2, -1.0)
        self._quant = None
        if self.quantized:
            if self.sparse:
                raise ValueError("use_quantized_grad=True takes dense input: convert the "
                                 "sparse matrix with .toarray() or set "
                                 "use_quantized_grad=False")
            # packed sums hold |sum g| <= n B / 2 and sum h <= n B in 32 bits each
            if (n_rows_total or n_samples) * int(params.num_grad_quant_bins) >= 2**31:
                raise ValueError(
                    f"num_grad_quant_bins={params.num_grad_quant_bins} is too large for "
                    f"{n_samples} rows: n_samples * num_grad_quant_bins must be below 2**31")
        # always a record, never None: the kernel then has one specialisation for
        # both (each optional record doubles grow_tree's compiled variants, ~10 s
        # each); k = ALL_FEATURES makes every node use all of the tree's features
        self._bynode = NodeColumns(np.zeros(1, dtype=np.uint64),
                                   np.full(1, ALL_FEATURES, dtype=np.int64),
                                   np.zeros(self.n_features, dtype=np.uint8),
                                   np.empty(self.n_features, dtype=NODE_DTYPE))

    def _dense_layout(self) -> tuple[int, np.ndarray]:
        """(hist_bins, binned) of dense data: the histograms narrowed where that saves memory.

        A dense histogram has N_BINS bins a feature, the last for the missing values
        (``MISSING_BIN`` in ``X_binned``). Where every feature has few value bins, most
        are bins no row falls in, yet committed: each feature's 6 KiB is written at
        both ends (30 rows x 20,000 features of 30 bins: 123 MB a histogram for 0.6 MB
        of binned data). Narrowed to the most value bins plus one, the missing bin is
        the last, and the kernels read a copy of ``X_binned`` with its missing bins
        rewritten so (the Dataset's own matrix is shared by other fits). The copy is
        made where it is smaller than the histograms' saving, rows <= slots x
        (N_BINS - hist_bins) x 24 bytes: wide data, not tall data, whose histograms are
        small next to its rows. A split search reads the value bins, then the missing
        bin, wherever it is: the trees are the same bits.
        """
        narrow = _narrow_hist_bins(self.n_bins_non_missing, self._categorical)
        if narrow == N_BINS:
            return N_BINS, self.X_binned
        saved = self.leaf_capacity() * (N_BINS - narrow) * 3 * np.dtype(SUM_DTYPE).itemsize
        if (self.n_rows_total or self.X_binned.shape[1]) > saved:
            return N_BINS, self.X_binned
        missing = self.X_binned == MISSING_BIN
        # a value bin past every feature's n_bins_non_missing (binned data the caller's
        # counts understate) would fall outside the narrow histograms: kept wide
        if np.max(self.X_binned, where=~missing, initial=0) >= narrow - 1:
            return N_BINS, self.X_binned
        binned = np.array(self.X_binned, order="C")  # C order: the kernels' one type
        binned[missing] = narrow - 1
        if not self.X_binned.flags.writeable:
            binned = readonly(binned)
        return narrow, binned

    @property
    def n_threads(self) -> int:
        """The fit's thread count (its plan's)."""
        return self.plan.n_threads

    def serial_twins(self, n: int) -> list[TreeGrower]:
        """``n`` growers of the same data and parameters that never start a parallel region.

        For trees grown side by side, one per thread (``Booster`` grows a
        multi-output stage's trees so): each has its own buffers, and its serial
        kernels add the same values in the same order as the parallel ones, so
        every tree is the one this grower would grow.
        """
        while len(self._serial_twins) < n:
            twin = TreeGrower(self.X_binned, self.n_bins_non_missing, self.is_categorical,
                              self.params, self.n_rows_total, (self.hist_bins, self._binned),
                              self.plan.serial())
            twin._splittable = self._splittable
            self._serial_twins.append(twin)
        return self._serial_twins[:n]

    def side_by_side_arguments(self, gradient, hessian, sample_indices, features, all_rows,
                               root, n_workers: int) -> tuple:
        """``_kernels.booster.grow_newton_trees``' arguments up to ``constraints``.

        One tree per output of ``gradient`` (shape (n_outputs, n_samples)), grown
        on ``n_workers`` threads, each with its own serial twin
        (``serial_twins``); ``root`` as for ``kernel_arguments``. Dense data,
        float histograms: quantised trees each round their own output's
        gradients first, and are grown in turn. Each tree gets its own copy of
        ``sample_indices``, which its growth reorders.
        """
        if self.sparse or self.quantized:
            raise ValueError("trees side by side need dense data and float histograms")
        twins = self.serial_twins(n_workers)
        for twin in twins:
            if twin._tree is None:
                twin._build_records()
            twin._bynode.k[0] = self._bynode_k(features)
        if self._twin_records is None or len(self._twin_records[0]) != n_workers:
            # typed lists: one compiled kernel whatever the number of workers
            self._twin_records = (_kernel_list([t._record_tuples[3] for t in twins]),
                                  _kernel_list([t._bynode for t in twins]))
        scratches, bynodes = self._twin_records
        first = twins[0]
        indices = np.empty((gradient.shape[0], sample_indices.shape[0]), dtype=INDEX_DTYPE)
        indices[:] = sample_indices
        multi, counts = _NO_ROOT[:2] if root is None else root
        return (self._binned, gradient, hessian, indices, features, bool(all_rows),
                *first._record_tuples[:3], scratches, multi, counts,
                first._general(sample_indices.shape[0], features.shape[0], all_rows),
                bynodes, first.constraints)

    def _bynode_k(self, features: np.ndarray) -> int:
        """Features a node draws with ``colsample_bynode`` (ALL_FEATURES without it)."""
        if self.params.colsample_bynode >= 1.0:
            return ALL_FEATURES
        return max(1, int(round(self.params.colsample_bynode * features.size)))

    def set_splittable(self, mask: np.ndarray) -> None:
        """Which features can split, as decided elsewhere (a training group's union)."""
        self._splittable = np.asarray(mask, dtype=bool)

    def splittable(self, features: np.ndarray) -> np.ndarray:
        """``features`` less those that cannot split (``splittable_features``).

        Leaving them out changes no tree: they never give a split. It does
        change ``colsample_bynode``, which then draws among the features that
        can split, as LightGBM's does. All of them unsplittable: ``features``
        unchanged (the tree is one leaf either way).
        """
        if self._splittable is None:
            self._splittable = splittable_features(self.X_binned, self.n_bins_non_missing)
        kept = features[self._splittable[features]]
        return kept if kept.size else features

    def grow(self, gradient: np.ndarray, hessian: np.ndarray, sample_indices: np.ndarray,
             features: np.ndarray, rng=None, all_rows: bool = False,
             quant_seed: int = 0) -> GrownTree:
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
            Source of the tree's ``colsample_bynode`` seed (one draw per tree).
        all_rows : bool, default=False
            True when ``sample_indices`` is every row in order, which lets the
            root histogram skip the index indirection.
        quant_seed : int, default=0
            The tree's seed of stochastic rounding, in [0, 2**64)
            (``use_quantized_grad``).

        Returns
        -------
        GrownTree
        """
        args = self.kernel_arguments(gradient, hessian, sample_indices, features, all_rows,
                                     rng=rng, quant_seed=quant_seed)
        provider = self.plan.histogram_provider
        if provider is None:  # the histograms built in the kernel (the default fit)
            return _grown(*grow_tree(*args, None))
        return _grown(*grow_external(args, provider))

    def grow_multi(self, gradient: np.ndarray, hessian: np.ndarray,
                   sample_indices: np.ndarray, features: np.ndarray, rng=None,
                   all_rows: bool = False) -> tuple[GrownTree, np.ndarray]:
        """Grow one tree for every output (``multi_strategy="multi_output_tree"``).

        The split gain is summed over the outputs (``_kernels.multi_output``); the
        tree is grown by ``grow_tree`` as any other, its histograms holding every
        output's gradient sums. Dense numerical data, float histograms, no
        constraints.

        Parameters
        ----------
        gradient : ndarray of shape (n_outputs, n_samples), dtype float32, C order
            Every output's derivatives (weighted).
        hessian : ndarray of shape (n_samples,), dtype float32
            The hessian every output shares (the row weight).
        sample_indices : ndarray of shape (n_rows,), dtype uint32
            Rows of this tree (sorted); reordered in place, grouped by leaf.
        features : ndarray of shape (n_used,), dtype int32
            Features this tree may split on.
        rng : numpy.random.Generator, default=None
            Source of the tree's ``colsample_bynode`` seed.
        all_rows : bool, default=False
            True when ``sample_indices`` is every row in order.

        Returns
        -------
        grown : GrownTree
            The tree; its ``sum_g`` is output 0's.
        sum_g : ndarray of shape (n_nodes, n_outputs)
            Every node's gradient sum of every output.

        Raises
        ------
        ValueError
            For sparse data, categorical features, quantised gradients, constraints or
            a histogram provider.
        """
        n_outputs = gradient.shape[0]
        if self._multi is None or self._multi.sum_g.shape[1] != n_outputs:
            self._start_multi(n_outputs)
        args = self.kernel_arguments(gradient[0], hessian, sample_indices, features, all_rows,
                                     rng=rng, unit_hessian=False)
        multi = self._multi._replace(gradient=gradient)
        grown = _grown(*grow_tree(*args, None, multi))
        return grown, multi.sum_g[:grown.left.size].copy()

    def _start_multi(self, n_outputs: int) -> None:
        """Histograms of ``n_outputs + 2`` channels and ``grow_multi``'s scratch."""
        unsupported = [name for name, used in (
            ("sparse input", self.sparse), ("categorical features", self._categorical),
            ("use_quantized_grad=True", self.quantized),
            ("monotone or interaction constraints", self.constraints is not None),
            # its scan bounds rows: the outputs' hessians give no one estimate of them
            ("leaf_count='hessian'", self._split_params.hessian_counts > 0.0),
            ("a histogram provider", self.plan.histogram_provider is not None)) if used]
        if unsupported:
            raise ValueError("multi_strategy='multi_output_tree' does not support "
                             f"{' or '.join(unsupported)}: use "
                             "multi_strategy='one_output_per_tree'")
        self._channels = n_outputs + 2
        self._build_records()
        capacity = 2 * self._tree.max_leaf_nodes - 1
        n_samples = self.X_binned.shape[1]
        self._multi = MultiOutput(
            np.zeros((n_outputs, 1), dtype=G_H_DTYPE),
            np.zeros((capacity, n_outputs), dtype=SUM_DTYPE),
            np.zeros((capacity, n_outputs), dtype=SUM_DTYPE),
            np.zeros((self.n_features, n_outputs), dtype=SUM_DTYPE),
            np.empty((n_samples, n_outputs + 1), dtype=G_H_DTYPE))

    def root_histograms(self, gradient, hessian, sample_indices, features,
                        all_rows=False):
        """The root histograms of every output of a stage, built in one pass.

        Parameters
        ----------
        gradient, hessian : ndarray of shape (n_outputs, n_samples), dtype float32
            The stage's derivatives (weighted).
        sample_indices : ndarray of shape (n_rows,), dtype uint32
            The stage's rows, sorted.
        features : ndarray of shape (n_used,), dtype int32
            The stage's features.
        all_rows : bool
            Whether ``sample_indices`` is every row: the bins' row counts are then
            counted once per fit (``_count_root_rows``), not at every stage.

        Returns
        -------
        tuple or None
            ``(multi, counts)`` to pass to ``kernel_arguments`` with each output's
            index, or None where the trees should build their own roots (one
            output, sparse data, or buffers over the plan's ``multi_root_bytes``).
        """
        n_outputs = gradient.shape[0]
        # quantised gradients: each tree quantises its own output, on scales of its own
        if self.sparse or self.quantized or n_outputs < 2 or (
                self.n_features * self.hist_bins * 2 * n_outputs * 8 > self.plan.multi_root_bytes):
            return None
        if self._multi_root is None or self._multi_root[0].shape[2] != 2 * n_outputs:
            # np.empty: only the used bins are ever written, and only they commit memory
            self._multi_root = (
                np.empty((self.n_features, self.hist_bins, 2 * n_outputs), dtype=SUM_DTYPE),
                np.empty((self.n_features, self.hist_bins), dtype=SUM_DTYPE),
                np.empty((self.plan.n_threads, _MULTI_ROOT_BLOCK, 2 * n_outputs),
                         dtype=G_H_DTYPE))
        multi, counts, ordered = self._multi_root
        if all_rows:  # the same rows every stage: the same counts
            if self._tree is None:
                self._build_records()
            if self._scratch.root_counts.shape[0] == 0:
                self._count_root_rows(sample_indices)
            counts = self._scratch.root_counts
        build_root_histograms_multi(self._binned, sample_indices, gradient, hessian,
                                    features, self.n_bins_non_missing, self.hist_bins - 1,
                                    ordered,
                                    multi, counts, not all_rows, self.plan.n_threads)
        return multi, counts

    def kernel_arguments(self, gradient, hessian, sample_indices, features,
                         all_rows, root=None, output=-1, rng=None, quant_seed=0,
                         resumed=False, unit_hessian=True) -> tuple:
        """The arguments of ``_kernels.grower.grow_tree`` for one tree, but ``resume``.

        ``root`` is what ``root_histograms`` returned for the stage and ``output``
        this tree's index in it; by default the tree builds its own root histogram.
        ``rng`` draws the tree's seed of ``colsample_bynode``; ``quant_seed`` (an int
        in [0, 2**64)) is the tree's seed of stochastic rounding
        (``use_quantized_grad``). ``resumed``: for a growth step by step
        (``grow_data_parallel``).

        Where every hessian is 1.0 (squared error and the other losses whose
        hessian is the row weight, unweighted), on dense data with float
        histograms, the hessian is passed as None: the histograms then add two
        floats a row instead of three, and the same sums (``_kernels.histogram``);
        not with ``unit_hessian=False`` (``grow_multi``, whose histograms read it).
        """
        if self._tree is None:  # the records are built once per grower, i.e. per fit
            self._build_records()
        X_binned, sparse = self._binned, self._sparse
        if sparse is not None:
            X_binned = self._column
            g, h = (gradient, hessian) if all_rows else (gradient[sample_indices],
                                                         hessian[sample_indices])
            sparse.root_sums[0] = g.sum(dtype=SUM_DTYPE)
            sparse.root_sums[1] = h.sum(dtype=SUM_DTYPE)
        if self.params.colsample_bynode < 1.0:
            self._bynode.seed[0] = rng.integers(0, 2**63, dtype=np.uint64)
            self._bynode.k[0] = self._bynode_k(features)
        if self._quant is not None:
            p = self.params
            quantize_gradients(gradient, hessian, int(p.num_grad_quant_bins),
                               bool(p.stochastic_rounding), np.uint64(quant_seed),
                               self._quant.packed, self._quant.scales,
                               np.uint64(self.row_offset), self.quant_maxima)
        if (sparse is None and self._quant is None and root is None and not resumed
                and unit_hessian and self._all_ones(hessian)):
            hessian = None
            if all_rows and self._scratch.root_counts.shape[0] == 0:
                self._count_root_rows(sample_indices)
        # the records as plain tuples (the kernel makes them records again): Numba
        # types a named tuple argument on a slow path at every call, ~1 us each
        return (X_binned, gradient, hessian, sample_indices, features, bool(all_rows),
                *self._record_tuples,
                _NO_ROOT if root is None else (root[0], root[1], int(output)),
                self._general(sample_indices.shape[0], features.shape[0], all_rows),
                sparse, self._bynode, self.constraints, self._quant)

    def _all_ones(self, hessian: np.ndarray) -> bool:
        """Whether every hessian is 1.0: checked on every thread for as many rows as
        the partition's (the check reads every row of a unit-hessian fit's trees)."""
        serial_partition_rows, _, n_threads = self._serial_limits
        if hessian.shape[0] < serial_partition_rows or n_threads == 1:
            return bool(all_ones(hessian))
        return bool(all_ones_parallel(hessian, n_threads))

    def _build_records(self) -> None:
        p = self.params
        n_samples = self.X_binned.shape[1]
        max_leaves = self.leaf_capacity()
        # sparse: a node's histogram is dropped once its split is found, so at most
        # the two children's are held at a time
        hist_pool = self._allocate_hist_pool(min(max_leaves, 2) if self.sparse else max_leaves)
        self._tree = TreeParams(max_leaves, -1 if p.max_depth is None else int(p.max_depth),
                                float(p.min_split_gain), *self._serial_limits)
        self._scratch = Scratch(
            np.empty(n_samples, dtype=INDEX_DTYPE), np.empty(n_samples, dtype=INDEX_DTYPE),
            np.empty(n_samples, dtype=G_H_DTYPE), np.empty(n_samples, dtype=G_H_DTYPE),
            np.empty((2, self.n_features, N_SPLIT_COLUMNS), dtype=SUM_DTYPE),
            np.empty((2, self.n_features, BITSET_WORDS), dtype=np.uint32), hist_pool,
            *_NO_ROOT_COUNTS)
        if self.quantized:
            # np.empty: only the used bins of the pool are written, and commit memory
            self._quant = QuantizedGradients(
                np.empty(n_samples, dtype=np.int64), np.empty(n_samples, dtype=np.int64),
                np.empty(hist_pool.shape[:2] + (self.hist_bins,), dtype=np.int64),
                np.ones(2, dtype=SUM_DTYPE))
        self._record_tuples = (tuple(self._feature_bins), tuple(self._tree),
                               tuple(self._split_params), tuple(self._scratch))

    def _count_root_rows(self, sample_indices: np.ndarray) -> None:
        """Count the rows of every feature's bins, once: a unit-hessian root's count and
        hessian columns, which every tree over all the rows shares (``_kernels.grower``).

        Counted by the kernel and in the order the root's gradients are summed, as
        the sums of 1.0 a full root pass adds: the same values.
        """
        shape = (self.n_features, self.hist_bins)
        counts = np.zeros(shape, dtype=SUM_DTYPE)
        ones = np.ones(sample_indices.shape[0], dtype=G_H_DTYPE)
        features = np.arange(self.n_features, dtype=NODE_DTYPE)
        _, histogram_updates_min, n_threads = self._serial_limits
        if sample_indices.shape[0] * self.n_features >= histogram_updates_min:
            build_histograms_root(self._binned, ones, None, features, counts, n_threads)
        else:
            s = self._scratch
            build_histograms_serial(self._binned, sample_indices, ones, None, features,
                                    s.ordered_gradient, s.ordered_hessian, counts)
        self._scratch = self._scratch._replace(root_gradient=np.zeros(shape, dtype=SUM_DTYPE),
                                               root_counts=counts)
        self._record_tuples = self._record_tuples[:3] + (tuple(self._scratch),)

    def _general(self, n_rows: int, n_used: int, all_rows: bool):
        """``grow_tree``'s ``general``: True, or None for a lean tree.

        Lean: dense data, no categorical feature, no node the kernel partitions
        reaches the parallel partition's threshold, and no node it builds a histogram
        for reaches the plan's ``lean_tree_updates`` (nor the parallel histograms'
        threshold, where that is higher: on one thread). Those nodes are the root
        (partitioned; its histogram built as a node's when it is a row sample) and the
        smaller children, at most half of their parent. The lean specialisation then
        grows the very same tree, compiled without the parallel node kernels and the
        categorical scan: its node histograms between the two thresholds are built by
        the serial kernel, which adds the same values in the same order.
        """
        if self._categorical or self.sparse:
            return True
        partition_rows_min, histogram_updates_min, _ = self._serial_limits
        largest = n_rows // 2 if all_rows else n_rows
        lean_updates = max(histogram_updates_min, self.plan.lean_tree_updates)
        if n_rows < partition_rows_min and largest * n_used < lean_updates:
            return None
        return True

    def leaf_capacity(self) -> int:
        """``max_leaf_nodes``, or fewer where no tree of these rows can have as many.

        Every leaf holds at least ``min_samples_leaf`` rows and a tree of depth d at most
        2**d leaves, so the cap changes no tree; it sizes the kernel's buffers (one
        histogram per leaf, 2 * leaves - 1 nodes), which ``max_leaf_nodes=10**9`` would
        otherwise make terabytes. Unbounded trees (``max_leaf_nodes=None``) get
        the cap.
        """
        p = self.params
        # over a group, every member must size its trees by all the rows: a member of
        # few rows would otherwise stop its trees early and leave the group
        n_samples = self.n_rows_total or self.X_binned.shape[1]
        cap = max(2, n_samples // max(1, int(p.min_samples_leaf)))
        if p.max_depth is not None:
            cap = min(cap, 2 ** min(int(p.max_depth), 62))
        if p.max_leaf_nodes is None:
            return int(cap)
        return int(min(int(p.max_leaf_nodes), cap))

    def _allocate_hist_pool(self, n_slots: int) -> np.ndarray:
        shape = (n_slots, self.n_features, self.hist_bins, self._channels)
        try:
            if self.sparse and hasattr(mmap, "MADV_NOHUGEPAGE"):
                return _small_page_array(shape, SUM_DTYPE)
            # one histogram per leaf at most; np.empty commits only the slots used
            return np.empty(shape, dtype=SUM_DTYPE)
        except MemoryError:
            gib = np.prod(shape, dtype=np.float64) * np.dtype(SUM_DTYPE).itemsize / 2**30
            raise MemoryError(
                f"max_leaf_nodes={self.params.max_leaf_nodes}: trees of up to {n_slots} "
                f"leaves over {self.n_features} features need {gib:.1f} GiB of histogram "
                "buffers, more than this machine can allocate; lower max_leaf_nodes or "
                "raise min_samples_leaf") from None


def _narrow_hist_bins(n_bins_non_missing: np.ndarray, categorical: bool) -> int:
    """Bins per feature of narrowed histograms: the most value bins plus one.

    A histogram of N_BINS bins per feature holds mostly bins no row can fall
    in where features have few values (counts in a bag of words: at most 16 of
    255 in ``bench_sparse.py --preset wide``, 20,000 features: 123 MB a
    histogram, against 8 MB). The missing bin becomes the last of the
    narrower histogram; the tree's splits (bin thresholds below each feature's
    value bins, the missing side) do not depend on where it is. Categorical
    data keeps N_BINS: its splits store the missing bin as bit 255 of a bitset.
    """
    if categorical:
        return N_BINS
    return min(N_BINS, int(n_bins_non_missing.max(initial=1)) + 1)


def _move_missing(bins: np.ndarray, missing: int) -> np.ndarray:
    """``bins`` with MISSING_BIN replaced by ``missing`` (the same array where none is)."""
    at = bins == MISSING_BIN
    if not at.any():
        return bins
    moved = bins.copy()
    moved[at] = missing
    return moved


def _small_page_array(shape: tuple, dtype) -> np.ndarray:
    """An uninitialised array whose memory is committed in 4 KiB pages, never 2 MiB.

    NumPy asks for transparent huge pages on large arrays, so that a write
    commits 2 MiB around it. A sparse pool is written in a few bins of a
    few features scattered over gigabytes (hashed data: ~2,000 of 2**20
    features): 3 GiB resident with huge pages against 0.8 GiB for LightGBM.
    """
    nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
    try:
        buffer = mmap.mmap(-1, max(nbytes, 1))
    except OSError as err:  # ENOMEM: the caller's MemoryError message applies
        raise MemoryError(str(err)) from err
    buffer.madvise(mmap.MADV_NOHUGEPAGE)
    return np.frombuffer(buffer, dtype=dtype, count=nbytes // np.dtype(dtype).itemsize
                         ).reshape(shape)


def grow_data_parallel(growers: list[TreeGrower], gradients, hessians, sample_indices,
                       features: np.ndarray, allreduce, reduce=None,
                       quant_seed: int = 0, provider=None) -> list[GrownTree]:
    """Grow one tree over shards of the rows: the grower's steps, histograms summed.

    The data-parallel form of ``TreeGrower.grow``: each shard (a worker) holds
    its own rows and grower; ``grow_tree`` runs on every shard with a
    ``resume`` record, stopping after each histogram it builds from the shard's
    rows, which ``allreduce`` sums across the shards before the split search,
    so that every shard takes the same decisions. Node row counts and sums come
    from the summed histograms; each shard partitions only its rows. With one
    shard and an identity ``allreduce`` this is ``TreeGrower.grow``, bit for bit.

    Parameters
    ----------
    growers : list of TreeGrower
        One per shard, over the shard's binned rows (the same bins everywhere), with
        the same parameters; dense data.
    gradients, hessians : list of ndarray of shape (n_shard_samples,), dtype float32
        Each shard's derivatives.
    sample_indices : list of ndarray, dtype uint32
        Each shard's rows of this tree (sorted); reordered in place, grouped by leaf.
    features : ndarray of shape (n_used,), dtype int32
        Features this tree may split on (the same on every shard).
    allreduce : callable
        ``allreduce(hists, features, node)`` sums the shards' histograms (float64
        arrays of shape (n_features, n_bins, 3), or with quantised gradients the packed
        int64 ones of shape (n_features, n_bins)) of node ``node`` over the used bins of
        ``features`` and writes the sum into each of them, in place.
    reduce : callable, default=None
        With quantised gradients (``use_quantized_grad=True``, the growers' maxima of
        |gradient| and hessian those of every shard, ``TreeGrower.quant_maxima``):
        ``reduce(arrays)`` sums, in place, the shards' arrays (one per shard, int64 or
        float64, the same shape): the row counts of the root and of each left child,
        and at the end the leaves' exact sums.
    quant_seed : int, default=0
        The tree's seed of stochastic rounding (quantised gradients).
    provider : histogram_provider.HistogramProvider, default=None
        Builds each shard's histograms before they are summed (a GPU's, say); None: the
        growers build them in kernel.

    Returns
    -------
    list of GrownTree
        Each shard's tree: the same nodes, and leaves over the shard's rows.
    """
    if any(g.sparse or g.params.colsample_bynode < 1.0 for g in growers):
        raise ValueError("grow_data_parallel takes dense data without colsample_bynode")
    if len({g.hist_bins for g in growers}) != 1:  # shards sized apart: n_rows_total unset
        raise ValueError("every shard's grower must have histograms of the same bins: "
                         "give each TreeGrower the group's rows as n_rows_total")
    quantized = growers[0].quantized
    if quantized and reduce is None:
        raise ValueError("grow_data_parallel with quantised gradients needs reduce")
    args = [g.kernel_arguments(gr, he, idx, features, False, quant_seed=quant_seed,
                               resumed=True)
            for g, gr, he, idx in zip(growers, gradients, hessians, sample_indices,
                                      strict=True)]
    if len({g._tree.max_leaf_nodes for g in growers}) != 1:
        raise ValueError("every shard's grower must bound the tree by the same number of "
                         "leaves (set max_leaf_nodes)")
    if provider is None:
        trees = [Resume(*new_tree(2 * g._tree.max_leaf_nodes - 1,
                                  g._scratch.hist_pool.shape[0], g.n_features,
                                  g.constraints)) for g in growers]
    else:  # stopping before each histogram, which the provider builds
        trees = [new_external_tree(a) for a in args]
    while True:
        built = {int(grow_tree(*a, resume)[0]) for a, resume in zip(args, trees, strict=True)}
        if len(built) != 1:
            raise RuntimeError(f"the shards stopped at different nodes: {sorted(built)}")
        node = built.pop()
        if node < 0:
            break
        if provider is not None and needs_histogram(trees[0]):
            for a, r in zip(args, trees, strict=True):
                provider.build(histogram_request(a, r, node))
        if not quantized:
            allreduce([g._scratch.hist_pool[r.nodes.slot[node]] for g, r in
                       zip(growers, trees, strict=True)], features, node)
            continue
        phase = trees[0].state.counters[PHASE]
        if phase == PARTITIONED:  # the left child's rows, before the smaller is chosen
            reduce([r.nodes.count[node:node + 1] for r in trees])
            continue
        if phase == OPEN_ROOT:
            reduce([r.nodes.count[0:1] for r in trees])
        allreduce([g._quant.pool[r.nodes.slot[node]] for g, r in
                   zip(growers, trees, strict=True)], features, node)
    if quantized:  # the leaves' sums of the exact derivatives, of every shard's rows
        _sum_exactly(trees, gradients, hessians, sample_indices, reduce)
    return [_grown(s.counters[0], s.feature, s.bin_threshold, s.missing_left,
                   s.node_categorical, s.cat_bitset, s.left, s.right, s.gain, n.count,
                   n.sum_g, n.sum_h, s.start, s.stop, n.constrained) for s, n in trees]


def _sum_exactly(trees, gradients, hessians, sample_indices, reduce) -> None:
    """Every node's row count and exact gradient and hessian sums over every shard.

    Each shard sums its rows of each leaf (``_exact_sums``); the leaves' sums are added
    over the shards, and an inner node's are its children's, as one process adds them.
    """
    for r, gr, he, idx in zip(trees, gradients, hessians, sample_indices, strict=True):
        s, n = r.state, r.nodes
        _exact_sums(gr, he, idx, s.counters[0], s.left, s.right, s.start, s.stop, n.count,
                    n.sum_g, n.sum_h, False)
    n_nodes = int(trees[0].state.counters[0])
    for name in ("count", "sum_g", "sum_h"):
        reduce([getattr(r.nodes, name)[:n_nodes] for r in trees])
    for r in trees:
        s, n = r.state, r.nodes
        for j in range(n_nodes - 1, -1, -1):
            if s.left[j] >= 0:
                a, b = s.left[j], s.right[j]
                n.count[j] = n.count[a] + n.count[b]
                n.sum_g[j] = n.sum_g[a] + n.sum_g[b]
                n.sum_h[j] = n.sum_h[a] + n.sum_h[b]


def used_bins(n_bins_non_missing: np.ndarray, features: np.ndarray,
              hist_bins: int = N_BINS) -> np.ndarray:
    """Flat indices (into a histogram's first two axes) of the bins a tree fills.

    A node histogram is (n_features, hist_bins, 3) of which only the listed features'
    value bins and missing bin (the last) are written (the rest is uncommitted memory);
    these are the bins a distributed tree sums across processes.
    """
    features = np.asarray(features, dtype=np.int64)
    nb = np.asarray(n_bins_non_missing, dtype=np.int64)[features]
    starts = features * hist_bins
    values = np.repeat(starts, nb) + (np.arange(nb.sum()) - np.repeat(np.cumsum(nb) - nb, nb))
    return np.concatenate([values, starts + hist_bins - 1])


def grow_with_collective(grower: TreeGrower, gradient: np.ndarray, hessian: np.ndarray,
                         sample_indices: np.ndarray, features: np.ndarray,
                         collective, quant_seed: int = 0) -> GrownTree:
    """Grow one tree over this process's rows, its histograms summed across processes.

    The per-process form of ``grow_data_parallel``: every process of a data-parallel
    training calls it with its own rows and grower (the same bins and parameters
    everywhere) and one ``treeboost.collective.Collective``; each histogram the
    grower builds from this process's rows is summed over the group (in rank order:
    the same bits on every process) before the split search, so every process takes
    the same decisions and returns the same nodes, with leaves over its own rows.

    Parameters
    ----------
    grower : TreeGrower
        Over this process's binned rows; dense data, no ``colsample_bynode``, no
        quantised gradients (as ``grow_data_parallel``).
    gradient, hessian : ndarray of shape (n_local_samples,), dtype float32
        This process's derivatives.
    sample_indices : ndarray, dtype uint32
        This process's rows of the tree (sorted); reordered in place, grouped by leaf.
    features : ndarray of shape (n_used,), dtype int32
        Features the tree may split on (the same on every process).
    collective : treeboost.collective.Collective
        The group; every member must call this function for the same tree.
    quant_seed : int, default=0
        The tree's seed of stochastic rounding, with quantised gradients (the scales
        from the group's maxima, the draws by the group's row index:
        ``grower.row_offset``), whose packed integer histograms add exactly.

    Returns
    -------
    GrownTree

    Raises
    ------
    RuntimeError
        If the processes reach different nodes (they were given different data
        than they claim, e.g. other bins); a ``CollectiveError`` if a process fails.
    """
    index = np.sort(used_bins(grower.n_bins_non_missing, features, grower.hist_bins))
    # the used bins mostly fill the span from the first to the last: then the span is
    # summed, copied as one slice, many times faster than gathered by index (0.27 ms a
    # node at 28 x 256). The unused bins inside it hold what earlier nodes left there,
    # which no split search reads: their sums are as unread
    if index.size and index[-1] - index[0] + 1 <= index.size + index.size // 2:
        run = slice(int(index[0]), int(index[-1]) + 1)
        index = np.arange(run.start, run.stop)
    else:
        run = index
    # one row more: the node each process is at, checked after the sum
    width, dtype = (1, np.int64) if grower.quantized else (3, SUM_DTYPE)
    packed = np.empty((index.size + 1, width), dtype=dtype)

    def allreduce(hists, _features, node):
        flat = hists[0].reshape(-1, width)
        packed[:-1] = flat[run]
        packed[-1] = node
        # the unread bins inside the span may hold leftovers whose sums overflow: no
        # warning for values nothing reads
        with np.errstate(over="ignore", invalid="ignore"):
            collective.allreduce_sum(packed)
        if packed[-1, 0] != node * collective.world_size or \
                packed[-1, -1] != packed[-1, 0]:
            raise RuntimeError(f"the processes of the group grow different nodes (this one "
                               f"node {node}): their data or bins differ")
        flat[run] = packed[:-1]

    def reduce(arrays):
        collective.allreduce_sum(arrays[0])

    if grower.quantized:  # the scales of every member's rows
        mine = np.array([np.max(np.abs(gradient), initial=0.0), np.max(hessian, initial=0.0)],
                        dtype=np.float64)
        grower.quant_maxima[:] = np.max(collective.allgather(mine), axis=0)
    return grow_data_parallel([grower], [gradient], [hessian], [sample_indices], features,
                              allreduce, reduce, quant_seed,
                              grower.plan.histogram_provider)[0]
