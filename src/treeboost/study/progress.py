"""A progress line on stderr: done/total, rate and estimated time left (no dependency)."""

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
        Units of work of the whole study.
    done : int, default=0
        Units already stored by earlier runs (counted, but not in the rate).
    label : str, default="study"
        Text before the bar.
    stream : file, default=sys.stderr
        Where to write; None disables output.
    interval : float, default=10.0
        Seconds between lines when ``stream`` is not a terminal.
    """

    def __init__(self, total: int, done: int = 0, label: str = "study",
                 stream=sys.stderr, interval: float = 10.0, interval_tty: float = 0.2):
        self.total, self.done, self.start_done = total, done, done
        self.label, self.stream = label, stream
        self.tty = bool(stream is not None and getattr(stream, "isatty", lambda: False)())
        self.interval = interval_tty if self.tty else interval
        self.started = time.perf_counter()
        self._last = -float("inf")
        self._shown = None  # the count of the last line written

    def text(self) -> str:
        """The progress line."""
        width = 28
        fraction = self.done / self.total if self.total else 1.0
        bar = "#" * int(width * fraction) + "-" * (width - int(width * fraction))
        elapsed = time.perf_counter() - self.started
        new = self.done - self.start_done
        if new > 0 and self.done < self.total:
            eta = _clock(elapsed / new * (self.total - self.done))
        else:
            eta = "--:--" if self.done < self.total else "00:00"
        return (f"{self.label} [{bar}] {self.done}/{self.total} ({100 * fraction:.0f}%) "
                f"elapsed {_clock(elapsed)} eta {eta}")

    def update(self, n: int = 1) -> None:
        """Count ``n`` more finished units and redraw if it is time."""
        self.done += n
        now = time.perf_counter()
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
