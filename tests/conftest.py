"""Suite-wide hooks.

The kernel-signature check with an empty kernel cache
(``tests/kernels/test_signatures.py``) compiles every kernel from scratch in a
fresh process: minutes of single-threaded compilation. Its process is started
when the test is collected and left to compile beside the rest of the suite (on
a core the suite leaves idle most of the time); the test itself is moved to the
end, where it reads the process's output. The process is ended and its cache
removed when the session finishes, whatever happened.
"""

import os
import shutil
import subprocess
import sys
import tempfile

import pytest

EMPTY_CACHE_TEST = "test_each_kernel_compiles_at_most_two_signatures[empty]"
BACKGROUND = pytest.StashKey[dict]()


def pytest_collection_modifyitems(session, config, items):
    chosen = [item for item in items if item.name == EMPTY_CACHE_TEST]
    if not chosen:
        return
    import numba

    if numba.config.DISABLE_JIT:  # the test is skipped
        return
    for item in chosen:
        items.remove(item)
        items.append(item)
    cache = tempfile.mkdtemp(prefix="treeboost-empty-cache-")
    out = open(os.path.join(cache, "stdout"), "w+")  # files: a full pipe would block it
    err = open(os.path.join(cache, "stderr"), "w+")
    proc = subprocess.Popen([sys.executable, str(chosen[0].path)], stdout=out, stderr=err,
                            text=True, env=dict(os.environ, NUMBA_CACHE_DIR=cache))
    config.stash[BACKGROUND] = {"proc": proc, "cache": cache, "stdout": out, "stderr": err}


def empty_cache_output(config, timeout: float) -> str:
    """The stdout of the empty-cache process started at collection, once it is done.

    Raises ``subprocess.CalledProcessError`` (with its stderr) if it failed.
    """
    state = config.stash[BACKGROUND]
    proc = state["proc"]
    proc.wait(timeout=timeout)
    state["stdout"].seek(0)
    state["stderr"].seek(0)
    stdout, stderr = state["stdout"].read(), state["stderr"].read()
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, proc.args, stdout, stderr)
    return stdout


def pytest_sessionfinish(session, exitstatus):
    state = session.config.stash.get(BACKGROUND, None)
    if state is None:
        return
    proc = state["proc"]
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    state["stdout"].close()
    state["stderr"].close()
    shutil.rmtree(state["cache"], ignore_errors=True)
