"""The linear SVM of ``LinearSVC``'s defaults, solved exactly by a finite Newton method.

``sklearn.svm.LinearSVC()`` (liblinear) minimises, for each one-vs-rest problem with labels
``y_i`` in {-1, +1},

    P(w) = 1/2 |w|^2 + C sum_i max(0, 1 - y_i w . x~_i)^2,    x~_i = [x_i, 1],

the squared hinge with an L2 penalty on the weights *and* the bias (``intercept_scaling=1``).
On unscaled embeddings its solver stops at ``max_iter=1000`` for the larger values of ``C``
long before the minimum, which makes the graph protocol's grid search take minutes. ``P`` is
strictly convex and piecewise quadratic, so Newton's method with an exact line search reaches
its minimum in finitely many steps (Keerthi & DeCoste, JMLR 2005). With ``I`` the rows whose
margin is violated, the Newton point is the minimiser of the quadratic that ``P`` is on ``I``,

    w = (Id / (2C) + X~_I^T X~_I)^-1 X~_I^T y_I = X~_I^T (Id / (2C) + G_II)^-1 y_I,

solved in whichever of the two forms is smaller (``G = X~ X~^T``, the Gram matrix, computed once
for all folds, values of ``C`` and classes): one Cholesky factorisation of size at most
``min(|I|, dim + 1)`` per step. Steps and their line search are measured in ``w``'s space (not
through ``G``, whose rounding can make a small step's length negative). In floating point an
ill-conditioned ``G`` can put the computed Newton point off the quadratic's minimum, so that
the line search stops short of it with ``I`` unchanged; the next step would be the same one, so
the solver stops there too (``fit``), at the minimum to rounding (tests: within 1e-9 of a
polished L-BFGS minimum on rank-1 features).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

_MAX_STEPS = 200
# Relative size of a Newton step (in w's norm) below which w counts as the minimiser.
_TOL = 1e-10


def design(x: np.ndarray) -> np.ndarray:
    """``X~ = [x, 1]`` in float64 (liblinear's bias column, ``intercept_scaling=1``)."""
    x = np.asarray(x, dtype=np.float64)
    return np.concatenate([x, np.ones((x.shape[0], 1))], axis=1)


def _line_search(margin, yg, b, c, C) -> float:
    """The exact minimiser over ``t >= 0`` of ``phi(t) = t b + t^2 c / 2 + C sum
    max(0, m_i - t yg_i)^2`` (``m`` the margins ``1 - y f``): ``phi`` is convex and piecewise
    quadratic, ``phi'`` continuous, piecewise linear and non-decreasing; 0 where ``phi'(0) >=
    0`` (no descent)."""

    def root(active):  # where phi' vanishes with this active set
        m, v = margin[active], yg[active]
        return (2.0 * C * np.dot(m, v) - b) / (c + 2.0 * C * np.dot(v, v))

    def slope(t):
        r = margin - t * yg
        act = r > 0
        return b + t * c - 2.0 * C * np.dot(r[act], yg[act])

    if slope(0.0) >= 0:
        return 0.0
    # Breakpoints where a row enters or leaves the loss, in (0, inf); the first with phi' >= 0
    # bounds the piece holding the root.
    with np.errstate(divide="ignore", invalid="ignore"):
        knots = margin / yg
    knots = np.sort(knots[np.isfinite(knots) & (knots > 0)])
    lo, hi = 0, knots.size
    while lo < hi:
        mid = (lo + hi) // 2
        if slope(knots[mid]) >= 0:
            hi = mid
        else:
            lo = mid + 1
    left = knots[lo - 1] if lo > 0 else 0.0
    right = knots[lo] if lo < knots.size else np.inf
    inside = 0.5 * (left + right) if np.isfinite(right) else left + 1.0
    return float(np.clip(root(margin - inside * yg > 0), left, right))


def _solve_pos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a^-1 b`` for a symmetric positive definite ``a`` (least squares if rounding made it
    indefinite)."""
    try:
        return scipy.linalg.cho_solve(scipy.linalg.cho_factor(a, check_finite=False), b)
    except np.linalg.LinAlgError:
        return np.linalg.lstsq(a, b, rcond=None)[0]


def newton_point(x1: np.ndarray, g: np.ndarray, y: np.ndarray, active: np.ndarray, C: float):
    """The minimiser of ``1/2 |w|^2 + C sum_{i in active} (1 - y_i x~_i . w)^2``."""
    idx = np.flatnonzero(active)
    if idx.size == 0:
        return np.zeros(x1.shape[1])
    rows = x1[idx]
    if idx.size <= x1.shape[1]:
        sub = g[np.ix_(idx, idx)]
        sub[np.diag_indices_from(sub)] += 0.5 / C
        return rows.T @ _solve_pos(sub, y[idx])
    a = rows.T @ rows
    a[np.diag_indices_from(a)] += 0.5 / C
    return _solve_pos(a, rows.T @ y[idx])


def fit(
    x1: np.ndarray, g: np.ndarray, y: np.ndarray, C: float, w: np.ndarray | None = None
) -> np.ndarray:
    """The weights (bias last) of ``LinearSVC(C)`` on one two-class problem: ``P``'s minimiser.

    Args:
      x1: ``[n, dim + 1]`` training rows with the bias column (``design``).
      g: ``[n, n]`` their Gram matrix ``x1 @ x1.T``.
      y: ``[n]`` labels in {-1, +1}.
      C: the penalty's weight, > 0.
      w: a starting point (e.g. the solution for a nearby ``C``); zeros by default.
    """
    w = np.zeros(x1.shape[1]) if w is None else w.copy()
    f = x1 @ w
    for _ in range(_MAX_STEPS):
        margin = 1.0 - y * f
        active = margin > 0
        step = newton_point(x1, g, y, active, C) - w
        f_step = x1 @ step
        b, c = float(w @ step), float(step @ step)
        if c <= _TOL**2 * max(1.0, float(w @ w)):
            break  # the Newton point is w itself (to rounding): the minimum
        t = _line_search(margin, y * f_step, b, c, C)
        if t == 0.0:
            break  # no descent left along the Newton direction: the minimum, to rounding
        w += t * step
        f += t * f_step
        if np.array_equal(1.0 - y * f > 0, active):
            # The active set is unchanged, so the next Newton point would be this one again and
            # the next line search would start on the same line at its minimum: no step can
            # improve w. With t = 1, w is the exact minimum; t < 1 happens only where rounding
            # moved the computed Newton point off the quadratic's minimum (an ill-conditioned
            # Gram matrix), and repeating the step would leave w as it is until _MAX_STEPS.
            break
    else:
        raise RuntimeError(f"newton linear SVM: no convergence in {_MAX_STEPS} steps (C={C})")
    return w


def fit_predict(
    x1: np.ndarray, g: np.ndarray, labels: np.ndarray, train: np.ndarray, test: np.ndarray, cs
) -> np.ndarray:
    """``LinearSVC(C)`` for each ``C`` in ``cs`` trained on rows ``train`` of ``x1`` (whose
    Gram matrix is ``g``): ``[len(cs), len(test)]`` predictions for rows ``test``.

    One-vs-rest as liblinear: for two classes one problem (the larger label positive; a zero
    decision value predicts the smaller), else one per class and the largest decision value.
    Each ``C`` starts from the solution for the one before it (the minimiser is unique, so the
    start changes only how many steps it takes).
    """
    x_train, x_test, g_train = x1[train], x1[test], g[np.ix_(train, train)]
    y_train = labels[train]
    classes = np.unique(y_train)
    positives = classes[1:] if classes.size == 2 else classes
    scores = np.empty((len(cs), test.size, positives.size))
    for k, label in enumerate(positives):
        y_pm = np.where(y_train == label, 1.0, -1.0)
        w = None
        for i, C in enumerate(cs):
            w = fit(x_train, g_train, y_pm, C, w)
            scores[i, :, k] = x_test @ w
    if classes.size == 2:
        return np.where(scores[..., 0] > 0, classes[1], classes[0])
    return classes[np.argmax(scores, axis=-1)]


def grid_search_accuracy(
    x1: np.ndarray,
    g: np.ndarray,
    labels: np.ndarray,
    train: np.ndarray,
    test: np.ndarray,
    c_grid: tuple[float, ...],
    inner_folds: int,
) -> tuple[float, float]:
    """``GridSearchCV(LinearSVC(), {'C': c_grid}, cv=inner_folds)`` on rows ``train``, refit
    with the best ``C`` and scored on rows ``test``: ``(accuracy, best C)``.

    The same inner folds as scikit-learn's (``StratifiedKFold``, unshuffled, over the training
    rows in order) and the same choice among ties (the first ``C`` of the grid).
    """
    from sklearn.model_selection import StratifiedKFold

    y_train = labels[train]
    inner = list(StratifiedKFold(n_splits=inner_folds).split(np.zeros(train.size), y_train))
    # [inner folds, C]: each fold's accuracy for every C, as GridSearchCV's split scores.
    scores = np.array(
        [
            np.mean(fit_predict(x1, g, labels, train[a], train[b], c_grid) == y_train[b], axis=1)
            for a, b in inner
        ]
    )
    best = c_grid[int(np.argmax(scores.mean(axis=0)))]
    refit = fit_predict(x1, g, labels, train, test, [best])[0]
    return float(np.mean(refit == labels[test])), best
