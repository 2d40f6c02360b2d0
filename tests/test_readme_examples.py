"""The README's runnable sections run as written (issue 34: examples that cannot go stale).

Each listed section's ``python`` code blocks are executed in order, in one namespace, in a
temporary working directory (they write model files); their own ``assert`` lines are the
checks, and a block that raises fails the test.
"""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
#: headings of the sections whose examples are complete programs
RUNNABLE = [
    "### Reading a model: `dump_model`, `trees_to_dataframe`, `treeboost dump`",
    "### Predict options and explanations",
    "### Plots",
    "### Export: ONNX and treelite",
]


def _section_blocks(text: str, heading: str) -> list[str]:
    start = text.index(heading + "\n")
    rest = text[start + len(heading) + 1:]
    end = re.search(r"^#{2,3} ", rest, flags=re.MULTILINE)
    body = rest if end is None else rest[:end.start()]
    return re.findall(r"```python\n(.*?)```", body, flags=re.DOTALL)


@pytest.mark.parametrize("heading", RUNNABLE)
def test_readme_section_runs(heading, tmp_path, monkeypatch):
    blocks = _section_blocks(README.read_text(encoding="utf-8"), heading)
    assert blocks, f"no python block under {heading!r}"
    monkeypatch.chdir(tmp_path)  # the examples write model.json where they run
    namespace: dict = {"__name__": "readme_example"}
    for block in blocks:
        exec(compile(block, f"README.md: {heading}", "exec"), namespace)  # noqa: S102
