"""The study's embedded database: every result stored as it arrives, safe to kill.

One SQLite file (``DIR/study.sqlite``) in WAL mode, written only by the parent process.
Each result is one row keyed by (dataset, config, fold) and committed at once, so a
study killed at any moment keeps all it stored, and a resumed study computes exactly the
keys that are missing. Plain ``INSERT`` (not ``INSERT OR REPLACE``): storing a key twice
is a bug and fails loudly instead of silently overwriting.

Tables: ``meta`` (the settings a resumed study must share), ``datasets`` (size and task),
``runs`` (one row per invocation), ``results`` (treeboost scores), ``baselines``
(reference models' scores under the same folds), ``trials`` (the Bayesian search's
proposals in order, stored before they are computed so that a resumed search replays
the same history).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from pathlib import Path

try:  # POSIX; elsewhere a study folder is not locked against a second process
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None

from ..exceptions import DataError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run INTEGER PRIMARY KEY AUTOINCREMENT, started REAL NOT NULL, finished REAL,
    argv TEXT);
CREATE TABLE IF NOT EXISTS datasets (
    name TEXT PRIMARY KEY, source TEXT, target TEXT, task TEXT NOT NULL,
    n_rows INTEGER NOT NULL, n_features INTEGER NOT NULL, n_classes INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS results (
    dataset TEXT NOT NULL, config TEXT NOT NULL, fold INTEGER NOT NULL,
    score REAL NOT NULL, seconds REAL, run INTEGER NOT NULL,
    PRIMARY KEY (dataset, config, fold));
CREATE TABLE IF NOT EXISTS trials (
    dataset TEXT NOT NULL, trial INTEGER NOT NULL, params TEXT NOT NULL,
    PRIMARY KEY (dataset, trial));
CREATE TABLE IF NOT EXISTS baselines (
    dataset TEXT NOT NULL, model TEXT NOT NULL, fold INTEGER NOT NULL,
    score REAL NOT NULL, seconds REAL, run INTEGER NOT NULL,
    PRIMARY KEY (dataset, model, fold));
"""


_TABLES = ("meta", "runs", "datasets", "results", "trials", "baselines")


def check_study_file(path) -> None:
    """Raise ``DataError`` naming ``path`` unless it is a study database with settings.

    ``treeboost report`` calls this before ``Store`` opens the file, since ``Store``
    creates its tables in whatever SQLite file it is given: a foreign database would be
    altered, an empty or damaged one would fail deep inside SQLite or the report.
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such file (run `treeboost study --out "
                        f"{path.parent}` first)")
    if path.stat().st_size == 0:
        raise DataError(f"{path}: empty file, not a study database")
    try:
        # a plain connection writes nothing until asked to; reading the schema is safe
        with contextlib.closing(sqlite3.connect(path, timeout=60)) as db:
            tables = {row[0] for row in db.execute(
                "SELECT name FROM sqlite_master WHERE type='table'")}
            missing = [t for t in _TABLES if t not in tables]
            settings = None if missing else db.execute(
                "SELECT value FROM meta WHERE key='settings'").fetchone()
    except sqlite3.DatabaseError as exc:
        raise DataError(f"{path}: not a readable SQLite database ({exc}); the file is "
                        "damaged or is not a treeboost study") from exc
    if missing:
        raise DataError(f"{path}: not a treeboost study database (it has no table "
                        f"{', '.join(missing)})")
    try:
        stored = json.loads(settings[0]) if settings is not None else None
        ok = isinstance(stored, dict) and isinstance(stored.get("grid"), dict) and \
            {"search", "folds", "seed"} <= set(stored)  # what the report reads
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise DataError(f"{path}: the study database holds no readable study settings; "
                        "it is damaged or its study never started")


class Store:
    """Open (or create) the database of the study in folder ``out``.

    Parameters
    ----------
    out : str or path-like
        Study folder; created if missing.
    """

    def __init__(self, out):
        self.folder = Path(out)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path = self.folder / "study.sqlite"
        self._lock = None  # the folder's lock file while this process runs the study
        # isolation_level=None: autocommit, transactions are explicit below
        self.db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        try:
            foreign = {row[0] for row in self.db.execute(
                "SELECT name FROM sqlite_master WHERE type='table'")} - {*_TABLES,
                                                                         "sqlite_sequence"}
            if foreign:  # another program's database: adding our tables would alter it
                raise DataError(f"{self.path}: not a treeboost study database (it has "
                                f"tables {', '.join(sorted(foreign))}); use another folder")
            self.db.execute("PRAGMA journal_mode=WAL")
            # NORMAL in WAL mode survives a killed process (only power loss can drop the
            # last commits), and avoids an fsync per result
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            self.db.close()
            raise DataError(f"{self.path}: not a readable SQLite database ({exc}); the "
                            "file is damaged or is not a treeboost study") from exc
        except DataError:
            self.db.close()
            raise

    def close(self) -> None:
        """Close the connection (and give up the folder's lock, if held)."""
        if self._lock is not None:
            self._lock.close()  # closing the descriptor releases the flock
            self._lock = None
        self.db.close()

    def lock(self) -> None:
        """Hold the folder for this process until :meth:`close`.

        Two processes running one study would both propose and store the same trials
        (the second fails on the database's unique keys, halfway); the second is refused
        here instead, before any work, naming the first.

        Raises
        ------
        DataError
            When another process holds the folder.
        """
        if fcntl is None:  # pragma: no cover
            return
        handle = open(self.folder / "study.lock", "a+")  # noqa: SIM115 (held until close)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.seek(0)
            owner = handle.read().strip() or "unknown"
            handle.close()
            raise DataError(f"{self.folder}: another treeboost study (pid {owner}) is running "
                            "in this folder; wait for it to finish, or use another --out "
                            "folder") from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        self._lock = handle

    # ---- settings ----------------------------------------------------------------
    def check_settings(self, settings: dict) -> None:
        """Store the settings of a new study, or check a resumed one has the same.

        Raises
        ------
        ValueError
            When the folder holds a study run with other settings (grid, search,
            folds, seed, ...), whose results could not be mixed with these.
        """
        row = self.db.execute("SELECT value FROM meta WHERE key='settings'").fetchone()
        text = json.dumps(settings, sort_keys=True)
        if row is None:
            self.db.execute("INSERT INTO meta VALUES ('settings', ?)", (text,))
            return
        old = json.loads(row[0])
        if old != json.loads(text):
            diff = {k: (old.get(k), settings.get(k)) for k in sorted(set(old) | set(settings))
                    if old.get(k) != settings.get(k)}
            changes = "; ".join(f"{k}: {a!r} there, {b!r} now" for k, (a, b) in diff.items())
            raise ValueError(f"{self.folder} holds a study with other settings ({changes}); "
                             "use another --out folder, or the same options to resume it")

    def settings(self) -> dict:
        """The stored settings (empty if none)."""
        row = self.db.execute("SELECT value FROM meta WHERE key='settings'").fetchone()
        return {} if row is None else json.loads(row[0])

    # ---- runs and datasets -------------------------------------------------------------
    def start_run(self, argv) -> int:
        """Record a new invocation; return its number."""
        cur = self.db.execute("INSERT INTO runs (started, argv) VALUES (?, ?)",
                              (time.time(), json.dumps(list(argv or []))))
        return int(cur.lastrowid)

    def finish_run(self, run: int) -> None:
        """Mark an invocation as having completed its work."""
        self.db.execute("UPDATE runs SET finished=? WHERE run=?", (time.time(), run))

    def add_dataset(self, info: dict) -> None:
        """Record (or refresh) a dataset's description."""
        self.db.execute(
            "INSERT OR REPLACE INTO datasets VALUES (:name, :source, :target, :task, "
            ":n_rows, :n_features, :n_classes)", info)

    def datasets(self) -> list[dict]:
        """Every dataset described so far."""
        cur = self.db.execute("SELECT * FROM datasets ORDER BY name")
        names = [c[0] for c in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    # ---- results ------------------------------------------------------------------------
    def add_results(self, rows, run: int) -> None:
        """Store results ``(dataset, config, fold, score, seconds)`` in one commit."""
        with self.db:
            self.db.execute("BEGIN")
            self.db.executemany("INSERT INTO results VALUES (?, ?, ?, ?, ?, ?)",
                                [(*row, run) for row in rows])

    def add_trial(self, dataset: str, trial: int, params: str) -> None:
        """Record the Bayesian search's proposal number ``trial`` for ``dataset``."""
        self.db.execute("INSERT INTO trials VALUES (?, ?, ?)", (dataset, trial, params))

    def trials(self, dataset: str) -> list[str]:
        """The proposals stored for ``dataset``, in order (their configuration keys)."""
        return [row[0] for row in self.db.execute(
            "SELECT params FROM trials WHERE dataset=? ORDER BY trial", (dataset,))]

    def add_baseline(self, dataset: str, model: str, fold: int, score: float,
                     seconds: float, run: int) -> None:
        """Store one reference model's score."""
        self.db.execute("INSERT INTO baselines VALUES (?, ?, ?, ?, ?, ?)",
                        (dataset, model, fold, score, seconds, run))

    def done_keys(self, dataset: str | None = None) -> set[tuple[str, str, int]]:
        """The (dataset, config, fold) keys stored (of one dataset if given)."""
        if dataset is None:
            return set(self.db.execute("SELECT dataset, config, fold FROM results"))
        return set(self.db.execute("SELECT dataset, config, fold FROM results WHERE "
                                   "dataset=?", (dataset,)))

    def done_baselines(self) -> set[tuple[str, str, int]]:
        """The (dataset, model, fold) keys of the stored reference scores."""
        return set(self.db.execute("SELECT dataset, model, fold FROM baselines").fetchall())

    def results(self) -> list[tuple]:
        """All results as (dataset, config, fold, score), in key order."""
        return self.db.execute("SELECT dataset, config, fold, score FROM results "
                               "ORDER BY dataset, config, fold").fetchall()

    def baselines(self) -> list[tuple]:
        """All reference scores as (dataset, model, fold, score)."""
        return self.db.execute("SELECT dataset, model, fold, score FROM baselines "
                               "ORDER BY dataset, model, fold").fetchall()
