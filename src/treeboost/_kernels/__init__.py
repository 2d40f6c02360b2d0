"""Numba kernels: the hot loops of every stage of the data flow.

Rules for this sub-package: modules import only NumPy, Numba and ``_jit``;
kernels take and return plain arrays and scalars (no Python objects); dtypes
are those of ``treeboost._dtypes`` so that every kernel compiles to a single
signature. Orchestration, validation and error messages live in the Python
modules of the same stage name one level up.
"""
