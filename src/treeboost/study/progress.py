"""A progress line on stderr: done/total, elapsed and estimated time left (no dependency).

The time left is weighted by what each remaining unit of work is expected to cost (the
runner predicts it from rows, classes and trees), scaled by the seconds measured per
unit of predicted cost so far, per group of units where the group has been measured
(a dataset's fits, one reference model): a study that runs its largest datasets first
would otherwise announce hours for a run of minutes.
"""

from __future__ import annotations

import sys
import time


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else \
        f"{rest // 60:02d}:{rest % 60:02d}"


class Progress:
    """Count finished units of work and show a bar with the ETA.

    On a terminal the line is redrawn in place at most ``interval_tty`` apart; otherwise
    (a log file, a CI job) a full line is written every ``interval`` seconds.

    Parameters
    ----------
    total : int
        Results of the whole study (the bar counts results).
    done : int, default=0
        Results already stored by earlier runs (counted, but not in the rate).
    label : str, default="study"
        Text before the bar.
    stream : file, default=sys.stderr
        Where to write; None disables output.
    interval : float, default=10.0
        Seconds between lines when ``stream`` is not a terminal.
    interval_tty : float, default=0.2
        Seconds between redraws on a terminal.
    work : dict of {tuple: float}, default=None
        Predicted cost of the work left, per group of units (a tuple from general to
        specific, e.g. ``("fit", dataset)``). None: the time left is extrapolated
        from the count of results.
    jobs : int, default=1
        Units running at once: measured seconds are one worker's.
    clock : callable, default=time.perf_counter
        Seconds since some origin (a fake clock in tests).
    """

    def __init__(self, total: int, done: int = 0, label: str = "study",
                 stream=sys.stderr, interval: float = 10.0, interval_tty: float = 0.2, *,
                 work: dict | None = None, jobs: int = 1, clock=time.perf_counter):
        self.total, self.done, self.start_done = total, done, done
        self.label, self.stream = label, stream
        self.tty = bool(stream is not None and getattr(stream, "isatty", lambda: False)())
        self.interval = interval_tty if self.tty else interval
        self.work = None if work is None else dict(work)
        self.jobs = max(1, jobs)
        self.clock = clock
        self.started = clock()
        # group prefix -> [measured seconds, predicted cost] of this run's units: a
        # group not measured yet borrows the rate of its nearest measured prefix
        self._measured: dict = {}
        self._last = -float("inf")
        self._shown = None  # the count of the last line written

    def seconds_left(self) -> float | None:
        """Estimated seconds to the end; None while nothing has been measured."""
        if self.done >= self.total:
            return 0.0
        if self.work is None:
            new = self.done - self.start_done
            return (self.clock() - self.started) / new * (self.total - self.done) \
                if new > 0 else None
        if () not in self._measured:
            return None
        left = 0.0
        for group, cost in self.work.items():
            for k in range(len(group), -1, -1):  # the most specific measured rate
                if group[:k] in self._measured:
                    seconds, measured = self._measured[group[:k]]
                    left += cost * seconds / measured
                    break
        return left / self.jobs

    def text(self) -> str:
        """The progress line."""
        width = 28
        fraction = self.done / self.total if self.total else 1.0
        bar = "#" * int(width * fraction) + "-" * (width - int(width * fraction))
        left = self.seconds_left()
        eta = "--:--" if left is None else _clock(left)
        return (f"{self.label} [{bar}] {self.done}/{self.total} ({100 * fraction:.0f}%) "
                f"elapsed {_clock(self.clock() - self.started)} eta {eta}")

    def update(self, n: int = 1, *, group: tuple | None = None, cost: float = 0.0,
               seconds: float | None = None) -> None:
        """Count ``n`` more finished results and redraw if it is time.

        Parameters
        ----------
        n : int, default=1
            Results finished.
        group : tuple, default=None
            Group of the unit that produced them (a key of ``work``).
        cost : float, default=0.0
            The unit's predicted cost, taken off the work left of ``group``.
        seconds : float, default=None
            The unit's measured seconds; None: not in the rate (nothing was computed).
        """
        self.done += n
        if self.work is not None and group is not None:
            self.work[group] = max(0.0, self.work.get(group, 0.0) - cost)
            if seconds is not None and cost > 0:
                for k in range(len(group) + 1):
                    measured = self._measured.setdefault(group[:k], [0.0, 0.0])
                    measured[0] += seconds
                    measured[1] += cost
        now = self.clock()
        if self.stream is None or (now - self._last < self.interval and
                                   self.done < self.total):
            return
        self._last = now
        self._shown = self.done
        if self.tty:
            self.stream.write("\r" + self.text())
        else:
            self.stream.write(self.text() + "\n")
        self.stream.flush()

    def close(self) -> None:
        """Write the final line."""
        if self.stream is None or (self._shown == self.done and not self.tty):
            return
        self.stream.write(("\r" if self.tty else "") + self.text() + "\n")
        self.stream.flush()
