"""``device="cuda"`` (issue 39 part 2): the GPU histogram provider against the CPU's fit.

Run under numba-cuda's simulator (``NUMBA_ENABLE_CUDASIM=1``, set before ``numba.cuda``
is first imported, as tests/test_cuda_kernels.py does; CI has no GPU), or on a real GPU
where one is present and the variable is set to 0. Skipped where numba-cuda is not
installed. Small data (240 rows, 48 bins, 3 trees of 6 leaves): the simulator runs a
Python thread per GPU thread.

With quantised gradients the GPU's model is the CPU's bit for bit: the saved models
are compared whole, but for the ``device`` entry of their parameters.
"""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from numpy.testing import assert_allclose

pytest.importorskip("numba_cuda")

if "numba.cuda" not in sys.modules:
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
    from numba.core import config

    config.reload_config()

import treeboost._kernels.cuda as gpu  # noqa: E402
from treeboost import (  # noqa: E402
    Dataset,
    TreeBoostClassifier,
    TreeBoostRegressor,
    train,
)
from treeboost._gpu import CUDAHistogramProvider  # noqa: E402
from treeboost._plan import make_plan  # noqa: E402

if not gpu.cuda_available():
    pytest.skip("numba.cuda was imported in this process before this module, without "
                "the simulator, and there is no GPU", allow_module_level=True)

SMALL = dict(n_estimators=3, max_leaf_nodes=6, min_samples_leaf=10, max_bins=48,
             random_state=3)


def _data(task, n=240, seed=0):
    """Six features, NaN in 5% of values, feature 5 categorical (7 categories)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    X[rng.random(X.shape) < 0.05] = np.nan
    X[:, 5] = rng.integers(0, 7, n)
    score = (np.nan_to_num(X[:, 0]) + np.sin(2 * np.nan_to_num(X[:, 1]))
             + 0.3 * (X[:, 5] % 3) + 0.5 * rng.normal(size=n))
    if task == "regression":
        return X, score
    if task == "binary":
        return X, (score > 0.3).astype(float)
    return X, np.digitize(score, [-0.5, 0.3, 1.0]).astype(float)


def _model(saved_by):
    """The saved model as a dict, without the ``device`` parameter (nor the checksum)."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m.json")
        saved_by(path)
        with open(path) as f:
            model = json.load(f)
    model["params"].pop("device")
    model.pop("checksum")  # of the file's text, device included
    return model


def _plan(booster):
    return booster.execution_plan


# multiclass: three trees a stage, each partition four kernel launches, slow under the
# simulator (CI's slow step)
TASKS = ["binary", pytest.param("multiclass", marks=pytest.mark.slow), "regression"]


@pytest.mark.parametrize("task", TASKS)
def test_train_quantised_equals_the_cpu_bit_for_bit(task):
    X, y = _data(task)
    params = dict(SMALL, loss="squared_error" if task == "regression" else "log_loss",
                  use_quantized_grad=True, subsample=0.8)

    def fit(device):
        return train(dict(params, device=device),
                     Dataset(X, y, categorical_features=[5], max_bins=48))

    cpu, cuda = fit("cpu"), fit("cuda")
    plan = _plan(cuda)
    assert plan.device == "cuda"
    assert plan.quantize
    assert isinstance(plan.histogram_provider, CUDAHistogramProvider)
    assert plan.histogram_provider.calls >= 3  # the GPU built the histograms
    assert plan.histogram_provider.partitions >= 3  # and partitioned the rows
    assert _plan(cpu).device == "cpu"
    assert _plan(cpu).histogram_provider is None
    assert _model(cuda.save_model) == _model(cpu.save_model)


@pytest.mark.parametrize("task", TASKS)
def test_estimators_quantised_equal_the_cpu_bit_for_bit(task):
    X, y = _data(task, seed=1)
    cls = TreeBoostRegressor if task == "regression" else TreeBoostClassifier
    kw = dict(SMALL, use_quantized_grad=True, subsample=0.8, categorical_features=[5])
    cpu = cls(**kw).fit(X, y)
    cuda = cls(device="cuda", **kw).fit(X, y)
    assert _plan(cuda.booster_).device == "cuda"
    assert _model(cuda.save_model) == _model(cpu.save_model)
    assert np.array_equal(cuda.predict(X), cpu.predict(X))


def test_float_histograms_within_round_off():
    # device="cuda" keeps use_quantized_grad: "auto" on 240 rows does not quantise, and
    # the GPU's float sums (atomics, another order) are the CPU's within round-off
    X, y = _data("regression", seed=2)
    cpu = TreeBoostRegressor(**SMALL).fit(X, y)
    cuda = TreeBoostRegressor(device="cuda", **SMALL).fit(X, y)
    plan = _plan(cuda.booster_)
    assert not plan.quantize
    assert plan.histogram_provider.calls >= 3
    assert_allclose(cuda.predict(X), cpu.predict(X), rtol=1e-9, atol=1e-9)


def test_rows_partitioned_on_the_cpu_give_the_same_model():
    # keep_rows=False (the first cut: each node's rows copied to the GPU) against the
    # default, rows kept and partitioned on the device: the same model bit for bit
    X, y = _data("binary", seed=3)
    params = dict(SMALL, loss="log_loss", use_quantized_grad=True, subsample=0.8)

    def fit(keep_rows):
        provider = CUDAHistogramProvider(keep_rows=keep_rows)
        booster = train(params, Dataset(X, y, categorical_features=[5], max_bins=48),
                        plan={"histogram_provider": provider})
        return booster, provider

    (kept, on_gpu), (copied, on_cpu) = fit(True), fit(False)
    assert on_gpu.partitions >= 3
    assert on_cpu.partitions == 0
    assert on_gpu.calls == on_cpu.calls
    assert _model(kept.save_model) == _model(copied.save_model)


def test_no_gpu_is_one_clear_error_before_the_fit():
    with pytest.raises(RuntimeError, match='device="cuda" needs numba-cuda and a CUDA GPU'):
        make_plan(240, device="cuda", gpu_available=lambda: False)
    # the CPU never asks
    assert make_plan(240, device="cpu", gpu_available=lambda: 1 / 0).histogram_provider \
        is None


def test_no_gpu_in_a_process_without_the_simulator():
    # a fresh process, simulator off: no GPU here gives the error (a GPU: a fit)
    code = textwrap.dedent("""
        import numpy as np
        from treeboost import Dataset, train
        from treeboost._kernels.cuda import cuda_available
        X = np.random.default_rng(0).normal(size=(50, 3))
        try:
            train({"device": "cuda", "n_estimators": 1}, Dataset(X, X[:, 0]))
        except RuntimeError as e:
            print("ERROR", e)
        else:
            print("FIT", cuda_available())
    """)
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    if out.stdout.startswith("FIT True"):
        pytest.skip("a CUDA GPU is present: the fit ran on it")
    assert out.stdout.startswith('ERROR device="cuda" needs numba-cuda and a CUDA GPU'), \
        out.stdout


def test_bad_device_and_sparse_refused_by_name():
    import scipy.sparse as sp

    with pytest.raises(ValueError, match="device='gpu' must be one of"):
        make_plan(240, device="gpu")
    X, y = _data("regression")
    with pytest.raises(ValueError, match="device='gpu'"):
        TreeBoostRegressor(device="gpu").fit(X, y)
    with pytest.raises(ValueError, match='device="cuda" takes dense training data only'):
        make_plan(240, sparse=True, device="cuda", gpu_available=lambda: True)
    Xs = sp.csr_matrix(np.nan_to_num(X[:, :5]))
    with pytest.raises(ValueError, match="sparse"):
        train(dict(SMALL, device="cuda"), Dataset(Xs, y))


def test_plan_pickles_without_device_arrays():
    import pickle

    X, y = _data("binary")
    est = TreeBoostClassifier(device="cuda", use_quantized_grad=True, **SMALL).fit(X, y)
    again = pickle.loads(pickle.dumps(est))
    assert np.array_equal(again.predict_proba(X), est.predict_proba(X))
