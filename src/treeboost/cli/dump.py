"""``treeboost dump MODEL``: a saved model's trees, readable, as JSON or CSV.

Data flow: a model file (a Booster's or an estimator's) -> ``Booster.load_model`` ->
``Booster.dump_model()`` written as JSON, or ``Booster.trees_to_dataframe()`` written
as CSV (LightGBM's columns) -> stdout or ``--out`` (an existing file is kept unless
``--force``, as ``treeboost predict`` does).
"""

from __future__ import annotations

import json
import os
import sys

from ..exceptions import DataError


def add_parser(sub) -> None:
    """Register the ``dump`` subcommand."""
    p = sub.add_parser("dump", help="print a saved model's trees as JSON or CSV",
                       description="Write the trees of a model saved by `treeboost train "
                                   "--save` (or save_model) in the user's units: raw "
                                   "thresholds, category values.")
    p.add_argument("model", metavar="MODEL", help="model file (JSON)")
    p.add_argument("--format", choices=("json", "csv"), default="json",
                   help="json: Booster.dump_model(); csv: Booster.trees_to_dataframe(), "
                        "one row per node (default: json)")
    p.add_argument("--out", metavar="FILE", help="file to write (default: stdout)")
    p.add_argument("--force", action="store_true", help="overwrite an existing --out file")
    p.set_defaults(handler=run)


def _text(booster, fmt: str) -> str:
    """The model in format ``fmt``, as one string."""
    if fmt == "json":
        return json.dumps(booster.dump_model(), indent=1, allow_nan=False) + "\n"
    # every digit of the floats: a reader gets back the model's numbers exactly
    return booster.trees_to_dataframe().to_csv(index=False, float_format="%.17g")


def run(args) -> int:
    """Run ``treeboost dump``."""
    from ..booster import Booster
    from ..serialization import _write_atomic

    if args.out and os.path.exists(args.out) and not args.force:
        raise FileExistsError(f"{args.out} exists; pass --force to overwrite it")
    if not os.path.isfile(args.model):
        raise DataError(f"{args.model}: no such model file")
    text = _text(Booster.load_model(args.model), args.format)
    if args.out:
        # written aside and renamed: a reader never sees half a file, a kill leaves none
        _write_atomic(args.out, text, what="treeboost dump")
        print(f"wrote the {args.format} dump of {args.model} to {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
