"""``treeboost export MODEL --to onnx OUT``: a saved model in another runtime's format.

Data flow: a model file (an estimator's or a Booster's) -> the estimator
(``_estimator_io.from_booster``) or the bare Booster -> ``export.to_onnx`` written with
``SerializeToString``, or ``export.to_treelite`` written with treelite's own
``serialize`` -> OUT (an existing file is kept unless ``--force``, as ``treeboost dump``
does).
"""

from __future__ import annotations

import os
import sys

from ..exceptions import DataError


def add_parser(sub) -> None:
    """Register the ``export`` subcommand."""
    p = sub.add_parser("export", help="write a saved model as ONNX or treelite",
                       description="Export a model saved by `treeboost train --save` (or "
                                   "save_model) to another runtime; refused when that "
                                   "format cannot reproduce its predictions exactly.")
    p.add_argument("model", metavar="MODEL", help="model file (JSON)")
    p.add_argument("out", metavar="OUT", help="file to write")
    p.add_argument("--to", choices=("onnx", "treelite"), required=True,
                   help="onnx: an ONNX model (treeboost.export.to_onnx); treelite: "
                        "treelite's serialized model (treeboost.export.to_treelite)")
    p.add_argument("--target-opset", type=int, default=None,
                   help="ONNX opset of the default domain (default: to_onnx's)")
    p.add_argument("--force", action="store_true", help="overwrite an existing OUT")
    p.set_defaults(handler=run)


def _load(path: str):
    """The estimator saved in ``path``, or its Booster when the file records none."""
    from .._estimator_io import from_booster
    from ..serialization import load_booster

    booster, fields = load_booster(path, return_metadata=True)
    if fields.get("estimator") is None:
        return booster
    return from_booster(booster, fields)


def _write_onnx(model, out: str, target_opset) -> None:
    from ..export import to_onnx
    from ..serialization import _write_atomic

    _write_atomic(out, to_onnx(model, target_opset=target_opset).SerializeToString(),
                  what="treeboost export")


def _write_treelite(model, out: str) -> None:
    from ..export import to_treelite
    from ..serialization import _write_atomic

    tl_model = to_treelite(model)
    if not hasattr(tl_model, "serialize_bytes"):
        raise DataError(f"--to treelite: this treelite ({type(tl_model).__module__}) has no "
                        f"Model.serialize_bytes to write {out} with")
    _write_atomic(out, tl_model.serialize_bytes(), what="treeboost export")


def run(args) -> int:
    """Run ``treeboost export``."""
    if os.path.exists(args.out) and not args.force:
        raise FileExistsError(f"{args.out} exists; pass --force to overwrite it")
    if not os.path.isfile(args.model):
        raise DataError(f"{args.model}: no such model file")
    model = _load(args.model)
    try:
        if args.to == "onnx":
            _write_onnx(model, args.out, args.target_opset)
        else:
            _write_treelite(model, args.out)
    except ImportError as exc:
        # the runtime is an optional dependency: say which extra brings it
        extra = "onnx" if args.to == "onnx" else "treelite"
        raise DataError(f"--to {args.to} needs {exc.name or extra}: pip install "
                        f"'treeboost[{extra}]'") from None
    print(f"wrote the {args.to} export of {args.model} to {args.out}", file=sys.stderr)
    return 0
