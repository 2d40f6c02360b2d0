"""The study's progress bar: done/total counts results, the time left is weighted by each
unit's predicted cost and the seconds measured per unit of cost (issue 11, item 5).

Units run on a fake clock whose seconds per unit of predicted cost the test chooses, so
the true time left is known exactly.
"""

import io

import pytest

import treeboost.study as study_package
from test_cli import write_arff
from treeboost.study import run_study
from treeboost.study.progress import Progress


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def run_units(progress, clock, units, results_per_unit=4):
    """Run ``(group, predicted cost, true seconds)`` units one after another; yield after
    each the estimate and the true time left."""
    for i, (group, cost, seconds) in enumerate(units):
        clock.now += seconds
        progress.update(results_per_unit, group=group, cost=cost, seconds=seconds)
        yield progress.seconds_left(), sum(s for _, _, s in units[i + 1:])


def make(units, clock, done=0, jobs=1, weighted=True, results_per_unit=4):
    work = {}
    for group, cost, _ in units:
        work[group] = work.get(group, 0.0) + cost
    total = done + results_per_unit * len(units)
    return Progress(total, done, stream=None, work=work if weighted else None, jobs=jobs,
                    clock=clock)


def test_large_unit_first_does_not_inflate_the_estimate():
    # a 100-cost unit first, then 100 units of cost 1; the truth: 0.05 s per cost unit
    units = [(("fit", "d"), 100.0, 5.0)] + [(("fit", "d"), 1.0, 0.05)] * 100
    clock = FakeClock()
    progress = make(units, clock)
    assert progress.seconds_left() is None  # nothing measured yet
    estimate, truth = next(run_units(progress, clock, units))
    assert truth == pytest.approx(5.0)
    # the cost model is exact here, so is the estimate (up to float rounding)
    assert estimate == pytest.approx(truth, rel=1e-9)
    # the count of results extrapolated: 5 s for 1 unit -> 500 s for the 100 left
    count_clock = FakeClock()
    count_based = make(units, count_clock, weighted=False)
    count_estimate, _ = next(run_units(count_based, count_clock, units))
    assert count_estimate > 50 * truth
    # the bar counts results, not cost
    assert "4/404 (1%)" in progress.text()
    assert "eta 00:05" in progress.text()


def test_rate_is_measured_per_group_and_borrowed_until_then():
    # equal predicted costs, but dataset b is truly 3x slower per unit of cost than a
    units = [(("fit", "a"), 10.0, 1.0)] * 5 + [(("fit", "b"), 10.0, 3.0)] * 5
    clock = FakeClock()
    progress = make(units, clock)
    estimates = list(run_units(progress, clock, units))
    # after a's units only, b borrows a's rate: 5 units x 1 s, where the truth is 15 s
    assert estimates[4] == pytest.approx((5.0, 15.0))
    # once one unit of b is measured, b's own rate counts: exact from there on
    for estimate, truth in estimates[5:]:
        assert estimate == pytest.approx(truth)


def test_reference_models_borrow_their_own_kind_first():
    # LightGBM measured on dataset a predicts LightGBM on b better than b's fits would
    units = [(("fit", "a"), 10.0, 1.0), (("baseline lightgbm", "a"), 10.0, 0.2),
             (("fit", "b"), 10.0, 1.0), (("baseline lightgbm", "b"), 10.0, 0.2)]
    clock = FakeClock()
    estimates = list(run_units(make(units, clock), clock, units))
    assert estimates[2] == pytest.approx((0.2, 0.2))


def test_parallel_workers_and_stored_results():
    # 2 workers: each measured unit took 10 s of one worker, two run at once; 6 results
    # stored by an earlier run count as done and carry no time
    units = [(("fit", "d"), 1.0, 10.0)] * 6
    clock = FakeClock()
    progress = make(units, clock, done=6, jobs=2)
    clock.now = 10.0
    progress.update(4, group=("fit", "d"), cost=1.0, seconds=10.0)
    progress.update(4, group=("fit", "d"), cost=1.0, seconds=10.0)
    # 4 units left, two at a time, 10 s each
    assert progress.seconds_left() == pytest.approx(20.0)
    assert "14/30" in progress.text()
    # a result counted without computing it (a repeated proposal) leaves the rate alone
    progress.update(4, group=("fit", "d"), cost=1.0, seconds=None)
    assert progress.seconds_left() == pytest.approx(15.0)


@pytest.mark.parametrize("search", ["grid", "bayes"])
def test_runner_predicts_the_work_it_then_does(tmp_path, monkeypatch, search):
    """Every group's predicted work is taken off exactly by its finished units, and
    every unit reports its measured seconds."""
    seen = []

    class Recording(Progress):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.initial = dict(self.work)
            seen.append(self)

    monkeypatch.setattr(study_package, "Progress", Recording)
    data = [write_arff(tmp_path / "synth.arff", n=80), write_arff(tmp_path / "other.arff",
                                                                   n=50)]
    grid = ["learning_rate=0.1,0.3", "max_leaf_nodes=2,3", "n_estimators=3,6",
            "subsample=1.0"]
    run_study(data, tmp_path / "s", grid=grid, search=search, trials=4, folds=2,
              baselines=["treeboost"], report=False, progress=io.StringIO())
    (progress,) = seen
    assert progress.done == progress.total
    assert set(progress.initial) == {(kind, name) for kind in ("fit", "baseline treeboost")
                                     for name in ("synth", "other")}
    assert all(cost > 0 for cost in progress.initial.values())
    # the sums of many floats may differ from the total by rounding only
    assert all(left == pytest.approx(0.0, abs=1e-6 * progress.initial[group])
               for group, left in progress.work.items())
    measured_seconds, measured_cost = progress._measured[()]
    assert measured_cost == pytest.approx(sum(progress.initial.values()))
    assert measured_seconds > 0
