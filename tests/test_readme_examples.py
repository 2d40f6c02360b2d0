"""The README's examples run as written, and the README stays a short, undated overview.

Issue 34 made the README's examples tests; issue 36 cut the README to an overview whose
manual moved to ``docs/`` (their examples run in ``tests/test_docs_examples.py``). Here
every ``python`` code block of the README is executed in order, in one namespace, in a
temporary working directory (the quickstart writes a model file); the blocks' own
``assert`` lines are the checks. The other tests pin what issue 36 asks of the README: at
most 200 lines, the set-up and test commands at the top (CI runs that test command), no
dated figures or commit hashes, and links that lead to pages that exist.
"""

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"
#: the first code block, exactly: CI runs the README's test command
COMMANDS = ("make demo   # set up .venv, run the hyper-parameter study on scikit-learn's "
            "bundled datasets\n"
            "make test   # set up .venv and run the test suite\n")


def _text() -> str:
    return README.read_text(encoding="utf-8")


def test_readme_python_blocks_run(tmp_path, monkeypatch):
    blocks = re.findall(r"```python\n(.*?)```", _text(), flags=re.DOTALL)
    assert blocks, "the README has no python example"
    monkeypatch.chdir(tmp_path)  # the examples write model.json where they run
    namespace: dict = {"__name__": "readme_example"}
    for i, block in enumerate(blocks):
        exec(compile(block, f"README.md: python block {i}", "exec"), namespace)  # noqa: S102


def test_readme_is_short_with_the_two_commands_first():
    text = _text()
    assert len(text.splitlines()) <= 200
    first = re.search(r"```\w*\n(.*?)```", text, flags=re.DOTALL)
    assert first is not None
    assert first.group(1) == COMMANDS


def test_readme_has_no_dated_figures():
    text = _text()
    assert not re.findall(r"\b20\d\d-\d\d-\d\d\b", text), "dates belong in docs/benchmarks.rst"
    # a commit hash: 7 to 40 hex digits with a digit and a letter among them
    hashes = [w for w in re.findall(r"\b[0-9a-f]{7,40}\b", text)
              if re.search(r"\d", w) and re.search(r"[a-f]", w)]
    assert not hashes, f"commit hashes belong in docs/benchmarks.rst: {hashes}"
    assert "still to come" not in text


def test_readme_links_exist():
    links = re.findall(r"\]\(([^)#]+)\)", _text())
    assert links
    missing = [link for link in links if not link.startswith(("http://", "https://"))
               and not (README.parent / link).exists()]
    assert not missing, f"README links to missing files: {missing}"
