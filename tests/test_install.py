"""A read-only installation imports and fits (SPEC §8; issue 11, acceptance 3).

The package is copied into a directory that cannot be written, and a fresh
Python process imports it from there with a home directory that cannot be
written either (a service account in a container). Tests run as root here,
and root ignores permission bits, so "cannot be written" is made to hold for
root too: the kernels' ``__pycache__``, the home and the temp dir are paths
under a regular file (no account can create a directory there). When the
tests run as root and the ``nobody`` account can run this interpreter, the
child also drops to it, so that the permission bits (directories 0555) are
the real obstacle.

``choose_cache_dir`` (the order of the candidate directories) is tested
directly, without a subprocess.
"""

import functools
import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import numba
import pytest

import treeboost
from treeboost import TreeBoostClassifier
from treeboost._kernels import _jit

PACKAGE = Path(treeboost.__file__).parent
compiled = pytest.mark.skipif(numba.config.DISABLE_JIT, reason="kernels are plain Python")

DATA = """
import numpy as np
rng = np.random.default_rng(0)
X = rng.normal(size=(400, 5))
y = (X[:, 0] + X[:, 1] ** 2 + rng.logistic(size=400) > 1).astype(int)
"""

CHILD = DATA + """
import json, sys, tempfile, warnings
if sys.argv[1]:
    tempfile.tempdir = sys.argv[1]  # the system temp dir as the child sees it
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import treeboost
    from treeboost._kernels import _jit
    from treeboost._kernels.booster import grow_newton_tree
    model = treeboost.TreeBoostClassifier(n_estimators=10, random_state=0).fit(X, y)
    pred = model.predict_proba(X)[:, 1]
stats = grow_newton_tree.stats
print(json.dumps({"file": treeboost.__file__, "cache_dir": _jit.CACHE_DIR,
                  "warnings": [f"{w.category.__name__}: {w.message}" for w in caught],
                  "hits": sum(stats.cache_hits.values()),
                  "misses": sum(stats.cache_misses.values()),
                  "pred": [float(p).hex() for p in pred]}))
"""


def _normal_predictions():
    """The predictions of the package as the test suite imports it."""
    scope = {}
    exec(DATA, scope)  # the child's data, built by the same code
    model = TreeBoostClassifier(n_estimators=10, random_state=0).fit(scope["X"], scope["y"])
    return [float(p).hex() for p in model.predict_proba(scope["X"])[:, 1]]


@functools.cache
def _nobody():
    """(uid, gid) to drop to when running as root, or None.

    None too when ``nobody`` cannot run this interpreter (one installed under
    /root, say): the paths under a regular file then stand in for permissions.
    """
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam("nobody")
    except KeyError:
        return None
    ids = entry.pw_uid, entry.pw_gid

    def drop():
        os.setgid(ids[1])
        os.setuid(ids[0])

    try:
        subprocess.run([sys.executable, "-c", "import numba"], preexec_fn=drop, check=True,
                       capture_output=True, cwd="/")
    except (OSError, subprocess.CalledProcessError):
        return None
    return ids


@pytest.fixture
def read_only_site():
    """A directory holding a read-only copy of the package, and an unwritable place."""
    base = Path(tempfile.mkdtemp(prefix="tb-install-"))
    base.chmod(0o755)  # mkdtemp's 0700 would keep ``nobody`` out
    site = base / "site"
    shutil.copytree(PACKAGE, site / "treeboost",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    # a file where the kernels' cache directory would go: unwritable even for root
    (site / "treeboost" / "_kernels" / "__pycache__").write_text("")
    blocker = base / "not-a-directory"
    blocker.write_text("")
    for path in [site, *site.rglob("*")]:
        path.chmod(0o555 if path.is_dir() else 0o444)
    yield site, blocker / "x"
    for path in [site, *site.rglob("*")]:
        path.chmod(stat.S_IRWXU)
    shutil.rmtree(base)


def _run_child(site, unwritable, numba_cache_dir=None):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("NUMBA_CACHE_DIR", "XDG_", "PYTHON"))}
    env.update(PYTHONPATH=str(site), HOME=str(unwritable), TMPDIR=str(unwritable),
               PYTHONDONTWRITEBYTECODE="1")
    if numba_cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = str(numba_cache_dir)
    ids = _nobody()
    preexec = None
    if ids is not None:
        def preexec():
            os.setgid(ids[1])
            os.setuid(ids[0])
    out = subprocess.run([sys.executable, "-c", CHILD, str(unwritable)], env=env, cwd=site,
                         capture_output=True, text=True, preexec_fn=preexec, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert Path(result["file"]).is_relative_to(site), "the copy was not the one imported"
    return result


@pytest.mark.slow  # compiles every kernel of a fit in a fresh process
@pytest.mark.fresh_compile
@compiled
def test_read_only_installation_fits_uncached_after_one_warning(read_only_site):
    site, unwritable = read_only_site
    result = _run_child(site, unwritable)
    assert result["cache_dir"] is None
    assert len(result["warnings"]) == 1, result["warnings"]
    assert "NUMBA_CACHE_DIR" in result["warnings"][0]
    assert result["pred"] == _normal_predictions()


@pytest.mark.slow  # compiles every kernel of a fit in a fresh process
@pytest.mark.fresh_compile
@compiled
def test_numba_cache_dir_receives_the_kernels(read_only_site):
    site, unwritable = read_only_site
    cache = Path(tempfile.mkdtemp(prefix="tb-numba-cache-"))
    try:
        ids = _nobody()
        if ids is not None:
            os.chown(cache, *ids)
        first = _run_child(site, unwritable, cache)
        assert first["warnings"] == []
        assert Path(first["cache_dir"]).parent == cache
        assert first["misses"] == 1
        assert first["hits"] == 0
        index = list(cache.rglob("*.nbi"))
        assert any(p.name.startswith("booster.grow_newton_tree") for p in index), index
        assert list(cache.rglob("*.nbc"))
        assert first["pred"] == _normal_predictions()
        # a second process loads the kernels instead of compiling them
        second = _run_child(site, unwritable, cache)
        assert second["misses"] == 0
        assert second["hits"] == 1
        assert second["pred"] == first["pred"]
    finally:
        shutil.rmtree(cache)


def _blocked(tmp_path):
    """A path no account can create: its parent is a regular file."""
    (tmp_path / "file").write_text("")
    return str(tmp_path / "file" / "dir")


def test_cache_dir_candidates_in_order(tmp_path):
    package = tmp_path / "package"
    package.mkdir()
    subpath = _jit._CacheLocator.get_suitable_cache_subpath(str(package / "_jit.py"))
    user = tmp_path / "user"
    temp = tmp_path / "temp"
    blocked = _blocked(tmp_path)
    given = tmp_path / "numba"

    def choose(numba_dir="", package_dir=package, user_root=user, temp_root=temp):
        return _jit.choose_cache_dir(numba_dir, str(package_dir), user_root and str(user_root),
                                     str(temp_root))

    assert choose(str(given)) == str(given / subpath)
    # NUMBA_CACHE_DIR unusable: the next candidate, as Numba does
    assert choose(blocked) == str(package / "__pycache__")
    (package / "__pycache__").rmdir()
    (package / "__pycache__").write_text("")  # a read-only package
    assert choose() == str(user / subpath)
    assert choose(user_root=None) == choose(user_root=blocked)
    private = Path(choose(user_root=None)).parent
    assert private.parent == temp
    if hasattr(os, "getuid"):
        assert stat.S_IMODE(private.stat().st_mode) == 0o700
        # a temp directory others may write is not trusted with files Numba unpickles
        private.chmod(0o777)
        assert choose(user_root=None) is None
    assert choose(user_root=None, temp_root=blocked) is None


def test_user_cache_root_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert _jit.user_cache_root() == str(tmp_path / "treeboost")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert _jit.user_cache_root() == str(tmp_path / "home" / ".cache" / "treeboost")


@compiled
def test_kernels_compiled_in_this_process_use_the_chosen_directory():
    from treeboost._kernels.booster import grow_newton_tree

    if _jit.CACHE_DIR is None:
        pytest.skip("no writable kernel cache in this environment")
    assert grow_newton_tree._cache.cache_path == _jit.CACHE_DIR
