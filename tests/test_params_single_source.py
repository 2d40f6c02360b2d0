"""Every parameter is spelled once: the table of ``treeboost.params`` (issue 12).

The estimators' signatures and docstrings, the engine's typed records
(``BoostingParams``, ``GrowerParams``) and the names ``train`` passes on are
read from the table; these tests check that they agree with it, and scan the
package's source for a default written out again (a keyword default, a
dataclass field or a ``.get(name, default)`` equal to the table's default),
so that adding a parameter is one table entry.
"""

import ast
import inspect
import re
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone

from treeboost import TreeBoostClassifier, TreeBoostRanker, TreeBoostRegressor
from treeboost.booster import BoostingParams
from treeboost.grower import GrowerParams
from treeboost.params import PARAMS, Param, params_for, part_names

SRC = Path(__file__).resolve().parents[1] / "src" / "treeboost"
ESTIMATORS = [("regressor", TreeBoostRegressor), ("classifier", TreeBoostClassifier),
              ("ranker", TreeBoostRanker)]

#: (module, parameter name) -> why a default equal to the table's is written there
ALLOWED_REPEATS = {
    **{("grower.py", name): "GrowerParams: grower.py is rewritten on another branch; "
       "test_grower_params_agree_with_the_table pins its defaults to the table"
       for name in part_names("grower")},
    **{("generic.py", name): "GenericGradientBoostingRegressor, an estimator of its own "
       "(over any scikit-learn regressor) whose parameters are not the table's"
       for name in ("loss", "n_estimators", "learning_rate", "subsample", "alpha", "power")},
    ("losses/regression.py", "alpha"): "the loss classes' own constructors (get_loss); "
    "the estimators always pass the table's value",
    ("losses/regression.py", "power"): "as alpha",
    **{("losses/ranking.py", name): "as alpha: the ranking losses' constructors"
       for name in ("lambdarank_truncation_level", "lambdarank_norm", "sigmoid",
                    "label_gain")},
    **{("losses/survival.py", name): "as alpha: the AFT loss's constructor"
       for name in ("aft_loss_distribution", "aft_loss_distribution_scale")},
}


@pytest.mark.parametrize(("scope", "cls"), ESTIMATORS)
def test_signature_is_the_table(scope, cls):
    table = params_for(scope)
    signature = inspect.signature(cls)  # what scikit-learn's get_params reads
    assert list(signature.parameters) == list(table)
    for name, parameter in signature.parameters.items():
        p = table[name]
        assert parameter.default is p.default or (
            type(parameter.default) is type(p.default) and parameter.default == p.default)
        expected = (inspect.Parameter.POSITIONAL_OR_KEYWORD if p.positional
                    else inspect.Parameter.KEYWORD_ONLY)
        assert parameter.kind == expected, name
    assert cls().get_params() == {name: p.default for name, p in table.items()}


@pytest.mark.parametrize(("scope", "cls"), ESTIMATORS)
def test_init_is_a_plain_function_that_stores(scope, cls):
    assert "__signature__" not in vars(cls.__init__)  # a compiled signature, not a mask
    est = cls("exponential" if scope == "classifier" else "huber", n_estimators=7)
    assert (est.loss, est.n_estimators) == (est.get_params()["loss"], 7)
    assert clone(est).get_params() == est.get_params()
    with pytest.raises(TypeError, match="unexpected keyword argument 'n_trees'"):
        cls(n_trees=5)
    with pytest.raises(TypeError, match="takes from 1 to 2 positional arguments"):
        cls("log_loss", 100)  # only loss is positional
    with pytest.raises(TypeError, match="multiple values for argument 'loss'"):
        cls("log_loss", loss="log_loss")


@pytest.mark.parametrize(("scope", "cls"), ESTIMATORS)
def test_docstring_parameters_are_the_table(scope, cls):
    section = cls.__doc__.split("Parameters\n----------\n")[1].split("\nAttributes\n")[0]
    names = re.findall(r"^(\w+) : ", section, flags=re.M)
    assert names == list(params_for(scope))
    for p in params_for(scope).values():
        assert f"{p.name} : {p.describe()}, default={p.default!r}\n    {p.doc}" in section


def test_typed_views_are_the_table():
    booster = [f.name for f in fields(BoostingParams) if f.name != "grower"]
    assert booster == list(part_names("booster"))
    defaults = BoostingParams()
    for name in booster:  # the engine's defaults are the regressor's
        assert getattr(defaults, name) == params_for("regressor")[name].default, name
    assert {p.name for p in PARAMS if p.part in ("booster", "grower")} == set(booster) | set(
        part_names("grower"))


def test_loss_parameters_reach_the_loss():
    assert part_names("loss", "regressor") == ("alpha", "power", "aft_loss_distribution",
                                               "aft_loss_distribution_scale")
    assert part_names("loss", "ranker") == ("lambdarank_truncation_level", "lambdarank_norm",
                                            "sigmoid", "label_gain")
    ranker = TreeBoostRanker(lambdarank_truncation_level=5, sigmoid=2.0, label_gain=[0, 1, 5])
    assert ranker._make_loss().get_params() == {
        "lambdarank_truncation_level": 5, "lambdarank_norm": True, "sigmoid": 2.0,
        "label_gain": [0.0, 1.0, 5.0]}
    assert TreeBoostRanker("pairwise", sigmoid=0.5)._make_loss().get_params() == {
        "sigmoid": 0.5}
    est = TreeBoostRegressor("tweedie", power=1.7, alpha=0.3)
    assert est._make_loss().get_params() == {"power": 1.7}
    assert TreeBoostRegressor("quantile", alpha=0.3)._make_loss().get_params() == {"alpha": 0.3}
    assert TreeBoostRegressor("aft", aft_loss_distribution="extreme")._make_loss().get_params() \
        == {"aft_loss_distribution": "extreme", "aft_loss_distribution_scale": 1.0}


def test_grower_params_agree_with_the_table():
    # GrowerParams is still written out in grower.py (owned by the grower rewrite)
    grower = {f.name: f.default for f in fields(GrowerParams)}
    assert set(grower) == set(part_names("grower"))
    for name, value in grower.items():
        assert value == params_for("regressor")[name].default, name


def _literal(node):
    try:
        return ast.literal_eval(node)
    except ValueError:
        return _NOT_LITERAL


_NOT_LITERAL = object()


def _defaults_in(tree: ast.AST):
    """(name, default node) of every keyword default, dataclass field and .get/getattr."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            a = node.args
            positional = a.posonlyargs + a.args
            yield from zip([x.arg for x in positional[len(positional) - len(a.defaults):]],
                           a.defaults, strict=True)
            yield from ((x.arg, d) for x, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)
                        if d is not None)
        elif isinstance(node, ast.ClassDef):
            yield from ((s.target.id, s.value) for s in node.body
                        if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
                        and s.value is not None)
        elif isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            at = {"get": 0, "pop": 0, "setdefault": 0, "getattr": 1}.get(name)
            if at is not None and len(node.args) > at + 1 and isinstance(node.args[at],
                                                                          ast.Constant):
                yield node.args[at].value, node.args[at + 1]


def _repeats(source: str, table: dict[str, list[Param]]) -> list[tuple[str, object]]:
    """Defaults in ``source`` equal to (or a list holding) a table default of that name.

    None is not counted: it is every optional argument's "not given".
    """
    found = []
    for name, node in _defaults_in(ast.parse(source)):
        value = _literal(node)
        if name not in table or value is None or value is _NOT_LITERAL:
            continue
        values = value if isinstance(value, (list, tuple)) else [value]
        for p in table[name]:
            if any(type(v) is type(p.default) and v == p.default for v in values):
                found.append((name, value))
    return found


def _table() -> dict[str, list[Param]]:
    table: dict[str, list[Param]] = {}
    for p in PARAMS:
        table.setdefault(p.name, []).append(p)
    return table


def test_no_default_is_written_twice():
    table, found = _table(), []
    for path in sorted(SRC.rglob("*.py")):
        module = path.relative_to(SRC).as_posix()
        if module == "params.py":
            continue
        found += [f"{module}: {name}={value!r}" for name, value in
                  _repeats(path.read_text(encoding="utf-8"), table)
                  if (module, name) not in ALLOWED_REPEATS]
    assert not found, "defaults repeated outside the parameter table: " + ", ".join(found)


def test_the_repeat_check_can_fail():
    # the shape of the hand-written __init__ and dataclass this table replaced
    source = '''
class Estimator:
    def __init__(self, loss="squared_error", *, n_estimators=100, max_depth=None, tol=1):
        pass

@dataclass
class Params:
    learning_rate: float = 0.1

def read(config):
    return config.get("subsample", 1.0), getattr(config, "max_bins", 255), \\
        config.get("n_estimators", [100]), config.get("colsample_bytree", 0.5)
'''
    found = {(name, repr(value)) for name, value in _repeats(source, _table())}
    # max_depth=None (not counted), tol=1 (an int; the default is 1e-7) and
    # colsample_bytree=0.5 (another value) are not repeats
    assert found == {("loss", "'squared_error'"), ("n_estimators", "100"),
                     ("learning_rate", "0.1"), ("subsample", "1.0"), ("max_bins", "255"),
                     ("n_estimators", "[100]")}


# ---- fit keeps no hidden state ----------------------------------------------------
@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4))
    return X, X[:, 0] + 0.1 * rng.normal(size=200)


def test_fit_sets_only_its_declared_attributes(data):
    X, y = data
    est = TreeBoostRegressor(n_estimators=3, trace=True)
    before = set(vars(est))
    est.fit(X, y)
    added = set(vars(est)) - before
    assert added <= set(est._FITTED_ATTRIBUTES)
    assert "trace_" in added
    est.set_params(trace=False).fit(X, y)  # a fit's attributes only: no stale trace_
    assert not hasattr(est, "trace_")


def test_a_failed_fit_leaves_the_fitted_model(data):
    X, y = data
    est = TreeBoostRegressor(n_estimators=3, random_state=0).fit(X, y)
    state = dict(vars(est))
    with pytest.raises(ValueError, match="features"):
        est.fit(X[:, :3], y, eval_set=[(X, y)])  # fails after the data checks
    assert vars(est).keys() == state.keys()
    assert all(vars(est)[k] is v for k, v in state.items())


def test_the_seed_is_stored_not_recovered(data):
    X, y = data
    est = TreeBoostRegressor(n_estimators=3, subsample=0.5, random_state=123).fit(X, y)
    assert est.booster_.seed == 123
