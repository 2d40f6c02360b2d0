"""Sphinx extension: docstrings shown as written, where plain text reads as markup.

treeboost's docstrings are written for ``help()`` as well as for the site, and a few
plain-text habits mean something else in reStructuredText: ``|gradient|`` (an
absolute value) is a substitution reference, ``evals_result_`` (a fitted attribute)
a hyperlink reference to a target that does not exist. This hook escapes those two,
after numpydoc has turned the docstring into reStructuredText, outside inline
literals, roles, doctest lines and literal blocks; the rest of the markup is left alone.
It also leaves out the members that classes inherit from scikit-learn (``get_params``,
``set_params``, ``score``, the metadata-routing ``set_*_request``), which are
documented by scikit-learn and cross-reference its own pages.
"""

from __future__ import annotations

import re

#: inline markup kept as it is: ``literals``, :roles:`targets`, `interpreted text`_
_KEEP = re.compile(r"(``.+?``|:[\w:+.-]+:`[^`]+`|`[^`]+`_{0,2})")
#: |text| that is not meant as a substitution
_BARS = re.compile(r"\|(?=\S)([^|]*?\S)\|")
#: name_ (a fitted attribute) that is not meant as a hyperlink reference
_TRAILING = re.compile(r"(?<![\w\\`*|])([A-Za-z][\w.]*?[A-Za-z0-9])_(?![\w`])")


def escape_text(text: str) -> str:
    """``text`` (one line of reStructuredText) with stray ``|x|`` and ``name_`` escaped."""
    parts = _KEEP.split(text)
    for i in range(0, len(parts), 2):  # even parts: outside the kept markup
        part = _BARS.sub(r"\\|\1\\|", parts[i])
        parts[i] = _TRAILING.sub(r"\1\\_", part)
    return "".join(parts)


def escape_lines(lines: list[str]) -> list[str]:
    """Every line escaped but doctest lines and the bodies of literal blocks and
    directives (a line ending in ``::`` opens one, indented lines continue it)."""
    out, block_indent = [], None
    for line in lines:
        stripped = line.lstrip()
        indent = len(line) - len(stripped)
        if block_indent is not None and (not stripped or indent > block_indent):
            out.append(line)
            continue
        block_indent = None
        if stripped.startswith((">>>", "...")):
            out.append(line)
            continue
        out.append(escape_text(line))
        if stripped.endswith("::"):
            block_indent = indent
    return out


def _process(app, what, name, obj, options, lines) -> None:
    lines[:] = escape_lines(lines)


def _skip_sklearn_members(app, what, name, obj, skip, options):
    module = getattr(obj, "__module__", None) or ""
    qualname = getattr(obj, "__qualname__", "")
    if module.startswith("sklearn.") or "_metadata_requests" in qualname:
        return True
    return None


def setup(app):
    # after numpydoc (priority 500), which writes the reStructuredText this escapes
    app.connect("autodoc-process-docstring", _process, priority=900)
    app.connect("autodoc-skip-member", _skip_sklearn_members)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
