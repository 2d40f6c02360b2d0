"""The ``treeboost`` logger and where the training log goes.

Every informational line the library writes while fitting (the ``verbose`` log of
``EvaluationLogger``) goes through ``log_info``. It is an INFO record of the
``treeboost`` logger when the user's logging configuration takes it, and a plain line on
the current ``sys.stdout`` when it does not, so ``verbose=1`` prints as it always did in
a script or a notebook that never set up ``logging``.

"Takes it" means (``logging_configured``):

- the ``treeboost`` logger itself was set up: a handler, a level, a filter,
  ``propagate = False`` or ``disabled``. Its configuration is then obeyed, silence
  included (``logging.getLogger("treeboost").setLevel(logging.WARNING)`` hides the lines);
- or ``logging.disable`` covers INFO;
- or the root logger has a handler and lets INFO through
  (``logging.basicConfig(level=logging.INFO)``).

A root handler behind the default WARNING level does not count: pytest, and many
frameworks, install one on every run, and the INFO lines the user asked for with
``verbose`` would vanish instead of printing. Nothing is attached at import time or
later, no handler that would double the lines once the user configures logging, and
no stream captured early: each line is decided and written when it is made, so
``contextlib.redirect_stdout`` keeps working.
"""

from __future__ import annotations

import logging
import sys

#: the library's logger: ``logging.getLogger("treeboost")``
LOGGER = logging.getLogger("treeboost")


def logging_configured(logger: logging.Logger = LOGGER) -> bool:
    """True when ``logger``'s INFO records should go to ``logging`` rather than stdout.

    Parameters
    ----------
    logger : logging.Logger, default=logging.getLogger("treeboost")
        A logger whose parent is the root logger.

    Returns
    -------
    bool
    """
    if (logger.handlers or logger.level != logging.NOTSET or logger.filters
            or logger.disabled or not logger.propagate):
        return True  # set up by the user: obey it, even when that silences the lines
    if logger.manager.disable >= logging.INFO:
        return True
    root = logging.getLogger()
    return bool(root.handlers) and root.isEnabledFor(logging.INFO)


def log_info(message: str, stream=None, logger: logging.Logger = LOGGER) -> None:
    """Write one informational line: to ``stream``, to ``logger`` at INFO, or to stdout.

    Parameters
    ----------
    message : str
        The line, without its newline.
    stream : file-like, default=None
        An explicit destination, which always wins; None decides by
        ``logging_configured``.
    logger : logging.Logger, default=logging.getLogger("treeboost")
        The logger of the record.
    """
    if stream is None:
        if logging_configured(logger):
            logger.info(message)
            return
        stream = sys.stdout  # looked up now: redirect_stdout and capsys see the line
    stream.write(message + "\n")
    stream.flush()
