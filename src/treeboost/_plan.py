"""One execution plan per fit: every choice of path that depends on the data's shape or
the thread count, made in one place (``make_plan``).

The grower, the booster and the softmax loss read their thresholds from the fit's
``ExecutionPlan`` rather than from module constants; ``train(..., plan=)`` injects one
(tests reach the parallel paths on small data so). The fitted ``Booster`` keeps the plan
it used as ``execution_plan`` (not written to the model file), and ``verbose`` logs it
once at the start of the fit. Every path of a plan grows the same model bit for bit: the
serial and parallel kernels add the same values in the same order, and the feature
shares of a parallel pass each sum their features over the rows in row order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

import numba
import numpy as np

from ._gpu import CPU, DEVICES, check_device

#: a threshold no node reaches: the serial kernels always
ALWAYS_SERIAL = int(np.iinfo(np.int64).max)

# Below these sizes a node is handled by the serial kernels: waking the thread
# pool costs more than the work (and much more on a loaded machine). The partition:
# the parallel kernel takes 0.6-0.75x the serial one's time on two threads from
# 300,000 rows (0.9x at 100,000). Fits on two threads with it from 131,072 rows,
# alternated in one process against never: regression 500,000 x 20 0.988x, binary
# 1,000,000 x 28 0.974x (from 65,536: 0.98x, 1.01x; from 32,768: 0.99x, 1.03x).
# Earlier runs, processes alternated, had found fits no faster with it from
# 100,000-200,000 rows (1.00-1.05x); those comparisons were noisier than the paired
# ones, and came before the raw scores were added on every thread.
SERIAL_PARTITION_ROWS = 131_072
# Histograms go parallel from 20,000 row x feature updates (1,000 rows of 20 features,
# ~25 us of serial work): against 200,000, fits on 2 threads took 0.94x the time
# (regression 400,000 x 20, 300 trees), 0.84x (binary 800,000 x 28, quantised, 150
# trees) and 0.97x (multiclass 80,000 x 20, 200 stages), medians of runs alternated in
# one process. Late in a fit most nodes are small, and the pool's threads, kept busy,
# also stay awake between nodes instead of sleeping through runs of serial ones.
SERIAL_HISTOGRAM_UPDATES = 20_000
# A tree none of whose nodes past the root reaches this many row x feature updates (nor
# the parallel partition) is grown by the lean specialisation of the tree kernel, which
# leaves out the parallel node kernels and the categorical scan: its nodes' histograms
# are then built serially, the same sums in the same order. The threshold was the
# histograms' own (200,000) until those went parallel from 20,000; a new user's first
# fit (10,000 x 20) then compiled the full kernel, about 1.7x the compilation
# (benchmarks/bench_first_fit.py), for nodes of at most 5,000 rows.
LEAN_TREE_UPDATES = 200_000
# A stage's shared root histograms (several outputs) are used up to this size of
# buffer: n_features x hist_bins x 2 n_outputs float64
MULTI_ROOT_BYTES = 256 * 2**20
# rows x features x outputs x stages of a fit from which its stages grow their trees
# side by side (below, in turn on one thread). The kernel that grows them side by side
# (grow_newton_trees) compiles in ~13 s, half as long again as a whole first multiclass
# fit otherwise (10,000 x 20, 4 classes, 100 stages, empty cache: 38.6 against 25.2
# s), and loads from the cache in ~0.7 s in every process. On two threads side by side
# took 0.62x the time of the trees in turn on one thread at 10,000 x 20 x 5 (100
# stages: 0.76 against 1.22 s), ~4.6 ns saved per row x feature x output and stage:
# from ~1.5e8 of them a fit repays the load
SIDE_BY_SIDE_WORK = 2**27
# scores (rows x classes) from which softmax's row maxima are subtracted on every thread
# (by NumPy below: starting the threads would cost more; the same bits either way)
PARALLEL_SHIFT_SCORES = 65_536
# use_quantized_grad="auto" quantises log-loss fits of at least this many rows. Measured
# with benchmarks/bench_quantized.py (4 levels, stochastic rounding): binary 800,000 x
# 28, 200 trees, fit 0.77x and test AUC -0.0005; multiclass 5 x 100,000 x 20, 500 trees,
# fit 0.68x and accuracy +0.0005; but regression 400,000 x 20 RMSE +0.95% (california
# +1.75%), and on the small classification sets of ../shared/datasets (3,000-52,000 rows)
# accuracy moved by -0.54% (letter) to +0.38% (mean -0.01%), for little time saved.
QUANTIZE_MIN_ROWS = 100_000


@dataclass(frozen=True)
class ExecutionPlan:
    """How one fit runs: its thread count and the sizes from which each parallel path is
    taken, all decided by ``make_plan``.

    Every path grows the same model bit for bit; the plan changes only the time a fit
    takes. The thresholds are in the units noted; ``ALWAYS_SERIAL`` (the largest int64)
    means never (a fit on one thread).

    Attributes
    ----------
    n_threads : int
        Threads of the fit (``n_jobs`` resolved); a parallel pass splits its work in as
        many shares.
    serial_partition_rows : int
        Rows of a node from which it is partitioned on every thread (and from which a
        tree's unit-hessian check and quantised leaf sums run there).
    serial_histogram_updates : int
        Row x feature updates of a node's histogram from which it is built on every
        thread (and the two children's split searches run side by side).
    lean_tree_updates : int
        A tree of numerical dense data whose nodes past the root stay below this many
        row x feature updates (and below ``serial_partition_rows`` rows) is grown by the
        lean kernel, compiled without the parallel node kernels and the categorical scan.
    multi_root_bytes : int
        Largest buffer of a multi-output stage's root histograms built in one pass
        (n_features x hist_bins x 2 n_outputs float64); above, each tree builds its own.
    side_by_side_work : int
        Rows x features x outputs x stages from which a multi-output stage's trees are
        grown side by side, one per thread (below, in turn on one thread).
    parallel_shift_scores : int
        Raw scores (rows x classes) from which the softmax's row maxima are subtracted
        on every thread.
    quantize_min_rows : int
        Rows from which ``use_quantized_grad="auto"`` quantises a log-loss fit of dense
        data.
    quantize : bool
        Whether this fit's trees are grown on quantised gradients: ``use_quantized_grad``
        when it is True or False, else the "auto" rule.
    histogram_provider : object or None
        None (the default): every tree builds its histograms inside the compiled grower.
        Else a ``histogram_provider.HistogramProvider`` the grower hands each dense
        histogram to (a GPU's, say), stopping for it; ``CPUHistogramProvider`` grows the
        same trees. Trees grown by ``TreeGrower.grow`` and the collective's take it; a
        stage's fused Newton trees (``booster``) still build their own.
    device : str
        The ``device`` parameter: "cpu", or "cuda", whose plan has a
        ``_gpu.CUDAHistogramProvider`` (``make_plan``; the GPU builds every dense
        histogram, the rest of the fit stays on the CPU).
    """

    n_threads: int = 1
    serial_partition_rows: int = ALWAYS_SERIAL
    serial_histogram_updates: int = ALWAYS_SERIAL
    lean_tree_updates: int = LEAN_TREE_UPDATES
    multi_root_bytes: int = MULTI_ROOT_BYTES
    side_by_side_work: int = SIDE_BY_SIDE_WORK
    parallel_shift_scores: int = PARALLEL_SHIFT_SCORES
    quantize_min_rows: int = QUANTIZE_MIN_ROWS
    quantize: bool = False
    histogram_provider: object = None
    device: str = CPU

    def __post_init__(self):
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "device":
                if value not in DEVICES:
                    raise ValueError(f"ExecutionPlan.device must be one of {list(DEVICES)}, "
                                     f"got {value!r}")
                continue
            if f.name == "histogram_provider":
                if value is not None and not callable(getattr(value, "build", None)):
                    raise TypeError("ExecutionPlan.histogram_provider must be None or have "
                                    f"a build(request) method, got {value!r}")
                continue
            if f.name == "quantize":
                if not isinstance(value, (bool, np.bool_)):
                    raise TypeError(f"ExecutionPlan.quantize must be a bool, got {value!r}")
                object.__setattr__(self, "quantize", bool(value))
                continue
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                raise TypeError(f"ExecutionPlan.{f.name} must be an int, got {value!r}")
            if value < (1 if f.name == "n_threads" else 0):
                raise ValueError(f"ExecutionPlan.{f.name}={value} must be "
                                 f"{'at least 1' if f.name == 'n_threads' else 'non-negative'}")
            object.__setattr__(self, f.name, int(value))

    def serial(self) -> ExecutionPlan:
        """This plan on one thread: no parallel region is ever started.

        Returns
        -------
        ExecutionPlan
            A copy with one thread and every node on the serial kernels (the plan of a
            tree grown beside others, ``TreeGrower.serial_twins``).
        """
        return replace(self, n_threads=1, serial_partition_rows=ALWAYS_SERIAL,
                       serial_histogram_updates=ALWAYS_SERIAL)

    def describe(self) -> str:
        """The plan as one line, as ``verbose`` logs it.

        Returns
        -------
        str
            Each field as ``name=value``; a threshold of ``ALWAYS_SERIAL`` reads "never".
        """
        def shown(name, value):
            if name in ("quantize", "device"):
                return str(value)
            if name == "histogram_provider":
                return "in-kernel" if value is None else type(value).__name__
            return "never" if value == ALWAYS_SERIAL else f"{value:,}"

        return "execution plan: " + ", ".join(
            f"{f.name}={shown(f.name, getattr(self, f.name))}" for f in fields(self))


#: the names an injected plan (``train(..., plan=)``) may set
PLAN_FIELDS = tuple(f.name for f in fields(ExecutionPlan))


def check_plan(plan) -> None:
    """Refuse an injected plan that is neither a plan nor a dict of its fields.

    Parameters
    ----------
    plan : ExecutionPlan, dict or None
        ``train``'s ``plan``.

    Raises
    ------
    TypeError
        If ``plan`` is neither None, an ``ExecutionPlan`` nor a mapping.
    ValueError
        If ``plan`` is a mapping naming a field the plan does not have.
    """
    if plan is None or isinstance(plan, ExecutionPlan):
        return
    if not isinstance(plan, Mapping):
        raise TypeError(f"plan must be an ExecutionPlan or a dict of its fields by name, "
                        f"got {type(plan).__name__}")
    unknown = sorted(set(plan) - set(PLAN_FIELDS))
    if unknown:
        raise ValueError(f"plan: unknown field(s) {unknown}; an ExecutionPlan has "
                         f"{list(PLAN_FIELDS)}")


def make_plan(n_rows: int, *, sparse: bool = False, loss_name: str | None = None,
              use_quantized_grad: bool | str | None = None, n_threads: int | None = None,
              overrides: ExecutionPlan | Mapping | None = None, device: str | None = None,
              gpu_available=None) -> ExecutionPlan:
    """The execution plan of a fit: the one place its paths are chosen.

    Parameters
    ----------
    n_rows : int
        Rows of the training set (over a data-parallel group: of all its members).
    sparse : bool, default=False
        Whether the training set is sparse (quantised histograms take dense input).
    loss_name : str, default=None
        The registered name of the fit's loss ("auto" quantises the log loss only).
    use_quantized_grad : bool or "auto", default=None
        The parameter; True or False is the plan's ``quantize`` as it is; None: the
        parameter's default, "auto".
    n_threads : int, default=None
        Threads of the fit; None reads Numba's current count, which ``train`` sets from
        ``n_jobs``. On one thread every node takes the serial kernels.
    overrides : ExecutionPlan or dict, default=None
        A plan to use as it is, or some of its fields by name (``PLAN_FIELDS``); the
        others are decided from them (``n_threads=1`` makes the thresholds left out
        ``ALWAYS_SERIAL``, ``quantize_min_rows`` decides ``quantize`` if that is left
        out). A plan given whole is used as it is (its ``device`` too).
    device : str, default=None
        The ``device`` parameter (None: "cpu"), or the overrides' ``device``:
        "cuda" is checked here, before the fit grows anything (``_gpu.check_device``),
        and gives the plan a ``_gpu.CUDAHistogramProvider`` unless the overrides name
        a ``histogram_provider``. ``device="cuda"`` leaves ``quantize`` as
        ``use_quantized_grad`` decides it.
    gpu_available : callable, default=None
        ``() -> bool``, whether the GPU kernels can run (None: numba-cuda installed
        and a GPU, or its simulator); tests inject one.

    Returns
    -------
    ExecutionPlan

    Raises
    ------
    TypeError
        If ``overrides`` is neither a plan nor a mapping.
    ValueError
        If ``overrides`` names a field the plan does not have, ``device`` is neither
        "cpu" nor "cuda", or "cuda" is given sparse data.
    RuntimeError
        If ``device="cuda"`` and no GPU (nor the simulator) can run the kernels.
    """
    check_plan(overrides)
    if isinstance(overrides, ExecutionPlan):
        return overrides
    overrides = {} if overrides is None else overrides
    device = check_device(overrides.get("device", CPU if device is None else device),
                          sparse=sparse, available=gpu_available)
    provider = overrides.get("histogram_provider")
    if device != CPU and provider is None:
        from ._gpu import CUDAHistogramProvider  # imports numba.cuda

        provider = CUDAHistogramProvider()
    threads = overrides.get("n_threads", n_threads)
    if threads is None:
        threads = numba.get_num_threads()
    parallel = int(threads) > 1
    # on one thread (study workers, n_jobs=1) never: the serial kernels add the same
    # values in the same order and skip the parallel region's start-up
    decided = {
        "n_threads": threads,
        "serial_partition_rows": SERIAL_PARTITION_ROWS if parallel else ALWAYS_SERIAL,
        "serial_histogram_updates": SERIAL_HISTOGRAM_UPDATES if parallel else ALWAYS_SERIAL,
        **{k: v for k, v in overrides.items() if k != "quantize"},
        "histogram_provider": provider,
        "device": device,
    }
    min_rows = decided.get("quantize_min_rows", QUANTIZE_MIN_ROWS)
    if "quantize" in overrides:
        quantize = overrides["quantize"]
    elif use_quantized_grad is None or isinstance(use_quantized_grad, str):  # "auto"
        quantize = loss_name == "log_loss" and not sparse and n_rows >= min_rows
    else:
        quantize = bool(use_quantized_grad)
    return ExecutionPlan(**decided, quantize=quantize)
