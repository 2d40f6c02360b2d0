"""User losses written as a formula in ``y`` and ``f`` (SPEC §2).

``Formula("log(1 + exp(-y*f))")`` is parsed by SymPy; its first and second
derivatives in ``f`` are derived symbolically, printed as Python source and
compiled by Numba into two loops over the rows: the loss value, and the
gradient and hessian. The bound loss (``FormulaLoss``) then plugs into the
engine like a built-in one: F0 is found numerically (bounded Brent, then
Newton polishing), leaves take the Newton step -G / (H + lambda).

Compiled loops are cached per formula text in the process, so refitting or
cloning an estimator does not compile again.
"""

from __future__ import annotations

import math

import numpy as np

from .base import Loss, argmin_constant, check_hessian, newton_leaf_value

#: what a formula may name besides y and f: SymPy's functions and constants
_SYMBOLS = ("y", "f")
#: (expression text) -> (value loop, derivative loop, derivative sources), compiled once
_COMPILED: dict[str, tuple] = {}


def _sympy():
    import sympy  # imported on use: slow to import, only needed for formulas

    return sympy


def _non_smooth_types(sp):
    """SymPy node types whose presence (in terms of f) breaks twice-differentiability."""
    return (sp.Abs, sp.sign, sp.Heaviside, sp.DiracDelta, sp.Piecewise, sp.Max, sp.Min,
            sp.floor, sp.ceiling, sp.frac, sp.Mod, sp.Derivative, sp.Subs)


class Formula:
    """A loss given as a formula in the target ``y`` and the raw score ``f``.

    Its gradient and hessian in ``f`` are derived symbolically with SymPy
    and compiled to Numba loops; any loss twice differentiable in ``f``
    works without hand-written derivatives. Pass it as ``loss=`` to
    ``TreeBoostRegressor``, ``TreeBoostClassifier`` (binary only) or
    ``GradientBoostingWithLearner``.

    Parameters
    ----------
    expression : str
        The loss of one row, in the symbols ``y`` and ``f`` and SymPy's
        functions (``exp``, ``log``, ``cosh``, ``sqrt``, ...), for example
        ``"log(1 + exp(-y*f))"`` or ``"log(cosh(f - y))"``.
    link : {"identity", "log", "logit"}, default=None
        How predictions are made from ``f``: ``predict`` returns ``f``
        (identity), ``exp(f)`` (log) or, for the classifier, the positive
        class probability ``sigmoid(f)`` (logit). None: identity for
        regressors, logit for the classifier.
    labels : tuple of two floats, default=(0, 1)
        Classifier only: the values ``y`` takes in the formula for the first
        and the second class of ``classes_``; ``(-1, 1)`` suits margin
        losses such as ``"log(1 + exp(-y*f))"``.

    Raises
    ------
    ValueError
        If the formula does not parse, names symbols other than ``y`` and
        ``f`` or unknown functions, does not depend on ``f``, is not twice
        differentiable in ``f`` (``abs``, ``Max``, ``sign``, piecewise
        definitions), or has a hessian identically zero. Training raises
        ``treeboost.exceptions.LossError`` at the first stage where the
        hessian is negative at some row (leaves take Newton steps, which need
        a loss convex in ``f``); zero hessians at some rows are accepted.

    Examples
    --------
    >>> from treeboost import Formula
    >>> Formula("log(cosh(f - y))").hessian_expression
    'cosh(f - y)**(-2)'
    """

    def __init__(self, expression: str, *, link: str | None = None, labels=(0, 1)):
        if not isinstance(expression, str):
            raise TypeError(f"Formula expression must be a str; got {type(expression).__name__}")
        if link not in (None, "identity", "log", "logit"):
            raise ValueError(f"Formula link={link!r} must be None, 'identity', 'log' or 'logit'")
        labels = tuple(float(v) for v in labels)
        if len(labels) != 2 or labels[0] == labels[1] or not all(map(math.isfinite, labels)):
            raise ValueError(f"Formula labels={labels!r} must be two distinct finite numbers")
        self.expression = expression
        self.link = link
        self.labels = labels
        self._expr, self._grad, self._hess = _derive(expression)

    @property
    def gradient_expression(self) -> str:
        """dL/df as text."""
        return str(self._grad)

    @property
    def hessian_expression(self) -> str:
        """d2L/df2 as text."""
        return str(self._hess)

    def __repr__(self) -> str:
        extra = "" if self.link is None else f", link={self.link!r}"
        extra += "" if self.labels == (0.0, 1.0) else f", labels={self.labels!r}"
        return f"Formula({self.expression!r}{extra})"

    def __eq__(self, other) -> bool:
        return (isinstance(other, Formula) and other.expression == self.expression
                and other.link == self.link and other.labels == self.labels)

    def __hash__(self) -> int:
        return hash((self.expression, self.link, self.labels))

    def bind(self, *, is_classification: bool) -> FormulaLoss:
        """The ``Loss`` the engine trains with, for a regressor or a binary classifier."""
        link = self.link or ("logit" if is_classification else "identity")
        if is_classification and link != "logit":
            raise ValueError(f"{self!r}: a classifier needs link='logit' (got {link!r})")
        if not is_classification and link == "logit":
            raise ValueError(f"{self!r}: link='logit' is for the classifier")
        return FormulaLoss(self, link=link, is_classification=is_classification)


def _derive(expression: str):
    """Parse the formula and derive d/df and d2/df2; raise ValueError on a bad formula."""
    sp = _sympy()
    from sympy.core.function import AppliedUndef
    from sympy.parsing.sympy_parser import parse_expr

    y, f = sp.symbols(_SYMBOLS, real=True)
    where = f"loss formula {expression!r}"
    try:
        expr = parse_expr(expression, local_dict={"y": y, "f": f}, evaluate=True)
    except Exception as exc:  # SymPy raises SyntaxError, TokenError, TypeError, ...
        raise ValueError(f"{where} does not parse: {exc}") from None
    if not isinstance(expr, sp.Expr):
        raise ValueError(f"{where} is not an expression (got {type(expr).__name__})")
    others = sorted(str(s) for s in expr.free_symbols - {y, f})
    if others:
        raise ValueError(f"{where} may use only the symbols y and f; found {others}")
    unknown = sorted(str(a.func) for a in expr.atoms(AppliedUndef))
    if unknown:
        raise ValueError(f"{where} uses unknown functions {unknown}")
    if not expr.has(f):
        raise ValueError(f"{where} does not depend on f")
    grad = sp.diff(expr, f)
    hess = sp.diff(grad, f)
    for part in (expr, grad, hess):
        bad = sorted({type(a).__name__ for a in part.atoms(*_non_smooth_types(sp)) if a.has(f)})
        if bad:
            raise ValueError(f"{where} is not twice differentiable in f (its derivatives "
                             f"involve {bad}); use a smooth loss such as log(cosh(f - y)) "
                             "instead of abs(f - y)")
    grad, hess = _tidy(sp, grad), _tidy(sp, hess)
    if hess == 0:
        raise ValueError(f"{where} has a hessian identically zero in f: Newton steps "
                         "-G/H are undefined (a loss linear in f has no minimum)")
    return expr, grad, hess


def _tidy(sp, expr):
    """A simpler form when SymPy finds one quickly (fewer rounding cancellations)."""
    if sp.count_ops(expr) > 60:  # simplify is slow on big expressions; cse still helps
        return expr
    simple = sp.simplify(expr)
    return simple if sp.count_ops(simple) <= sp.count_ops(expr) else expr


def _source(sp, expr, grad, hess) -> str:
    """Python source of the two row loops, in terms of ``math`` functions."""
    from sympy.printing.pycode import pycode

    def code(e):
        return pycode(e, fully_qualified_modules=True, strict=True)

    replacements, (g, h) = sp.cse([grad, hess], symbols=sp.numbered_symbols("_t"))
    lines = ["def value(y_arr, raw, out):",
             "    for i in range(y_arr.shape[0]):",
             "        y = y_arr[i]",
             "        f = raw[i]",
             f"        out[i] = {code(expr)}",
             "",
             "def derivatives(y_arr, raw, gradient, hessian):",
             "    for i in range(y_arr.shape[0]):",
             "        y = y_arr[i]",
             "        f = raw[i]"]
    lines += [f"        {name} = {code(e)}" for name, e in replacements]
    lines += [f"        gradient[i] = {code(g)}", f"        hessian[i] = {code(h)}", ""]
    return "\n".join(lines)


def _compiled(formula: Formula):
    """(value, derivatives) Numba loops of a formula, compiled once per process."""
    key = formula.expression
    if key not in _COMPILED:
        from numba import njit

        sp = _sympy()
        try:
            source = _source(sp, formula._expr, formula._grad, formula._hess)
        except Exception as exc:  # a function with no Python/math equivalent
            raise ValueError(f"loss formula {key!r} cannot be compiled: {exc}") from None
        namespace = {"math": math}
        exec(compile(source, f"<treeboost formula {key!r}>", "exec"), namespace)  # noqa: S102
        # not cached on disk (the source exists only in memory); no fastmath, so the
        # loops round like the built-in kernels
        jit = njit(nogil=True, error_model="numpy")
        _COMPILED[key] = (jit(namespace["value"]), jit(namespace["derivatives"]), source)
    return _COMPILED[key][:2]


class FormulaLoss(Loss):
    """A ``Formula`` bound to an estimator: the ``Loss`` the engine trains with.

    Parameters
    ----------
    formula : Formula
        The formula.
    link : str
        ``"identity"``, ``"log"`` or ``"logit"``.
    is_classification : bool
        Whether targets are class indices in {0, 1}, mapped to
        ``formula.labels`` before the formula sees them.
    """

    name = "formula"
    leaf_line_search = "backtracking"

    def __init__(self, formula: Formula, *, link: str, is_classification: bool):
        self.formula = formula
        self.link = link
        self.is_classification = is_classification
        self._value_loop, self._derivatives_loop = _compiled(formula)

    def _value(self, y_user, f, out, strict=True):
        if strict:
            self._run(self._value_loop, y_user, f, out)
            return
        try:  # outside the domain counts as +inf, as the compiled loop's overflow does
            self._value_loop(y_user, f, out)
        except (ArithmeticError, ValueError):  # interpreted loops only: redo row by row
            for i in range(out.size):
                try:
                    self._value_loop(y_user[i:i + 1], f[i:i + 1], out[i:i + 1])
                except (ArithmeticError, ValueError):
                    out[i] = np.inf

    def _derivatives(self, y_user, f, g, h):
        self._run(self._derivatives_loop, y_user, f, g, h)

    def _run(self, loop, *args):
        # compiled loops give NaN/inf outside the formula's domain; interpreted ones
        # (NUMBA_DISABLE_JIT=1) raise math errors: both end as the same ValueError
        try:
            loop(*args)
        except (ArithmeticError, ValueError) as exc:
            raise ValueError(f"{self.formula!r} is not finite at some rows ({exc})") from None

    def _user_y(self, y):
        """Targets as the formula sees them (class indices mapped to ``labels``)."""
        y = np.ascontiguousarray(y, dtype=np.float64)
        if not self.is_classification:
            return y
        a, b = self.formula.labels
        return a + (b - a) * y

    def validate_target(self, y):
        """Labels in {0, 1} for the classifier; any finite target otherwise."""
        if self.is_classification and np.any((y != 0) & (y != 1)):
            raise ValueError(f"{self.formula!r} supports binary classification only")

    def pointwise(self, y, raw):
        """The formula's value for each row."""
        out = np.empty(y.shape[0], dtype=np.float64)
        self._value(self._user_y(y), np.ascontiguousarray(raw[0], dtype=np.float64), out)
        return out

    def _derivs(self, y_user, f):
        g = np.empty(y_user.shape[0], dtype=np.float64)
        h = np.empty(y_user.shape[0], dtype=np.float64)
        self._derivatives(y_user, np.ascontiguousarray(f, dtype=np.float64), g, h)
        return g, h

    def gradient_hessian(self, y, raw, sample_weight, gradient, hessian):
        """g = w dL/df, h = w d2L/df2, computed in float64 and stored as float32."""
        g, h = self._derivs(self._user_y(y), raw[0])
        if not (np.all(np.isfinite(g)) and np.all(np.isfinite(h))):
            raise ValueError(f"{self.formula!r} gave NaN or infinite derivatives at some rows "
                             "(targets outside its domain, or overflow)")
        check_hessian(repr(self.formula), y, raw[0], h)
        # the product is rounded to float32 once, as in the built-in kernels
        gradient[0][:] = sample_weight * g
        hessian[0][:] = sample_weight * h

    def init_score(self, y, sample_weight):
        """F0 = argmin_c sum w L(y, c): bounded Brent, then Newton steps to full precision."""
        y_user = self._user_y(y)
        w = np.asarray(sample_weight, dtype=np.float64)
        # a concave formula has no minimum to search for: refuse it for its negative
        # hessians (as stage 1 would) before the search runs off to infinity
        start = np.full(y_user.shape[0], float(np.median(y_user)) if y_user.size else 0.0)
        check_hessian(repr(self.formula), y_user, start, self._derivs(y_user, start)[1])

        def objective(c):
            out = np.empty(y_user.shape[0], dtype=np.float64)
            self._value(y_user, np.full(y_user.shape[0], c), out, strict=False)
            return float(np.average(out, weights=w))

        lo, hi = float(y_user.min()) - 1.0, float(y_user.max()) + 1.0
        for _ in range(12):  # widen the bracket while the minimum sits on its edge
            c = argmin_constant(objective, lo, hi)
            width = hi - lo
            if lo + 1e-6 * width < c < hi - 1e-6 * width:
                break
            lo, hi = lo - width, hi + width
        c = self._polish(objective, y_user, w, c)
        if not math.isfinite(objective(c)):
            # e.g. log(cosh(f - y)) overflows once |f - y| passes 710: targets of 1e30
            raise ValueError(f"{self.formula!r} is not finite at F0={c:g} for these targets "
                             f"(y in [{float(y_user.min()):.3g}, {float(y_user.max()):.3g}]): "
                             "rescale y, or write the formula so that it stays finite there")
        return np.array([c])

    def _polish(self, objective, y_user, w, c):
        """Newton steps from Brent's answer (tolerance 1e-10) to full float64 precision."""
        best = objective(c)
        for _ in range(20):
            g, h = self._derivs(y_user, np.full(y_user.shape[0], c))
            G, H = float(w @ g), float(w @ h)
            if not (H > 0 and math.isfinite(G)):
                break
            step = G / H
            trial = c - step
            value = objective(trial)
            if not value <= best + 1e-12 * abs(best):  # never move uphill
                break
            c, best = trial, value
            if abs(step) <= 1e-15 * (1.0 + abs(c)):
                break
        return c

    def leaf_values(self, y, raw, sample_weight, sample_indices, leaf_starts, leaf_stops,
                    sum_g, sum_h, context, reg_lambda, reg_alpha):
        """Newton's step -G / (H + lambda), halved while it raises the leaf's loss.

        A loss whose hessian vanishes far from the target (log-cosh: sech^2)
        gives Newton steps far past the leaf's minimum; backtracking until the
        leaf's loss does not rise keeps every stage a descent step (for a
        convex loss also after shrinkage by the learning rate). Steps that
        already lower the loss, such as every step of a quadratic loss, are
        kept as they are, so the model equals the built-in Newton one.
        """
        step = np.array(newton_leaf_value(sum_g, sum_h, reg_lambda, reg_alpha), dtype=np.float64)
        lengths = np.asarray(leaf_stops, dtype=np.int64) - np.asarray(leaf_starts, dtype=np.int64)
        rows = np.concatenate([sample_indices[a:b] for a, b in zip(leaf_starts, leaf_stops,
                                                                  strict=True)])
        leaf = np.repeat(np.arange(step.size), lengths)
        y_user, f = self._user_y(y[rows]), np.ascontiguousarray(raw[0][rows], dtype=np.float64)
        w = sample_weight[rows]

        def leaf_loss(shift):
            out = np.empty(rows.size, dtype=np.float64)
            self._value(y_user, f + shift[leaf], out, strict=False)
            return np.bincount(leaf, weights=w * out, minlength=step.size)

        before = leaf_loss(np.zeros_like(step))
        for _ in range(60):
            after = leaf_loss(step)
            worse = ~(after <= before + 1e-12 * np.abs(before))  # NaN counts as worse
            if not worse.any():
                break
            step[worse] *= 0.5
        return step

    def inverse_link(self, raw):
        """f, exp(f) or sigmoid(f) by the link."""
        if self.link == "logit":
            from scipy.special import expit  # on use: SciPy's import is slow

            return expit(raw[0])
        return super().inverse_link(raw)

    def get_params(self):
        """The formula text, link and labels."""
        return {"expression": self.formula.expression, "link": self.link,
                "labels": list(self.formula.labels)}
