"""Compiled kernels shipped with the package (``treeboost/_kernels/_shipped.py``).

A kernel compiled in a process targeting a portable CPU and installed into a shipped
directory (``treeboost._precompile.install``) is loaded, not compiled, by a host
process whose own cache is empty; a damaged shipped file, one from another Numba, or
one for a CPU the host cannot run, is ignored and the kernel compiles. Each case runs
in fresh processes (a kernel, once compiled or loaded, stays in its process).
"""

import json
import os
import subprocess
import sys
import textwrap

import numba
import pytest

from treeboost._kernels import _shipped

pytestmark = pytest.mark.skipif(numba.config.DISABLE_JIT, reason="kernels are not compiled")

KERNEL_MODULE = '''
import numpy as np
from treeboost._kernels._jit import kernel, parallel_kernel
from numba import prange

@kernel
def weighted_sum(x, w):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * w[i] / (1.0 + i)
    return s

@parallel_kernel
def scaled(x, a):
    out = np.empty_like(x)
    for i in prange(x.shape[0]):
        out[i] = x[i] * a + 0.1 * i
    return out
'''

CHILD = '''
import json, sys
import numpy as np
from numba.core import event
from numba.core.registry import cpu_target
from treeboost._kernels import _jit, _shipped
_shipped._Shipped.reset(sys.argv[1])
compiled = []
class Listener(event.Listener):
    def on_start(self, ev):
        func = ev.data["dispatcher"].py_func
        if func.__module__ == "tb_shipped_demo":
            compiled.append(func.__name__)
    def on_end(self, ev):
        pass
event.register("numba:compile", Listener())
import tb_shipped_demo as m
x = np.linspace(-1.0, 2.0, 1001)
res = [m.weighted_sum(x, x[::-1].copy()), m.scaled(x, 3.0).tolist()]
print(json.dumps({"compiled": compiled, "res": res, "cache_dir": _jit.CACHE_DIR,
                  "magic": list(cpu_target.target_context.codegen().magic_tuple())}))
'''


def _run(tmp_path, cache, shipped, **env):
    full = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / cache), PYTHONPATH=os.pathsep.join(
        [str(tmp_path)] + sys.path), **env)
    for name in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES", "TREEBOOST_SHIPPED_KERNELS"):
        if name not in env:
            full.pop(name, None)
    out = subprocess.run([sys.executable, "-c", CHILD, str(shipped)], env=full,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    """A shipped directory holding the demo kernels compiled for ``generic``."""
    from treeboost._precompile import install

    tmp = tmp_path_factory.mktemp("shipped")
    (tmp / "tb_shipped_demo.py").write_text(textwrap.dedent(KERNEL_MODULE))
    built = _run(tmp, "portable-cache", tmp / "none", NUMBA_CPU_NAME="generic",
                 NUMBA_CPU_FEATURES="", TREEBOOST_SHIPPED_KERNELS="0")
    assert sorted(built["compiled"]) == ["scaled", "weighted_sum"]
    install(built["cache_dir"], built["magic"], str(tmp / "shipped"))
    return tmp, built


def _copy(src, dst):
    dst.mkdir()
    for f in src.iterdir():
        (dst / f.name).write_bytes(f.read_bytes())


def test_a_shipped_kernel_is_loaded_not_compiled(shipped):
    tmp, built = shipped
    host = _run(tmp, "host-cache-1", tmp / "shipped")
    assert host["magic"][1] != "generic"  # the host keys its code otherwise
    assert host["compiled"] == []
    assert host["res"] == built["res"]  # same float results, bit for bit
    # nothing was saved for the host: its first compile happens where one is missing
    assert not [f for f in os.listdir(host["cache_dir"]) if f.startswith("tb_shipped_demo")]


def test_the_host_cache_comes_first(shipped):
    tmp, built = shipped
    first = _run(tmp, "host-cache-2", tmp / "none")  # compiles, saves for the host
    assert sorted(first["compiled"]) == ["scaled", "weighted_sum"]
    again = _run(tmp, "host-cache-2", tmp / "shipped")
    assert again["compiled"] == []
    assert again["res"] == first["res"] == built["res"]


def test_a_damaged_shipped_file_is_ignored(shipped):
    tmp, built = shipped
    damaged = tmp / "damaged"
    _copy(tmp / "shipped", damaged)
    data = sorted(damaged.glob("tb_shipped_demo.weighted_sum-*.nbc"))[0]
    blob = bytearray(data.read_bytes())
    blob[len(blob) // 2] ^= 0xFF
    data.write_bytes(bytes(blob))
    host = _run(tmp, "host-cache-3", damaged)
    assert host["compiled"] == ["weighted_sum"]  # the other kernel still loads
    assert host["res"] == built["res"]


@pytest.mark.parametrize("change", ["numba", "sources", "python", "cpu"])
def test_a_shipped_directory_from_elsewhere_is_ignored(shipped, change):
    tmp, built = shipped
    other = tmp / f"other-{change}"
    _copy(tmp / "shipped", other)
    manifest = json.loads((other / _shipped.MANIFEST).read_text())
    if change == "numba":
        manifest["numba"] = "0.1.0"
    elif change == "sources":
        manifest["sources"] = "0" * 64
    elif change == "python":
        manifest["python"] = "py20"
    else:  # code for a CPU we cannot vouch for
        manifest["magic"][1] = "sapphirerapids"
    (other / _shipped.MANIFEST).write_text(json.dumps(manifest))
    host = _run(tmp, f"host-cache-{change}", other)
    assert sorted(host["compiled"]) == ["scaled", "weighted_sum"]
    assert host["res"] == built["res"]


def test_shipped_code_needs_every_feature_of_its_target():
    triple = "x86_64-unknown-linux-gnu"
    manifest = {"numba": numba.__version__, "python": _shipped.python_tag(), "sources": "s",
                "magic": [triple, "x86-64-v3", ""]}
    v3 = ",".join("+" + f for f in _shipped.TARGET_FEATURES["x86-64-v3"])
    host = (triple, "sapphirerapids", v3 + ",+avx512f,-sse4a")
    assert _shipped.usable_magic(manifest, host, sources="s") == (triple, "x86-64-v3", "")
    # no AVX2 (an older CPU, or NUMBA_ENABLE_AVX=0 turning the avx features off)
    no_avx2 = (triple, "sandybridge", v3.replace("+avx2", "-avx2"))
    assert _shipped.usable_magic(manifest, no_avx2, sources="s") is None
    assert _shipped.usable_magic(manifest, ("aarch64-unknown-linux-gnu",) + host[1:],
                                 sources="s") is None
    assert _shipped.usable_magic(manifest, host, sources="other") is None
    generic = dict(manifest, magic=[triple, "generic", ""])
    assert _shipped.usable_magic(generic, (triple, "generic", ""), sources="s") is not None
    assert _shipped.usable_magic(generic, no_avx2, sources="s") is not None


def test_shipped_lookup_can_be_turned_off(monkeypatch):
    monkeypatch.setenv("TREEBOOST_SHIPPED_KERNELS", "0")
    assert not _shipped.enabled()
    assert _shipped.shipped_cache_class(object, True) is object
    assert not _shipped.numba_supported("1.2.0")
    assert _shipped.numba_supported(numba.__version__)


FIT = '''
import json, sys
import numpy as np
from numba.core import event
from numba.core.registry import cpu_target
from treeboost._kernels import _jit, _shipped
_shipped._Shipped.reset(sys.argv[1])
compiled = []
class Listener(event.Listener):
    def on_start(self, ev):
        if ev.data["dispatcher"].py_func.__module__.startswith("treeboost."):
            compiled.append(ev.data["dispatcher"].py_func.__name__)
    def on_end(self, ev):
        pass
event.register("numba:compile", Listener())
import treeboost
rng = np.random.default_rng(0)
X = rng.normal(size=(3000, 8))
y = X[:, 0] + np.sin(X[:, 1]) + rng.normal(scale=0.1, size=3000)
X[rng.random(X.shape) < 0.05] = np.nan
reg = treeboost.TreeBoostRegressor(n_estimators=10, n_jobs=2, random_state=0).fit(X, y)
clf = treeboost.TreeBoostClassifier(n_estimators=10, n_jobs=2, random_state=0).fit(X, y > 0)
res = [reg.predict(X).tolist(), clf.predict_proba(X).tolist()]
print(json.dumps({"compiled": compiled, "res": res, "cache_dir": _jit.CACHE_DIR,
                  "magic": list(cpu_target.target_context.codegen().magic_tuple())}))
'''


@pytest.mark.fresh_compile
def test_models_from_shipped_code_equal_models_from_host_code(tmp_path):
    """A fit on kernels shipped for x86-64-v3 (or generic, on a CPU without AVX2) loads
    every kernel it needs and predicts what a fit compiled for the host does, bit for bit
    (no fastmath: LLVM reorders no float operation, whatever the target)."""
    import llvmlite.binding as llvm

    from treeboost._precompile import install

    v3 = all(llvm.get_host_cpu_features().get(f, False)
             for f in _shipped.TARGET_FEATURES["x86-64-v3"])
    cpu = "x86-64-v3" if v3 else "generic"

    def fit(cache, shipped, **env):
        full = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / cache), **env)
        for name in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES", "TREEBOOST_SHIPPED_KERNELS"):
            if name not in env:
                full.pop(name, None)
        out = subprocess.run([sys.executable, "-c", FIT, str(shipped)], env=full,
                             capture_output=True, text=True)
        assert out.returncode == 0, out.stderr[-3000:]
        return json.loads(out.stdout.strip().splitlines()[-1])

    portable = fit("portable", tmp_path / "none", NUMBA_CPU_NAME=cpu, NUMBA_CPU_FEATURES="",
                   TREEBOOST_SHIPPED_KERNELS="0")
    assert portable["compiled"]
    install(portable["cache_dir"], portable["magic"], str(tmp_path / "shipped"))
    from_shipped = fit("host-1", tmp_path / "shipped")
    assert from_shipped["compiled"] == []
    from_host = fit("host-2", tmp_path / "none")
    assert from_host["compiled"]
    assert from_shipped["res"] == from_host["res"] == portable["res"]
