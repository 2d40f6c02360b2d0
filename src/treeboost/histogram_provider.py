"""The grower's histogram step handed out: "the histogram of node n over these rows".

A tree's histograms are built inside the compiled grower (``_kernels.grower.grow_tree``)
by default: a fit makes no round trip to Python per node, and this module is not used.
Where the fit's plan names a provider (``ExecutionPlan.histogram_provider``), the
grower is resumed step by step instead (``grow_tree``'s ``resume`` record, its
``EXTERNAL`` counter set): it stops before each dense histogram it needs (the root's,
then the smaller child's of each split), the provider fills it, and the grower goes on
from the filled histogram (the sibling by subtraction, the split search, the
partition) as it does in kernel. So the CPU's builder, a GPU's and the data-parallel
collective's (any provider, then the all-reduce: ``grower.grow_data_parallel``) are
providers of one step.

A provider may keep the tree's rows itself (``keeps_rows``: a GPU's, whose rows stay
on the device for the whole tree): the grower then also stops before each partition
(``EXTERNAL_PARTITIONS``, phase ``SPLIT``), the provider reorders the node's rows,
left child first, and returns the left child's row count (``partition``), and at the
tree's end it writes its rows, grouped by leaf, back into the tree's row array
(``finish_tree``), which the leaf values and the scores read. The partition is a
function of the rows and the split alone, so every provider leaves the grower's order.

A provider is an object with ``build(request)`` (``HistogramProvider``), which writes
``request.out``'s used bins: each feature ``f`` of ``request.features``, bins
``0 .. n_bins_non_missing[f] - 1`` and ``missing_bin``; float64 (gradient, hessian,
count) sums, or the packed int64 sums of quantised gradients (``request.quant``). The
rest of ``out`` is never read. ``CPUHistogramProvider`` builds with the very kernels the
grower uses in kernel: the same trees, bit for bit (tests/test_histogram_provider.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._kernels.grower import (
    EXTERNAL,
    EXTERNAL_HISTOGRAMS,
    EXTERNAL_PARTITIONS,
    N_LEFT,
    N_NODES,
    PARTITIONED,
    PHASE,
    SPLIT,
    _exact_sums,
    grow_tree,
    leaf_sums,
    new_tree,
)
from ._kernels.partition import partition_rows_serial
from ._kernels.provider import build_histogram
from ._kernels.records import FeatureBins, Resume, Scratch, TreeParams

# grow_tree's arguments (TreeGrower.kernel_arguments), by position
_X, _G, _H, _ROWS, _FEATURES, _ALL_ROWS, _BINS, _TREE, _SPLIT, _SCRATCH, _ROOT, _GENERAL, \
    _SPARSE, _BYNODE, _CONSTRAINTS, _QUANT = range(16)


@dataclass(frozen=True)
class HistogramRequest:
    """One histogram the grower needs: node ``node`` over ``rows``, into ``out``.

    Attributes
    ----------
    node : int
        The node's id in the tree (0: the root).
    rows : ndarray of shape (n_node_rows,), dtype uint32, or None
        The node's rows (indices into the data), its slice of the tree's row array;
        None for a provider that keeps the rows (``keeps_rows``), whose slice
        ``start:stop`` of its own rows they are.
    start, stop : int
        The node's slice of the tree's rows.
    is_root : bool
        Whether the node is the root (then ``rows`` is every row of the tree).
    all_rows : bool
        Whether the tree's rows are every row of the data, in order.
    out : ndarray
        Where to write: float64 (n_features, n_bins, 3), or with ``quant`` int64
        (n_features, n_bins), packed sums.
    X_binned : ndarray of shape (n_features, n_samples), dtype uint8
        The binned data, feature-major; the missing bin is ``missing_bin``.
    gradient, hessian : ndarray of shape (n_samples,), dtype float32
        Per-row derivatives; ``hessian`` None where every row's is 1.0 (the hessian
        column is then the count).
    quant : records.QuantizedGradients or None
        Quantised gradients: ``quant.packed``, each row's packed (g, h) pair, summed into
        ``out`` as int64.
    features : ndarray of shape (n_used,), dtype int32
        The features to build.
    n_bins_non_missing : ndarray of shape (n_features,)
        Each feature's value bins.
    missing_bin : int
        The missing values' bin.
    slot : int
        The grower's histogram slot of ``out`` (for the CPU provider).
    args : tuple
        ``grow_tree``'s arguments for the tree (for the CPU provider).
    """

    node: int
    rows: np.ndarray | None
    start: int
    stop: int
    is_root: bool
    all_rows: bool
    out: np.ndarray
    X_binned: np.ndarray
    gradient: np.ndarray
    hessian: np.ndarray | None
    quant: object
    features: np.ndarray
    n_bins_non_missing: np.ndarray
    missing_bin: int
    slot: int
    args: tuple


@dataclass(frozen=True)
class PartitionRequest:
    """One partition the grower needs (``keeps_rows`` providers): node ``node``'s rows,
    ``start:stop`` of the tree's, reordered left child first by its split.

    A row goes left where its bin ``b`` of ``feature`` is set in ``bitset``
    (categorical), else where ``b <= bin_threshold``, the missing bin where
    ``missing_left``.

    Attributes
    ----------
    node, start, stop : int
        The node, and its slice of the tree's rows.
    X_binned : ndarray of shape (n_features, n_samples), dtype uint8
        The binned data, feature-major.
    feature, bin_threshold, missing_bin : int
        The split's feature and threshold, and the missing values' bin.
    is_categorical, missing_left : bool
        Whether the split is a category set, and where missing values go.
    bitset : ndarray of shape (8,), dtype uint32
        The left categories' bits (categorical splits).
    """

    node: int
    start: int
    stop: int
    X_binned: np.ndarray
    feature: int
    bin_threshold: int
    missing_bin: int
    is_categorical: bool
    missing_left: bool
    bitset: np.ndarray


class HistogramProvider:
    """What a histogram provider does: fill a node's histogram (``build``); where it
    keeps the tree's rows (``keeps_rows``), also take them (``start_tree``), partition
    them (``partition``) and give them back (``finish_tree``)."""

    #: whether the provider keeps the tree's rows and partitions them itself
    keeps_rows = False

    def build(self, request: HistogramRequest) -> None:
        """Write the histogram of ``request.node`` over its rows into ``request.out``
        (its used bins)."""
        raise NotImplementedError

    def start_tree(self, rows: np.ndarray) -> None:
        """Take a new tree's rows (``keeps_rows``), before its root's histogram."""
        raise NotImplementedError

    def partition(self, request: PartitionRequest) -> int:
        """Reorder the node's rows, left child first, each side in its order; return
        the left child's row count (``keeps_rows``)."""
        raise NotImplementedError

    def finish_tree(self, rows: np.ndarray) -> None:
        """Write the tree's rows, as partitioned, into ``rows`` (``keeps_rows``)."""
        raise NotImplementedError


class CPUHistogramProvider(HistogramProvider):
    """The CPU's builders, as the grower calls them in kernel (``_kernels.provider``):
    the in-kernel trees, bit for bit, with a round trip to Python per histogram.

    Parameters
    ----------
    keep_rows : bool, default=False
        Keep the tree's rows and partition them here (with the grower's serial
        partition kernel), as a GPU's provider does on the device: the seam of
        ``keeps_rows``, on the CPU.
    """

    def __init__(self, keep_rows: bool = False):
        self.keeps_rows = bool(keep_rows)
        self._rows = self._buffers = None

    def build(self, request: HistogramRequest) -> None:
        a = request.args
        rows = request.rows if request.rows is not None else \
            self._rows[request.start:request.stop]
        build_histogram(a[_X], a[_G], a[_H], a[_ROWS], a[_FEATURES], a[_ALL_ROWS], a[_BINS],
                        a[_TREE], a[_SCRATCH], a[_ROOT], a[_GENERAL], a[_QUANT],
                        rows, int(request.slot), bool(request.is_root))

    def start_tree(self, rows: np.ndarray) -> None:
        self._rows = rows.copy()
        self._buffers = (np.empty_like(rows), np.empty_like(rows))

    def partition(self, request: PartitionRequest) -> int:
        return int(partition_rows_serial(
            self._rows[request.start:request.stop], request.X_binned, request.feature,
            request.is_categorical, request.bin_threshold, request.missing_left,
            request.missing_bin, request.bitset, *self._buffers))

    def finish_tree(self, rows: np.ndarray) -> None:
        rows[:] = self._rows
        self._rows = self._buffers = None


def new_external_tree(args: tuple, partitions: bool = False) -> Resume:
    """A tree to grow step by step, stopping before each histogram (``EXTERNAL``), and
    with ``partitions`` before each partition too."""
    tree = TreeParams(*args[_TREE])
    resume = Resume(*new_tree(2 * tree.max_leaf_nodes - 1,
                              Scratch(*args[_SCRATCH]).hist_pool.shape[0],
                              FeatureBins(*args[_BINS]).n_bins_non_missing.shape[0],
                              args[_CONSTRAINTS]))
    resume.state.counters[EXTERNAL] = EXTERNAL_PARTITIONS if partitions \
        else EXTERNAL_HISTOGRAMS
    return resume


def histogram_request(args: tuple, resume: Resume, node: int,
                      keeps_rows: bool = False) -> HistogramRequest:
    """The histogram a growth stopped at (``grow_tree`` returned ``node``) asks for;
    ``rows`` None where the provider ``keeps_rows``."""
    state, nodes = resume.state, resume.nodes
    slot = int(nodes.slot[node])
    quant = args[_QUANT]
    out = Scratch(*args[_SCRATCH]).hist_pool[slot] if quant is None else quant.pool[slot]
    bins = FeatureBins(*args[_BINS])
    start, stop = int(state.start[node]), int(state.stop[node])
    return HistogramRequest(
        node, None if keeps_rows else args[_ROWS][start:stop], start, stop, node == 0,
        bool(args[_ALL_ROWS]), out, args[_X], args[_G], args[_H], quant, args[_FEATURES],
        bins.n_bins_non_missing, int(bins.missing_bin), slot, args)


def partition_request(args: tuple, resume: Resume, node: int) -> PartitionRequest:
    """The partition a growth stopped at (phase ``SPLIT``, ``grow_tree`` returned
    ``node``) asks for."""
    state, nodes = resume.state, resume.nodes
    bins = FeatureBins(*args[_BINS])
    f = int(nodes.split_feature[node])
    return PartitionRequest(
        node, int(state.start[node]), int(state.stop[node]), args[_X], f,
        int(nodes.split_bin[node]), int(bins.missing_bin), bool(bins.is_categorical[f]),
        bool(nodes.split_ml[node]), nodes.split_bitset[node].copy())


def needs_histogram(resume: Resume) -> bool:
    """Whether the growth stopped for a histogram (not for a left child's row count,
    which a data-parallel growth sums: quantised gradients, phase PARTITIONED; nor for
    a partition, phase SPLIT)."""
    return resume.state.counters[PHASE] not in (PARTITIONED, SPLIT)


def grow_external(args: tuple, provider) -> tuple:
    """Grow one tree whose histograms ``provider`` builds; return what ``grow_tree``
    returns for the same arguments (``args``: ``TreeGrower.kernel_arguments``).

    The grower's steps are ``grow_tree``'s, resumed after each histogram; with quantised
    gradients the nodes' exact sums are refit at the end as ``grow_tree`` refits them.
    """
    if args[_SPARSE] is not None:
        raise ValueError("a histogram provider takes dense data: sparse trees build "
                         "their histograms in the grower")
    keeps = bool(getattr(provider, "keeps_rows", False))
    resume = new_external_tree(args, partitions=keeps)
    counters = resume.state.counters
    if keeps:
        provider.start_tree(args[_ROWS])
    while True:
        node = int(grow_tree(*args, resume)[0])
        if node < 0:
            break
        if counters[PHASE] == SPLIT:
            counters[N_LEFT] = provider.partition(partition_request(args, resume, node))
        elif needs_histogram(resume):
            provider.build(histogram_request(args, resume, node, keeps))
    if keeps:  # the leaf values and the scores read the rows, grouped by leaf
        provider.finish_tree(args[_ROWS])
    state, nodes = resume.state, resume.nodes
    n_nodes = int(state.counters[N_NODES])
    quant = args[_QUANT]
    if quant is not None:  # grow_tree's end of a quantised tree
        tree = TreeParams(*args[_TREE])
        gradient, hessian, rows = args[_G], args[_H], args[_ROWS]
        leaves_summed = (args[_GENERAL] is not None
                         and rows.shape[0] >= tree.serial_partition_rows)
        if leaves_summed:
            leaf_sums(gradient, hessian, rows, n_nodes, state.left, state.start, state.stop,
                      nodes.sum_g, nodes.sum_h, tree.n_threads)
        _exact_sums(gradient, hessian, rows, n_nodes, state.left, state.right, state.start,
                    state.stop, nodes.count, nodes.sum_g, nodes.sum_h, leaves_summed)
    return (n_nodes, state.feature, state.bin_threshold, state.missing_left,
            state.node_categorical, state.cat_bitset, state.left, state.right, state.gain,
            nodes.count, nodes.sum_g, nodes.sum_h, state.start, state.stop, nodes.constrained)
