"""GPU kernels written with numba-cuda (issue 39): the node histogram and the row partition.

The building blocks of ``device="cuda"``: each kernel does on the GPU what a CPU
kernel of ``treeboost._kernels`` does, on the same arrays (binned features uint8
feature-major, row indices uint32, gradients float32 or packed int64 pairs, histograms
float64 (n_features, 256, 3) or int64 (n_features, 256)), as device arrays:

* ``histogram``: a node's histogram over an index array of its rows, float sums or
  the packed integer sums of quantised gradients, and the subtraction trick;
* ``partition``: the stable partition of a node's rows by a numerical or categorical
  split, the very order ``partition.partition_rows`` leaves.

numba-cuda is optional (the ``cuda`` extra) and ``numba.cuda`` is imported only when a
kernel module of this package is: importing treeboost, or this package, never does,
and costs nothing where numba-cuda is absent. ``numba.cuda`` chooses between a real
GPU and its simulator (``NUMBA_ENABLE_CUDASIM=1``) once per process, when first
imported; the tests run these kernels under the simulator.
"""

import importlib.util


def numba_cuda_installed():
    """Whether the numba-cuda package is installed (it is not imported)."""
    return importlib.util.find_spec("numba_cuda") is not None


def require_numba_cuda():
    """``numba.cuda`` from numba-cuda, imported now; ImportError naming the extra where
    numba-cuda is absent (Numba's own deprecated CUDA target is not used)."""
    if not numba_cuda_installed():
        raise ImportError("treeboost's GPU kernels need numba-cuda: "
                          "pip install 'treeboost[cuda]'")
    from numba import cuda

    return cuda


def cuda_available():
    """Whether the GPU kernels can run in this process: numba-cuda installed and a
    usable CUDA GPU, or numba-cuda's simulator enabled.

    Imports ``numba.cuda`` (where numba-cuda is installed), which fixes the choice
    between the GPU and the simulator for the rest of the process.
    """
    if not numba_cuda_installed():
        return False
    try:
        cuda = require_numba_cuda()
        return bool(cuda.is_available())
    except Exception:  # no driver, a broken toolkit: not usable, whatever the cause
        return False


def simulated():
    """Whether ``numba.cuda`` runs on its simulator in this process (imports it)."""
    cuda = require_numba_cuda()
    return cuda.jit.__module__.startswith("numba.cuda.simulator")
