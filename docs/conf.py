"""Sphinx configuration of treeboost's documentation (``make docs``).

The API reference is built by autodoc/autosummary from the numpydoc docstrings,
the parameter reference by the local extension ``_ext/treeboost_params.py`` from
the parameter table of ``treeboost.params``. ``study/`` (the study reports, in
Markdown) is not part of the site.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "_ext"))

import treeboost  # noqa: E402  (installed in the environment that builds the docs)

project = "treeboost"
author = "the treeboost developers"
copyright = "the treeboost developers"  # noqa: A001 (Sphinx's name)
release = treeboost.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.doctest",
    "sphinx.ext.mathjax",
    "numpydoc",
    "treeboost_params",
    "treeboost_docstrings",
]

exclude_patterns = ["_build", "study", "Thumbs.db", ".DS_Store"]
templates_path = ["_templates"]
root_doc = "index"
default_role = "literal"  # `name` in a docstring shows as code, as ``name``

# ---- API reference: autosummary writes one page per object under generated/ -------------
autosummary_generate = True
autosummary_imported_members = False
autodoc_typehints = "none"  # the numpydoc sections say the types
autodoc_member_order = "bysource"
numpydoc_show_class_members = False  # the class template lists members itself
numpydoc_class_members_toctree = False
numpydoc_validation_checks: set[str] = set()

# ---- doctest: `make docs-doctest` runs the pages' and docstrings' examples ---------------
doctest_global_setup = "import numpy as np\nimport treeboost"

# ---- HTML ---------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"treeboost {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version", "theme-version"],
}
html_show_sourcelink = False
