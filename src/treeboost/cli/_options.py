"""Command-line options generated from the parameter table of ``treeboost.params``.

Every estimator parameter a string can express gets an option ``--name-with-dashes``
whose value is typed and checked against the table when the command line is parsed, so
``--learning-rate -1`` fails before any data is read, with the table's message.
"""

from __future__ import annotations

import argparse

from ..params import PARAMS

# set elsewhere (--seed), or not expressible as one token on a command line
_SKIP = {"random_state", "categorical_features", "class_weight"}

#: default of every generated option: "not given", told apart from an explicit "none"
UNSET = object()

#: the task each estimator scope of the parameter table learns
TASKS = {"classifier": "classification", "regressor": "regression", "ranker": "ranking"}


def _applies_to(entries) -> str:
    """"regression", "classification and ranking", ...: the tasks an option is for."""
    return " and ".join(sorted({TASKS[p.scope] for p in entries}))


def seed(text: str) -> int:
    """``--seed``: an int the models take as ``random_state`` (checked by the table)."""
    try:
        value = int(text)
        next(p for p in PARAMS if p.name == "random_state").check(value)
    except (TypeError, ValueError) as exc:
        raise argparse.ArgumentTypeError(str(exc).replace("random_state=", "")
                                         if "random_state" in str(exc) else
                                         f"invalid int value: {text!r}") from exc
    return value


def _entries() -> dict[str, list]:
    table: dict[str, list] = {}
    for p in PARAMS:
        if p.name not in _SKIP and p.kind != "custom":
            table.setdefault(p.name, []).append(p)
    return table


def _typed(entries):
    from ..study.space import _convert

    def convert(text: str):
        errors = []
        for param in entries:
            try:
                value = _convert(param, text)
                param.check(value)
                return value
            except (TypeError, ValueError) as exc:
                errors.append(str(exc))
        raise argparse.ArgumentTypeError(errors[0])

    convert.__name__ = entries[0].kind
    return convert


def add_param_options(parser: argparse.ArgumentParser) -> None:
    """Add one option per estimator parameter of the table (every estimator's scope)."""
    group = parser.add_argument_group("model parameters (see the estimators' docstrings)")
    for name, entries in _entries().items():
        scopes = {p.scope for p in entries}
        note = "" if "all" in scopes or scopes >= set(TASKS) else \
            f" ({_applies_to(entries)} only)"
        if len({p.describe() for p in entries}) == 1:
            values = f"{entries[0].describe()}; default " + \
                "/".join(f"{p.default!r}" for p in entries)
        else:  # per task (--loss): each estimator takes other values
            values = "; ".join(f"{TASKS[p.scope]}: {p.describe()}, default {p.default!r}"
                               for p in entries)
        help_text = f"{entries[0].doc} {values}{note}"
        kwargs = {"choices": list(entries[0].choices)} if entries[0].kind == "str" and \
            len(entries) == 1 and not entries[0].none_ok else {}
        group.add_argument("--" + name.replace("_", "-"), dest=name, default=UNSET,
                           type=_typed(entries), metavar=name.upper(),
                           help=help_text.replace("%", "%%"), **kwargs)


def chosen_params(args: argparse.Namespace, scope: str) -> dict:
    """The parameters given on the command line, checked to apply to ``scope``.

    Raises
    ------
    ValueError
        For an option that does not apply to ``scope``'s estimator ("classifier",
        "regressor" or "ranker"), for example ``--alpha`` on a classification or a
        ranking dataset, or ``--sigmoid`` on a regression dataset.
    """
    chosen = {}
    for name, entries in _entries().items():
        value = getattr(args, name, UNSET)
        if value is UNSET:
            continue
        fitting = [p for p in entries if p.scope in ("all", scope)]
        if not fitting:
            raise ValueError(f"--{name.replace('_', '-')} applies to {_applies_to(entries)} "
                             f"only, and this dataset's task is {TASKS[scope]}")
        fitting[0].check(value)
        chosen[name] = value
    return chosen
