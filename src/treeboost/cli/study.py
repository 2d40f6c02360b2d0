"""``treeboost study [DATA ...]`` and ``treeboost report DIR``: options -> ``run_study``.

The options map one to one onto ``treeboost.study.run_study``; the study itself (grid,
processes, database, resume, report) lives in ``treeboost.study``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading

from ._options import seed


def jobs(text: str) -> int:
    """``--jobs``: N >= 1 worker processes, or -1 for all cores, -2 all but one, ..."""
    cores = os.cpu_count() or 1
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value == 0 or value < -cores:
        # 0 means nothing documented (joblib's n_jobs=0 is an error too)
        raise argparse.ArgumentTypeError(
            f"must be a number of worker processes >= 1, or -1 for all cores, -2 for all "
            f"but one, ... down to -{cores} (one) on this machine; got {text!r}")
    return value if value > 0 else cores + 1 + value


def add_parsers(sub) -> None:
    """Register the ``study`` and ``report`` subcommands."""
    p = sub.add_parser(
        "study", help="search hyper-parameters over many datasets; resumable; writes a report",
        description="Every dataset x every configuration of a grid (default: learning_rate "
                    "{0.1,0.05,0.01,0.001} x max_leaf_nodes {2,3,6,11} x n_estimators "
                    "{100,200,500,1000} x subsample {0.6,0.7,0.8,1.0} = 256), or a Bayesian "
                    "search with the same budget (default bounds: learning_rate 0.01-0.3, "
                    "max_leaf_nodes 4-128, min_samples_leaf 5-100, subsample and "
                    "colsample_bytree 0.5-1, reg_lambda 0.001-10, 100-1000 trees). Results "
                    "go to DIR/study.sqlite as they arrive: run the same command again to "
                    "resume a stopped study.")
    p.add_argument("data", nargs="*", metavar="DATA",
                   help="data files or folders of ARFF, CSV or svmlight files (a folder's "
                        "MANIFEST.tsv gives targets and tasks); an svmlight file with query "
                        "groups (qid: or a .query file) is a ranking dataset, scored by "
                        "NDCG@10; a manifest's survival datasets (task survival, an event "
                        "column) are scored by the concordance index; none: scikit-learn's "
                        "bundled datasets")
    p.add_argument("--out", default="study", metavar="DIR",
                   help="folder of the database and the report (default: %(default)s)")
    p.add_argument("--grid", action="append", default=[], metavar="NAME=V1,V2,...",
                   help="replace (or add) one axis of the default grid (with --search bayes, "
                        "of the default bounds); repeatable")
    p.add_argument("--search", choices=["grid", "bayes"], default="grid")
    p.add_argument("--trials", type=int, metavar="N",
                   help="Bayesian budget in configurations per dataset (default: grid size)")
    p.add_argument("--folds", type=int, default=1, metavar="K",
                   help="1: stratified 80/20 hold-out (default); K >= 2: stratified K-fold; "
                        "ranking data is cut by whole queries")
    p.add_argument("--jobs", type=jobs, default=os.cpu_count() or 1, metavar="N",
                   help="worker processes (default: all cores, %(default)s); -1 all cores, "
                        "-2 all but one, ...")
    p.add_argument("--seed", type=seed, default=0, help="seed of the splits and the models")
    p.add_argument("--target", help="target column of files without a manifest")
    p.add_argument("--task", choices=["all", "classification", "regression", "ranking",
                                      "survival"],
                   default="all",
                   help="which datasets to keep (default: all)")
    p.add_argument("--one-hot", action="store_true",
                   help="one-hot encode categorical columns instead of native splits")
    p.add_argument("--baselines", metavar="M1,M2",
                   help="reference models on the same folds, among treeboost (defaults), "
                        "lightgbm, sklearn (default: those installed; sklearn has no "
                        "ranker and sits out ranking datasets, only treeboost runs on "
                        "survival datasets); 'none' for none")
    p.add_argument("--no-report", action="store_true", help="do not write the report")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(handler=run)

    r = sub.add_parser("report", help="(re)write the report of a study folder",
                       description="Write DIR/report.md, DIR/report.html and DIR/figures "
                                   "from DIR/study.sqlite (a running or stopped study "
                                   "shows what is stored so far).")
    r.add_argument("out", metavar="DIR", help="study folder")
    r.set_defaults(handler=run_report)


@contextlib.contextmanager
def _sigterm_as_interrupt(received: dict):
    """Treat SIGTERM (``kill``, a job scheduler, a container stop) like Ctrl-C, so the
    study ends its workers and closes its store instead of dying on the spot.

    ``received["signal"]`` is set once SIGTERM has arrived.
    """
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be set from the main thread
        return

    def handler(signum, frame):
        received["signal"] = signum
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run(args) -> int:
    """Run ``treeboost study``."""
    from ..study import run_study

    baselines = None
    if args.baselines is not None:
        baselines = [] if args.baselines.strip().lower() == "none" else \
            [m.strip() for m in args.baselines.split(",") if m.strip()]
    received: dict = {}
    try:
        with _sigterm_as_interrupt(received):
            run_study(args.data, args.out, grid=args.grid, search=args.search,
                      trials=args.trials, folds=args.folds, jobs=args.jobs,
                      seed=args.seed, one_hot=args.one_hot, target=args.target,
                      task=args.task, baselines=baselines,
                      progress=None if args.quiet else sys.stderr,
                      report=not args.no_report, argv=sys.argv[1:])
    except KeyboardInterrupt:
        print(f"\ninterrupted: results so far are in {args.out}/study.sqlite; run the same "
              "command again to resume", file=sys.stderr)
        return 128 + received.get("signal", signal.SIGINT)
    if not args.no_report:
        print(f"report: {os.path.join(args.out, 'report.md')} and "
              f"{os.path.join(args.out, 'report.html')}")
    return 0


def run_report(args) -> int:
    """Run ``treeboost report``."""
    import sqlite3

    from ..exceptions import DataError
    from ..study.report import write_report
    from ..study.store import Store, check_study_file

    path = os.path.join(args.out, "study.sqlite")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{args.out}: no study.sqlite here (run `treeboost study "
                                f"--out {args.out}` first)")
    check_study_file(path)
    store = Store(args.out)
    try:
        path = write_report(store)
    except sqlite3.DatabaseError as exc:  # damage past the schema: found while reading
        raise DataError(f"{path}: the study database is damaged ({exc})") from exc
    finally:
        store.close()
    print(f"report: {path} and {path.with_suffix('.html')}")
    return 0
