"""The documentation's examples run, and the documentation names everything the package exports.

Every ``.rst`` page under ``docs/`` (but the study reports in ``docs/study/``, the API pages
autosummary writes to ``docs/generated/`` and Sphinx's build and private folders,
``docs/_*``) has its ``.. code-block:: python`` blocks executed
in page order, in one namespace, in a temporary working directory (issue 36: examples that
cannot go stale). The blocks' own ``assert`` lines are the checks; a block that raises fails
its page. A page whose examples need an optional dependency that is not installed
(matplotlib, onnxruntime, treelite, dask, tqdm, ...) is skipped, not failed. Shell examples are
``.. code-block:: console`` and are not run.

The second half checks that the pages mention every estimator, loss name and command-line
command the package exports, so a new one cannot ship undocumented.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
#: the languages a code block may declare: python runs, the others are shown only
LANGUAGES = {"python", "console", "text", "json", "csv", "none"}
#: optional dependencies: a page needing one that is missing is skipped
OPTIONAL = {"matplotlib", "onnx", "onnxruntime", "treelite", "dask", "distributed", "optuna",
            "polars", "pyarrow", "lightgbm", "xgboost", "tqdm"}

_DIRECTIVE = re.compile(r"^(?P<indent>[ \t]*)\.\. (?:code-block|code|sourcecode)::[ \t]*"
                        r"(?P<lang>\S*)[ \t]*$")


def _pages() -> list[Path]:
    """The written pages: docs/**/*.rst but docs/study, docs/generated and docs/_*."""
    pages = []
    for path in sorted(DOCS.rglob("*.rst")):
        parts = path.relative_to(DOCS).parts
        if parts[0] in ("study", "generated") or any(p.startswith("_") for p in parts[:-1]):
            continue
        pages.append(path)
    return pages


def code_blocks(text: str) -> list[tuple[str, int, str]]:
    """``(language, line number, code)`` of every code-block directive of an rst text.

    The body is the indented block after the directive's options and the blank line,
    dedented by its first line's indentation.
    """
    lines = text.splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        match = _DIRECTIVE.match(lines[i])
        if match is None:
            i += 1
            continue
        base = len(match["indent"].expandtabs())
        i += 1
        while i < len(lines) and lines[i].strip().startswith(":") and \
                len(lines[i]) - len(lines[i].lstrip()) > base:
            i += 1  # the directive's options (:caption:, :emphasize-lines:, ...)
        start = i  # 0-based index of the body's first line
        body = []
        while i < len(lines) and (not lines[i].strip()
                                  or len(lines[i]) - len(lines[i].lstrip()) > base):
            body.append(lines[i])
            i += 1
        while body and not body[-1].strip():
            body.pop()
        while body and not body[0].strip():
            body.pop(0)
            start += 1
        indent = min((len(x) - len(x.lstrip()) for x in body if x.strip()), default=0)
        code = "\n".join(x[indent:] for x in body) + "\n"
        blocks.append((match["lang"] or "none", start + 1, code))
    return blocks


PAGES = _pages()


def _page_id(path: Path) -> str:
    return str(path.relative_to(DOCS))


def test_the_docs_have_pages():
    names = {_page_id(p) for p in PAGES}
    for expected in ("getting_started.rst", "guide/index.rst", "benchmarks.rst",
                     "changelog.rst"):
        assert expected in names


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_code_blocks_declare_a_known_language(page):
    for lang, line, _ in code_blocks(page.read_text(encoding="utf-8")):
        assert lang in LANGUAGES, f"{_page_id(page)}:{line}: code-block language {lang!r}"


@pytest.mark.parametrize("page", [p for p in PAGES if any(
    lang == "python" for lang, _, _ in code_blocks(p.read_text(encoding="utf-8")))],
    ids=_page_id)
def test_page_examples_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the examples write model files and figures where they run
    monkeypatch.setenv("MPLBACKEND", "Agg")  # figures without a display
    try:
        import matplotlib
    except ModuleNotFoundError:
        pass
    else:
        matplotlib.use("Agg")
    namespace: dict = {"__name__": "docs_example"}
    name = _page_id(page)
    for lang, line, code in code_blocks(page.read_text(encoding="utf-8")):
        if lang != "python":
            continue
        # line numbers of the page in tracebacks: the block compiled at its place
        source = "\n" * (line - 1) + code
        try:
            exec(compile(source, f"docs/{name}", "exec"), namespace)  # noqa: S102
        except ImportError as exc:
            # a missing optional module, raised as it is or as the cause of a library's
            # own ImportError that says how to install it
            missing = exc if isinstance(exc, ModuleNotFoundError) else exc.__cause__
            root = (getattr(missing, "name", None) or "").split(".")[0]
            if isinstance(missing, ModuleNotFoundError) and root in OPTIONAL:
                pytest.skip(f"docs/{name}:{line} needs {root}, not installed")
            raise
    try:
        import matplotlib.pyplot as plt
    except ModuleNotFoundError:
        pass
    else:
        plt.close("all")


# ---- what the pages must mention ----------------------------------------------------------
def _docs_text() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in PAGES)


def _exported_estimators() -> list[str]:
    import treeboost

    modules = [treeboost]
    try:
        import treeboost.dask as tb_dask
    except ModuleNotFoundError:  # the dask extra is not installed
        pass
    else:
        modules.append(tb_dask)
    names = []
    for module in modules:
        for name in module.__all__:
            obj = getattr(module, name)
            # scikit-learn's estimator protocol (the tree estimators implement it
            # without inheriting BaseEstimator: _sklearn_api)
            if isinstance(obj, type) and hasattr(obj, "get_params") and hasattr(obj, "fit"):
                names.append(name)
    return names


def _cli_commands() -> list[str]:
    import argparse

    from treeboost.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sorted(sub.choices)


def test_docs_name_every_estimator():
    names = _exported_estimators()
    assert {"TreeBoostRegressor", "TreeBoostClassifier", "TreeBoostRanker"} <= set(names)
    text = _docs_text()
    missing = [n for n in names if not re.search(rf"\b{n}\b", text)]
    assert not missing, f"estimators the docs never mention: {missing}"


def test_docs_name_every_loss():
    from treeboost import available_losses

    names = available_losses()
    assert "lambdarank" in names
    text = _docs_text()
    missing = [n for n in names if not re.search(rf"[`'\"]{n}[`'\"]", text)]
    assert not missing, f"losses the docs never mention (quoted): {missing}"


def test_docs_name_every_command():
    commands = _cli_commands()
    assert {"train", "predict", "study"} <= set(commands)
    text = _docs_text()
    missing = [c for c in commands if f"treeboost {c}" not in text]
    assert not missing, f"commands the docs never show as 'treeboost <command>': {missing}"


def test_code_blocks_are_found():
    text = """Intro.

.. code-block:: python
   :caption: x

   a = 1
   if a:
       b = 2

   c = 3

After.

.. code-block:: console

   $ treeboost train x.csv
"""
    blocks = code_blocks(text)
    assert [(lang, code) for lang, _, code in blocks] == [
        ("python", "a = 1\nif a:\n    b = 2\n\nc = 3\n"),
        ("console", "$ treeboost train x.csv\n")]
    assert blocks[0][1] == 6  # the code's first line in the page
