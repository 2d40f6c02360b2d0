"""``import treeboost`` imports its public names on first use (PEP 562).

Each check runs in a fresh process: what a module imports stays imported.
"""

import json
import subprocess
import sys

import pytest

import treeboost

CHILD = """
import json, sys
import treeboost
bare = sorted(m for m in ("sklearn", "numba", "scipy", "pandas", "treeboost.sklearn")
              if m in sys.modules)
from treeboost import TreeBoostClassifier
estimator = sorted(m for m in ("treeboost.adaboost", "treeboost.generic", "treeboost.survival")
                   if m in sys.modules)
print(json.dumps({"bare": bare, "estimator": estimator,
                  "module": TreeBoostClassifier.__module__}))
"""


def test_import_loads_nothing_heavy_and_names_load_on_use():
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                         check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["bare"] == []  # the version only: no scikit-learn, Numba, SciPy, pandas
    # the estimators need none of the other estimators' modules
    assert result["estimator"] == []
    assert result["module"] == "treeboost.sklearn"


def test_every_public_name_resolves_to_its_module_object():
    import treeboost.adaboost
    import treeboost.sklearn
    import treeboost.training

    assert treeboost.TreeBoostClassifier is treeboost.sklearn.TreeBoostClassifier
    assert treeboost.AdaBoostClassifier is treeboost.adaboost.AdaBoostClassifier
    assert treeboost.train is treeboost.training.train
    for name in treeboost.__all__:
        assert getattr(treeboost, name) is not None
        assert name in dir(treeboost)


def test_an_unknown_name_is_an_attribute_error_naming_it():
    with pytest.raises(AttributeError, match="TreeBoostClasifier"):
        treeboost.TreeBoostClasifier  # noqa: B018 - the misspelling is the point
