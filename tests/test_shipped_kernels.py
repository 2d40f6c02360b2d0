"""Compiled kernels shipped with the package (``treeboost/_kernels/_shipped.py``).

A kernel compiled in a process targeting a portable CPU and installed into a shipped
directory (``treeboost._precompile.install``) is loaded, not compiled, by a host
process whose own cache is empty; a damaged shipped file, one from another Numba, or
one for a CPU the host cannot run, is ignored and the kernel compiles. Of several
targets shipped (a folder per CPU), the best one the host runs is taken; a target
compiled from a record of signatures without running its code is complete. Each case
runs in fresh processes (a kernel, once compiled or loaded, stays in its process).

These tests hash the package's sources when they install a shipped folder and again in
the child processes: a checkout edited while they run makes the children refuse it.
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
    return dict(json.loads(out.stdout.strip().splitlines()[-1]), stderr=out.stderr[-3000:])


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
    assert host["compiled"] == ["weighted_sum"], host["stderr"]  # the other one loads
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


def _target(root, cpu, features="", sources="s"):
    """A shipped target's folder under ``root`` holding only its manifest."""
    folder = root / cpu
    folder.mkdir()
    (folder / _shipped.MANIFEST).write_text(json.dumps({
        "numba": numba.__version__, "python": _shipped.python_tag(), "sources": sources,
        "magic": ["x86_64-unknown-linux-gnu", cpu, features], "files": {"k.nbi": cpu}}))
    return folder


def test_the_best_target_the_host_runs_is_chosen(tmp_path):
    """v4 on an AVX-512 host, v3 on an AVX2 one, nothing on an older one; code built for
    exactly this CPU before any; a stale target never."""
    triple = "x86_64-unknown-linux-gnu"
    v3 = ",".join("+" + f for f in _shipped.TARGET_FEATURES["x86-64-v3"])
    v4 = ",".join("+" + f for f in _shipped.TARGET_FEATURES["x86-64-v4"])
    avx512_host = (triple, "sapphirerapids", v4 + ",-sse4a")
    avx2_host = (triple, "znver3", v3 + ",-avx512f")
    old_host = (triple, "sandybridge", v3.replace("+avx2", "-avx2"))
    _target(tmp_path, "x86-64-v3")
    _target(tmp_path, "x86-64-v4")
    (tmp_path / "not-a-target").mkdir()  # no manifest: skipped
    (tmp_path / ".gitignore").write_text("*")

    def chosen(host):
        found = _shipped.choose(str(tmp_path), host, sources="s")
        return None if found is None else found[1][1]

    assert chosen(avx512_host) == "x86-64-v4"
    assert chosen(avx2_host) == "x86-64-v3"
    assert chosen(old_host) is None
    directory, magic, files = _shipped.choose(str(tmp_path), avx2_host, sources="s")
    assert directory == str(tmp_path / "x86-64-v3")
    assert files == {"k.nbi": "x86-64-v3"}  # the chosen target's own file hashes
    host_folder = _target(tmp_path, "host")
    manifest = json.loads((host_folder / _shipped.MANIFEST).read_text())
    manifest["magic"] = list(avx2_host)
    (host_folder / _shipped.MANIFEST).write_text(json.dumps(manifest))
    assert chosen(avx2_host) == "znver3"  # built for this very CPU
    assert chosen(avx512_host) == "x86-64-v4"
    _target(tmp_path, "x86-64-v2", sources="stale")
    assert chosen(old_host) is None
    # a single target's folder given as the root
    single = _shipped.choose(str(tmp_path / "x86-64-v3"), avx2_host, sources="s")
    assert single[0] == str(tmp_path / "x86-64-v3")
    assert _shipped.choose(str(tmp_path / "missing"), avx2_host, sources="s") is None


def test_precompile_needs_a_target_the_host_runs(tmp_path):
    from treeboost import _precompile

    v3 = set(_shipped.TARGET_FEATURES["x86-64-v3"])
    assert _precompile.runnable("x86-64-v3", v3)
    assert not _precompile.runnable("x86-64-v4", v3)
    assert _precompile.runnable("generic", set())
    with pytest.raises(ValueError, match="cpu must be among"):
        _precompile.precompile(["x86-64-v3", "pentium4"], str(tmp_path), verbose=False)
    assert not list(tmp_path.iterdir())


RECORD = """
import sys
import numpy as np
from treeboost._precompile import write_record
import tb_shipped_demo as m
x = np.linspace(-1.0, 2.0, 1001)
m.weighted_sum(x, x[::-1].copy()), m.scaled(x, 3.0)
write_record(sys.argv[1], package="tb_shipped_demo")
"""


def test_a_target_compiled_without_running_is_loaded(shipped):
    """A target compiled from a record of signatures without running its code (how an
    x86-64-v4 build is made on a host without AVX-512) is complete: both kernels' code
    is there, and a host taking it loads every kernel, compiling none."""
    from treeboost._precompile import _COMPILE, install

    tmp, built = shipped
    record = tmp / "record.pickle"
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp / "record-cache"),
               TREEBOOST_SHIPPED_KERNELS="0",
               PYTHONPATH=os.pathsep.join([str(tmp)] + sys.path))
    for name in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES"):
        env.pop(name, None)
    subprocess.run([sys.executable, "-c", RECORD, str(record)], env=env, check=True)
    env.update(NUMBA_CACHE_DIR=str(tmp / "compiled-only"), NUMBA_CPU_NAME="x86-64-v4",
               NUMBA_CPU_FEATURES="")
    out = subprocess.run([sys.executable, "-c", _COMPILE, str(record)], env=env, check=True,
                         capture_output=True, text=True)
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["magic"][1] == "x86-64-v4"
    manifest = install(report["cache_dir"], report["magic"], str(tmp / "two" / "x86-64-v4"))
    # an index and a data file for each kernel's one signature
    assert sorted(name.split(".")[1].split("-")[0] for name in manifest["files"]) == [
        "scaled", "scaled", "weighted_sum", "weighted_sum"]
    # the same record compiled for generic, which any host runs, stands in for the
    # v4 code a host without AVX-512 cannot run
    env.update(NUMBA_CACHE_DIR=str(tmp / "compiled-generic"), NUMBA_CPU_NAME="generic")
    out = subprocess.run([sys.executable, "-c", _COMPILE, str(record)], env=env, check=True,
                         capture_output=True, text=True)
    report = json.loads(out.stdout.strip().splitlines()[-1])
    install(report["cache_dir"], report["magic"], str(tmp / "two" / "generic"))
    host = _run(tmp, "host-cache-two", tmp / "two")
    assert host["compiled"] == []
    assert host["res"] == built["res"]


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
    install(portable["cache_dir"], portable["magic"], str(tmp_path / "shipped" / cpu))
    from_shipped = fit("host-1", tmp_path / "shipped")
    assert from_shipped["compiled"] == []
    from_host = fit("host-2", tmp_path / "none")
    assert from_host["compiled"]
    assert from_shipped["res"] == from_host["res"] == portable["res"]
