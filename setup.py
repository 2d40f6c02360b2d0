"""Build hook: a wheel carrying precompiled kernels is tagged for this platform and Python.

Everything else about the build is in pyproject.toml. A wheel built from sources
holding kernels compiled ahead of time (``python -m treeboost._precompile``, which
fills ``src/treeboost/_kernels/_compiled/<cpu>/``; .ci/wheel_smoke does it on a copy
of the sources) holds machine code for one platform and one Python version (Numba's
cache files carry both), so it is tagged ``cp3XY-cp3XY-<platform>`` rather than
``py3-none-any``: the distribution then says it has binary parts, as a package with a
C extension does. Without precompiled kernels (an editable install, the sdist, a plain
wheel) nothing changes.
"""

import glob
import os

from setuptools import setup
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
SHIPPED = os.path.join(HERE, "src", "treeboost", "_kernels", "_compiled")


class _Distribution(Distribution):
    """A distribution that is platform-specific where it carries precompiled kernels."""

    def has_ext_modules(self):
        """Whether a shipped target has a manifest (its machine code is platform-specific)."""
        return bool(glob.glob(os.path.join(SHIPPED, "*", "manifest.json")))


setup(distclass=_Distribution)
