"""The training log through ``logging`` and the opt-in progress bar (issue 36, part 4).

Acceptance 4: with ``verbose=1`` the lines reach a handler on the ``treeboost``
logger and nothing is printed to stdout; with logging not configured for INFO they
print to stdout as before. The progress bar is checked with a tqdm-like recorder
passed as ``tqdm_class`` (never by patching a module), and the ``train`` command's
choice of a bar with stand-in streams that are or are not terminals.
"""

import io
import logging
import subprocess
import sys
from contextlib import contextmanager

import numpy as np
import pandas as pd
import pytest

from treeboost import TreeBoostClassifier, TreeBoostRegressor, train
from treeboost._logging import LOGGER, log_info, logging_configured
from treeboost.callbacks import EvaluationLogger, ProgressBar
from treeboost.cli import main
from treeboost.cli.train import progress_callbacks
from treeboost.dataset import Dataset

SMALL = dict(max_leaf_nodes=8, min_samples_leaf=5, random_state=0)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.logistic(size=300) > 0).astype(int)
    return X, y


class Records(logging.Handler):
    """Keeps every record it is handed."""

    def __init__(self):
        super().__init__()
        self.records = []

    def emit(self, record):
        self.records.append(record)


@contextmanager
def configured(level=logging.INFO, handler=None):
    """The ``treeboost`` logger set up as a user would, then put back as it was."""
    saved = LOGGER.level, list(LOGGER.handlers)
    if handler is not None:
        LOGGER.addHandler(handler)
    LOGGER.setLevel(level)
    try:
        yield handler
    finally:
        LOGGER.setLevel(saved[0])
        LOGGER.handlers[:] = saved[1]


# ---- the verbose log ------------------------------------------------------------------
def test_a_handler_on_the_treeboost_logger_takes_the_lines_and_stdout_stays_empty(data,
                                                                                   capsys):
    X, y = data
    with configured(handler=Records()) as handler:
        TreeBoostClassifier(n_estimators=3, verbose=1, **SMALL).fit(X, y, eval_set=[(X, y)])
    assert capsys.readouterr().out == ""
    plan, *messages = [r.getMessage() for r in handler.records]
    assert plan.startswith("execution plan: ")  # the fit's plan, logged first
    assert [m.split("]")[0] for m in messages] == ["[1/3", "[2/3", "[3/3"]
    assert all("training log_loss:" in m and "validation_0 log_loss:" in m for m in messages)
    assert {(r.name, r.levelno) for r in handler.records} == {("treeboost", logging.INFO)}


def test_without_logging_configured_the_lines_print_to_stdout_as_before(data, capsys):
    X, y = data
    # pytest keeps handlers on the root logger, but at its default WARNING level: that
    # does not take INFO lines, so they print (the state of a script that never
    # configured logging)
    assert not logging_configured()
    TreeBoostClassifier(n_estimators=4, verbose=2, **SMALL).fit(X, y)
    plan, *lines = capsys.readouterr().out.splitlines()
    assert plan.startswith("execution plan: ")
    assert len(lines) == 2  # every 2nd stage
    assert lines[0].startswith("[2/4]  training log_loss: ")
    assert lines[1].startswith("[4/4]  training log_loss: ")


def test_a_root_handler_that_lets_info_through_takes_the_lines(data, capsys, caplog):
    X, y = data
    caplog.set_level(logging.INFO)  # the root level, as logging.basicConfig(level=INFO)
    TreeBoostRegressor(n_estimators=2, verbose=1, **SMALL).fit(X, y.astype(float))
    assert capsys.readouterr().out == ""
    assert [r.getMessage()[:5] for r in caplog.records if r.name == "treeboost"] == \
        ["execu", "[1/2]", "[2/2]"]  # the fit's plan first


def test_the_treeboost_logger_level_silences_the_lines(data, capsys):
    X, y = data
    with configured(level=logging.WARNING, handler=Records()) as handler:
        TreeBoostClassifier(n_estimators=3, verbose=1, **SMALL).fit(X, y)
    assert capsys.readouterr().out == ""
    assert handler.records == []


def test_train_function_logs_through_the_logger_too(data, capsys):
    X, y = data
    with configured(handler=Records()) as handler:
        train({"loss": "log_loss", "n_estimators": 2, "verbose": 1},
              Dataset(X, label=y.astype(float)))
    assert capsys.readouterr().out == ""
    assert len(handler.records) == 3  # the plan, then the two stages


def test_an_explicit_stream_wins_over_logging():
    stream = io.StringIO()
    with configured(handler=Records()) as handler:
        EvaluationLogger(stream=stream, n_estimators=5).after_iteration(
            0, {"training": {"rmse": [1.5]}})
    assert stream.getvalue() == "[1/5]  training rmse: 1.5\n"
    assert handler.records == []


@pytest.mark.parametrize("setup", ["handler", "level", "filter", "no propagation",
                                   "disabled"])
def test_setting_up_the_logger_in_any_way_counts_as_configured(setup):
    logger = logging.Logger("probe")  # not registered: nothing global changes
    assert not logging_configured(logger)  # root: pytest's handlers at WARNING
    if setup == "handler":
        logger.addHandler(logging.NullHandler())
    elif setup == "level":
        logger.setLevel(logging.ERROR)
    elif setup == "filter":
        logger.addFilter(logging.Filter("elsewhere"))
    elif setup == "no propagation":
        logger.propagate = False
    else:
        logger.disabled = True
    assert logging_configured(logger)


def test_log_info_writes_the_current_stdout_when_not_configured(capsys):
    log_info("a line", logger=logging.Logger("probe"))
    assert capsys.readouterr().out == "a line\n"


# ---- the progress bar -----------------------------------------------------------------
class FakeBar:
    """What ``ProgressBar`` uses of a tqdm bar, recorded."""

    made = None  # the list each new bar is appended to, set per test through a factory

    def __init__(self, **kwargs):
        self.kwargs = kwargs
        self.updates = []
        self.postfix = []
        self.closed = False

    def update(self, n):
        self.updates.append(n)

    def set_postfix_str(self, text, refresh=True):
        self.postfix.append(text)

    def close(self):
        self.closed = True


def recorder():
    """A ``tqdm_class`` and the list of the bars it made."""
    bars = []

    def make(**kwargs):
        bars.append(FakeBar(**kwargs))
        return bars[-1]

    return make, bars


def test_the_bar_counts_every_stage_and_closes(data, capsys):
    X, y = data
    make, bars = recorder()
    TreeBoostClassifier(n_estimators=7, **SMALL).fit(X, y, callbacks=[ProgressBar(
        tqdm_class=make)])
    (bar,) = bars
    assert bar.kwargs["total"] == 7
    assert bar.kwargs["initial"] == 0
    assert bar.updates == [1] * 7
    assert bar.closed
    assert bar.postfix == []  # no metric is logged without an eval set or verbose
    assert capsys.readouterr().out == ""


def test_the_bar_stops_short_with_early_stopping_and_shows_the_monitored_metric(data):
    X, y = data
    make, bars = recorder()
    model = TreeBoostClassifier(n_estimators=300, n_iter_no_change=2, learning_rate=0.5,
                                **SMALL).fit(X, y, eval_set=[(X[:100], y[:100])],
                                             callbacks=[ProgressBar(tqdm_class=make)])
    (bar,) = bars
    run = len(model.evals_result_["validation_0"]["log_loss"])
    assert sum(bar.updates) == run < 300
    assert bar.closed
    assert len(bar.postfix) == run
    assert bar.postfix[-1].startswith("validation_0 log_loss: ")


def test_the_bar_of_continued_training_starts_at_the_stages_already_there(data):
    X, y = data
    make, bars = recorder()
    progress = ProgressBar(tqdm_class=make)  # one callback, two fits
    model = TreeBoostClassifier(n_estimators=5, warm_start=True, **SMALL)
    model.fit(X, y, callbacks=[progress])
    model.set_params(n_estimators=8).fit(X, y, callbacks=[progress])
    assert [(b.kwargs["initial"], b.kwargs["total"], sum(b.updates)) for b in bars] == \
        [(0, 5, 5), (5, 8, 3)]
    assert all(b.closed for b in bars)
    assert progress.bar is None


def test_the_bar_with_tqdm_itself(data):
    pytest.importorskip("tqdm")
    X, y = data
    out = io.StringIO()
    TreeBoostClassifier(n_estimators=3, **SMALL).fit(X, y, callbacks=[ProgressBar(file=out)])
    assert "boosting" in out.getvalue()
    assert "3/3" in out.getvalue()


# ---- the train command ----------------------------------------------------------------
class Stream(io.StringIO):
    """A stand-in for stderr, a terminal or not."""

    def __init__(self, terminal):
        super().__init__()
        self.terminal = terminal

    def isatty(self):
        return self.terminal


@pytest.mark.parametrize(("mode", "verbose", "terminal", "bar"), [
    ("auto", 0, True, True),
    ("auto", 0, False, False),  # a log file or a pipe
    ("auto", 1, True, False),  # the verbose lines are the progress
    ("off", 0, True, False),
    ("on", 0, False, True),
])
def test_the_cli_draws_a_bar_only_on_a_terminal_unless_told(mode, verbose, terminal, bar):
    make, _ = recorder()
    callbacks = progress_callbacks(mode, verbose, Stream(terminal), tqdm_class=make)
    assert [type(c) for c in callbacks] == ([ProgressBar] if bar else [])


def _csv(path):
    rng = np.random.default_rng(1)
    x = rng.uniform(-2, 2, size=200)
    pd.DataFrame({"x": x, "y": x ** 2 + 0.1 * rng.normal(size=200)}).to_csv(path, index=False)


def test_cli_train_writes_no_bar_when_stderr_is_not_a_terminal(tmp_path, capsys):
    _csv(tmp_path / "d.csv")
    code = main(["train", str(tmp_path / "d.csv"), "--target", "y", "--n-estimators", "5"])
    out = capsys.readouterr()
    assert code == 0
    assert out.err == ""  # capsys's stderr is no terminal: no bar, not even its clearing
    assert out.out.startswith("data ")


def test_without_tqdm_a_bar_asked_for_is_an_error_saying_how_to_install_it(tmp_path):
    # a child process in which tqdm cannot be imported (this process keeps its own)
    _csv(tmp_path / "d.csv")
    code = f"""
import sys
sys.modules["tqdm"] = None
from treeboost.callbacks import ProgressBar
from treeboost.cli import main
try:
    ProgressBar()
except ImportError as exc:
    print("@@ ProgressBar:", exc)
argv = ["train", {str(tmp_path / "d.csv")!r}, "--target", "y", "--n-estimators", "3"]
print("@@ auto:", main([*argv, "--format", "json"]))  # no terminal, no tqdm: no bar, no error
print("@@ on:", main([*argv, "--progress", "on"]))
"""
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True)
    lines = [line[3:] for line in child.stdout.splitlines() if line.startswith("@@ ")]
    assert lines[0].startswith("ProgressBar: ProgressBar draws its bar with tqdm, which is "
                               "not installed: pip install 'treeboost[progress]'")
    assert lines[1:] == ["auto: 0", "on: 1"]
    assert child.stderr == ("treeboost train: error: --progress on draws the bar with tqdm, "
                            "which is not installed: pip install 'treeboost[progress]'\n")
