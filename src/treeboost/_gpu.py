"""``device="cuda"`` (issue 39 part 2): the trees' histograms and partitions on a CUDA GPU.

``make_plan`` resolves ``device`` here (``check_device``): "cpu" changes nothing;
"cuda" checks, before the fit grows anything, that the GPU kernels can run (numba-cuda
installed and a usable GPU, or numba-cuda's simulator), else raises one error naming
the parameter (never a silent CPU fit), refuses sparse training data by name, and
gives the plan a ``CUDAHistogramProvider``: the grower hands it each dense histogram
and each partition (``histogram_provider``, ``keeps_rows``), as it would the CPU's
builders.

What runs where:

* on the GPU: every node's histogram (``_kernels.cuda.histogram``), float sums or the
  packed integer sums of quantised gradients, and every node's row partition
  (``_kernels.cuda.partition``, the CPU's order): a tree's row indices stay on the
  device from its root to its last split;
* copied to the GPU: the binned features once per fit (per provider: one per plan),
  each tree's gradients and hessians (or packed quantised gradients) and its row
  indices once per tree, at its root; a categorical split's category bits;
* copied back: each histogram into the grower's slot, each partition's left row count,
  and the tree's rows, grouped by leaf, once at its end;
* on the CPU: the sibling by subtraction, the split search, the leaf values and the
  raw-score updates.

Same trees: with quantised gradients (``use_quantized_grad=True``, or "auto" where it
quantises) the integer sums are exact in any order, so the GPU's model is the CPU's bit
for bit. With float histograms the GPU adds each bin's float32 gradients in float64
with atomics, in whatever order its threads come: each sum is the CPU's within the
round-off of a sum in another order (|GPU - CPU| <= 2 (n - 1) 2**-53 sum|g| over a
bin's n rows; the counts, and unit hessians, are exact), so the model is the CPU's
within round-off, and on a real GPU may differ in the last bits from run to run. A
split whose gain ties another's within that round-off can then go the other way.
``device="cuda"`` does not change ``use_quantized_grad``: the same parameters make the
same model (up to that round-off) on either device.
"""

from __future__ import annotations

import weakref

import numpy as np

from ._kernels.cuda import cuda_available, numba_cuda_installed
from .histogram_provider import HistogramProvider, HistogramRequest, PartitionRequest

#: the values of ``device``
DEVICES = ("cpu", "cuda")
#: the CPU: no provider (the histograms built inside the compiled grower)
CPU = DEVICES[0]
#: threads per block and rows per block under the simulator (a Python thread per GPU
#: thread: small blocks keep it fast); None: the kernels' defaults on a GPU
SIMULATOR_LAUNCH = (16, 128)


def check_device(device, *, sparse: bool = False, available=None) -> str:
    """``device`` checked: "cpu", or "cuda" where the GPU kernels can run.

    Parameters
    ----------
    device : str
        The parameter.
    sparse : bool, default=False
        Whether the training data is sparse (refused with "cuda" for now).
    available : callable, default=None
        The availability check, ``() -> bool``; None: ``_kernels.cuda.cuda_available``
        (numba-cuda installed and a GPU, or its simulator). Tests inject one.

    Returns
    -------
    str
        ``device``.

    Raises
    ------
    ValueError
        If ``device`` is not one of ``DEVICES``, or sparse data is given with "cuda".
    RuntimeError
        If ``device="cuda"`` and the GPU kernels cannot run in this process.
    """
    if not isinstance(device, str) or device not in DEVICES:
        raise ValueError(f"device={device!r} must be one of {list(DEVICES)}")
    if device == CPU:
        return device
    if sparse:
        raise ValueError('device="cuda" takes dense training data only for now: sparse '
                         'input is not supported on the GPU yet (use device="cpu", or '
                         "densify X)")
    if not (cuda_available if available is None else available)():
        reason = ("numba-cuda is not installed (pip install 'treeboost[cuda]')"
                  if available is None and not numba_cuda_installed() else
                  "no usable CUDA GPU in this process (numba.cuda.is_available() is "
                  "False: no GPU, no driver, or a broken CUDA toolkit)")
        raise RuntimeError(f'device="cuda" needs numba-cuda and a CUDA GPU: {reason}; '
                           'device="cpu" trains on the CPU')
    return device


class CUDAHistogramProvider(HistogramProvider):
    """Each node's histogram and partition on the GPU (``_kernels.cuda``).

    The binned features go to the GPU once (per provider, that is per fit), each
    tree's gradients, feature list and row indices at its root; the rows are
    partitioned on the device node by node and copied back at the tree's end
    (``finish_tree``). Each histogram is built in a device buffer of every bin slot
    (allocated once, zeroed on the device) and copied back into ``request.out``.

    Parameters
    ----------
    threads, rows_per_block : int, default=None
        The histogram kernels' launch shape (threads per block, rows per block); None:
        the kernels' defaults, or ``SIMULATOR_LAUNCH`` under numba-cuda's simulator.
        They change only the order of the adds.
    keep_rows : bool, default=True
        Keep each tree's rows on the GPU and partition them there; False: partition on
        the CPU and copy each node's rows to the GPU for its histogram (the first cut,
        kept to measure one against the other).

    Attributes
    ----------
    calls : int
        Histograms built so far.
    partitions : int
        Partitions made on the GPU so far.
    """

    def __init__(self, threads: int | None = None, rows_per_block: int | None = None,
                 keep_rows: bool = True):
        self._launch = {"threads": threads, "rows_per_block": rows_per_block}
        self.keeps_rows = bool(keep_rows)
        self._kernels = None  # (kernel modules, numba.cuda, launch): loaded once
        self.calls = 0
        self.partitions = 0
        self.release()
        self._load()

    def _load(self):
        from ._kernels.cuda import histogram as ghist  # imports numba.cuda
        from ._kernels.cuda import partition as gpart
        from ._kernels.cuda import simulated

        threads, rows_per_block = self._launch["threads"], self._launch["rows_per_block"]
        sim = simulated()
        if threads is None and rows_per_block is None and sim:
            threads, rows_per_block = SIMULATOR_LAUNCH
        self._kernels = ((ghist, gpart), ghist.cuda,
                         {"threads": threads or ghist.THREADS,
                          "rows_per_block": rows_per_block})
        # (threads a block, rows a thread) of the partition: one row a thread on a GPU;
        # under the simulator the histograms' rows a block, in runs
        self._partition_launch = ((SIMULATOR_LAUNCH[0], SIMULATOR_LAUNCH[1] // SIMULATOR_LAUNCH[0])
                                  if sim else (gpart.THREADS, 1))
        # zeroing: on the device (fill_zero); under the simulator, where each GPU thread
        # is a Python thread, by a copy from a host array of zeros (same result)
        self._zero_by_copy = sim

    def release(self) -> None:
        """Drop the device copies (the data, the tree's derivatives and rows, the
        buffers): the GPU memory is freed once nothing else holds them. The next
        ``build`` copies again."""
        self._X = None  # (a weak reference to the host array, its device copy)
        self._derivatives = None  # the current tree's: (gradient or packed, hessian)
        self._features = None  # the current tree's features
        self._hist = {}  # device histograms by kind (float: False, packed: True)
        self._rows = None  # the current tree's row indices (keeps_rows)
        self._buffers = None  # the partition's scratch, for the largest tree so far
        self._bitset = None  # a categorical split's bits

    def __getstate__(self):
        # a fitted Booster keeps its plan: no device arrays in a pickle, and unpickling
        # imports nothing (numba.cuda is loaded again at the next build)
        return {"_launch": self._launch, "calls": self.calls, "partitions": self.partitions,
                "keeps_rows": self.keeps_rows}

    def __setstate__(self, state):
        self._launch, self.calls, self._kernels = state["_launch"], state["calls"], None
        self.partitions = state.get("partitions", 0)
        self.keeps_rows = state.get("keeps_rows", True)
        self.release()

    def _device_X(self, X):
        cuda = self._kernels[1]
        if self._X is None or self._X[0]() is not X:
            self._X = (weakref.ref(X), cuda.to_device(np.ascontiguousarray(X)))
        return self._X[1]

    def start_tree(self, rows: np.ndarray) -> None:
        if self._kernels is None:
            self._load()
        (_, gpart), cuda, _ = self._kernels
        self._rows = cuda.to_device(np.ascontiguousarray(rows))
        n = rows.shape[0]
        if self._buffers is None or self._buffers.n_max < n:
            self._buffers = gpart.PartitionBuffers(max(n, 1), *self._partition_launch)

    def partition(self, request: PartitionRequest) -> int:
        (_, gpart), cuda, _ = self._kernels
        if self._bitset is None:
            self._bitset = cuda.device_array(request.bitset.shape[0], dtype=np.uint32)
        if request.is_categorical:
            self._bitset.copy_to_device(np.ascontiguousarray(request.bitset, np.uint32))
        n_left = gpart.partition_rows(
            self._rows[request.start:request.stop], self._device_X(request.X_binned),
            request.feature, request.is_categorical, request.bin_threshold,
            request.missing_left, request.missing_bin, self._bitset, self._buffers)
        self.partitions += 1
        return int(n_left)

    def finish_tree(self, rows: np.ndarray) -> None:
        rows[:] = self._rows.copy_to_host()
        self._rows = None

    def build(self, request: HistogramRequest) -> None:
        if self._kernels is None:
            self._load()
        (ghist, _), cuda, launch = self._kernels
        X = request.X_binned
        device_X = self._device_X(X)
        quant = request.quant is not None
        if request.is_root or self._derivatives is None:  # a new tree: its derivatives
            if quant:
                self._derivatives = (cuda.to_device(request.quant.packed), None)
            else:
                self._derivatives = (
                    cuda.to_device(np.ascontiguousarray(request.gradient)),
                    None if request.hessian is None
                    else cuda.to_device(np.ascontiguousarray(request.hessian)))
        if request.is_root and request.all_rows:
            rows = None
        elif request.rows is None:  # kept on the device (keeps_rows)
            rows = self._rows[request.start:request.stop]
        else:
            rows = cuda.to_device(np.ascontiguousarray(request.rows))
        if request.is_root or self._features is None:  # the tree's (colsample_bytree)
            self._features = cuda.to_device(np.ascontiguousarray(request.features))
        features = self._features
        n_features = X.shape[0]
        hist = self._hist.get(quant)
        if hist is None:
            shape = (n_features, ghist.N_SLOTS) if quant else (n_features, ghist.N_SLOTS, 3)
            hist = self._hist[quant] = cuda.device_array(
                shape, dtype=np.int64 if quant else np.float64)
        if self._zero_by_copy:
            hist.copy_to_device(np.zeros(hist.shape, dtype=hist.dtype))
        else:
            ghist.fill_zero(hist)
        gradient, hessian = self._derivatives
        if quant:
            ghist.build_histogram_packed(device_X, rows, gradient, features, hist, **launch)
        else:
            ghist.build_histogram(device_X, rows, gradient, hessian, features, hist,
                                  **launch)
        host = hist.copy_to_host()
        request.out[...] = host[:, :request.out.shape[1]]
        self.calls += 1
