"""Numba kernels: the hot loops of every stage of the data flow.

Rules for this sub-package: modules import only NumPy, Numba (and its llvmlite,
for the LLVM IR of ``simd``'s intrinsics) and ``_jit``;
kernels take and return plain arrays and scalars (no Python objects); dtypes
are those of ``treeboost._dtypes`` so that every kernel compiles to a single
signature. Orchestration, validation and error messages live in the Python
modules of the same stage name one level up.

Compile time is a budget too (``benchmarks/bench_first_fit.py --kernels``
prints it per kernel): a helper is a ``@kernel``, compiled once and inlined
by LLVM where it pays, rather than ``@inline``, which types and lowers its
body again at every call site; an argument is never a literal constant
(``f(0)`` compiles a specialisation of ``f`` for the value 0); and kernels
raise no exception with a formatted message and avoid NumPy functions whose
Numba implementations are large (``argsort``, ``reshape``, ``finfo``, array
to array slice assignment), each seconds of the first fit's compilation.
``np.zeros`` and ``np.full`` compile an implementation per dtype (and a fill
for each): allocate with ``np.empty`` and set initial values in a loop. Code a
fit may not need is compiled out where the caller knows it: ``grow_tree`` and
``find_best_splits`` take ``general=None`` for small numerical trees, and
Numba prunes the branches on ``general is not None`` (the parallel node
kernels, the categorical scan) before typing them; ``general=True`` is the
one other specialisation.
"""
