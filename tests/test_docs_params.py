"""The docs' parameter reference is the parameter table (issue 36).

``docs/parameters.rst`` holds only a directive; the page is the text that
``treeboost._param_doc.parameters_rst()`` writes from ``treeboost.params.PARAMS``. These
tests read that text (no Sphinx needed) against the table: every parameter once, with
its defaults, choices and estimators, and a parameter added to the table shows up.
The last ones build the page with Sphinx (skipped where Sphinx is not installed).
"""

import re
from pathlib import Path

import pytest

from treeboost import _param_doc, params

DOCS = Path(__file__).resolve().parent.parent / "docs"


def _sections(text: str) -> dict[str, str]:
    """The page's text cut at each ``.. _param-NAME:`` label, by NAME."""
    pieces = re.split(r"^\.\. _param-(\w+):$", text, flags=re.MULTILINE)
    names = pieces[1::2]
    assert len(names) == len(set(names)), "a parameter has two sections"
    return dict(zip(names, pieces[2::2], strict=True))


def _fields(section: str, field: str) -> list[str]:
    return re.findall(rf"^:{field}: (.*)$", section, flags=re.MULTILINE)


@pytest.fixture(scope="module")
def page() -> str:
    return _param_doc.parameters_rst()


def test_every_parameter_listed_once(page):
    table_names = list(dict.fromkeys(p.name for p in params.PARAMS))
    assert sorted(_sections(page)) == sorted(table_names)  # sections by group
    summary = page.split(".. _param-")[0]
    assert re.findall(r":ref:`(\w+) <param-\1>`", summary) == table_names


def test_defaults_match_the_table(page):
    sections = _sections(page)
    for name, section in sections.items():
        shown = _fields(section, "Default")
        expected = [f"``{p.default!r}``" for p in params.PARAMS if p.name == name]
        assert sorted(shown) == sorted(expected), name


def test_each_estimator_entry_shown(page):
    sections = _sections(page)
    classes = {"regressor": ["TreeBoostRegressor"], "classifier": ["TreeBoostClassifier"],
               "ranker": ["TreeBoostRanker"],
               "all": ["TreeBoostRegressor", "TreeBoostClassifier", "TreeBoostRanker"]}
    for name, section in sections.items():
        entries = [p for p in params.PARAMS if p.name == name]
        taken = _fields(section, "Taken by")
        assert len(taken) == len(entries), name
        for p in entries:
            assert any(all(f"treeboost.{c}`" in line for c in classes[p.scope])
                       for line in taken), (name, p.scope)
            train_ok = [line for line in taken if "treeboost.train`" in line]
            assert bool(train_ok) == (p.name not in _param_doc.ESTIMATOR_ONLY), name


def test_choices_bounds_and_descriptions_shown(page):
    sections = _sections(page)
    for p in params.PARAMS:
        section = sections[p.name]
        allowed = " ".join(_fields(section, "Allowed"))
        if p.kind == "str":
            assert all(f"``{c!r}``" in allowed for c in p.choices), p.name
        elif p.kind in ("int", "float"):
            # the bounds as the error messages write them, escaped as markup
            assert _param_doc.escape(p.describe()) in allowed, p.name
        # the description, escaped as markup, word for word
        assert _param_doc.escape(p.doc) in section, p.name


def test_peer_names_and_estimator_only_name_table_entries():
    names = {p.name for p in params.PARAMS}
    assert set(_param_doc.PEER_NAMES) <= names
    assert all(len(v) == len(_param_doc.PEERS) for v in _param_doc.PEER_NAMES.values())
    assert _param_doc.ESTIMATOR_ONLY <= names
    # train() reads every entry with a part by name; only part-less ones can be skipped
    assert all(p.part is None for p in params.PARAMS if p.name in _param_doc.ESTIMATOR_ONLY)


def test_common_peer_names_listed(page):
    sections = _sections(page)
    for ours, theirs in [("max_leaf_nodes", "num_leaves"), ("min_samples_leaf",
                         "min_data_in_leaf"), ("min_samples_leaf", "min_child_samples"),
                         ("reg_lambda", "lambda_l2"), ("reg_lambda", "reg_lambda"),
                         ("colsample_bytree", "feature_fraction"),
                         ("subsample", "bagging_fraction"), ("learning_rate", "eta"),
                         ("n_estimators", "num_iterations"),
                         ("n_estimators", "num_boost_round"),
                         ("min_split_gain", "min_gain_to_split"), ("min_split_gain", "gamma"),
                         ("max_bins", "max_bin")]:
        assert f"``{theirs}``" in sections[ours], (ours, theirs)


def test_parameter_added_to_the_table_appears(monkeypatch):
    new = params.Param("shiny_new_knob", "float", 0.25, "A knob `nobody` turned: |x| < 1.",
                       low=0.0, high=1.0, scope="classifier", part="grower")
    monkeypatch.setattr(params, "PARAMS", [*params.PARAMS, new])
    section = _sections(_param_doc.parameters_rst())["shiny_new_knob"]
    assert _fields(section, "Default") == ["``0.25``"]
    assert _fields(section, "Allowed") == ["a float in [0, 1]"]
    assert "A knob ``nobody`` turned: \\|x\\| < 1." in section


def test_page_is_the_directive():
    text = (DOCS / "parameters.rst").read_text(encoding="utf-8")
    assert ".. treeboost-parameters::" in text
    assert "learning_rate" not in text  # nothing of the table written out by hand


def _build(tmp_path, index: str) -> tuple[int, str, Path]:
    """Build a one-page Sphinx project with the docs' extensions, warnings as errors."""
    from sphinx.cmd.build import build_main

    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(DOCS / '_ext')!r})\n"
        "extensions = ['treeboost_params']\n"
        "default_role = 'literal'\n", encoding="utf-8")
    (src / "index.rst").write_text(index, encoding="utf-8")
    out = tmp_path / "html"
    log = tmp_path / "warnings.txt"
    code = build_main(["-W", "-q", "-b", "html", "-w", str(log), "-d",
                       str(tmp_path / "doctrees"), str(src), str(out)])
    return code, log.read_text(encoding="utf-8") if log.exists() else "", out


def test_sphinx_builds_the_page_without_warnings(tmp_path):
    pytest.importorskip("sphinx")
    code, warnings, out = _build(tmp_path, (DOCS / "parameters.rst").read_text("utf-8"))
    assert code == 0, warnings
    html = (out / "index.html").read_text(encoding="utf-8")
    for name in dict.fromkeys(p.name for p in params.PARAMS):
        assert f'id="param-{name.replace("_", "-")}"' in html, name  # docutils' ids
