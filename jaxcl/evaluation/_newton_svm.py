"""The linear SVM of ``LinearSVC``'s defaults, solved exactly by a finite Newton method.

``sklearn.svm.LinearSVC()`` (liblinear) minimises, for each one-vs-rest problem with labels
``y_i`` in {-1, +1},

    P(w) = 1/2 |w|^2 + C sum_i max(0, 1 - y_i w . x~_i)^2,    x~_i = [x_i, 1],

the squared hinge with an L2 penalty on the weights *and* the bias (``intercept_scaling=1``).
On unscaled embeddings its solver stops at ``max_iter=1000`` for the larger values of ``C``
long before the minimum, which makes the graph protocol's grid search take minutes. ``P`` is
strictly convex and piecewise quadratic, so Newton's method with an exact line search reaches
its minimum in finitely many steps (Keerthi & DeCoste, JMLR 2005). Here every step is taken in
the span of the training rows (the minimiser lies there): with ``I`` the rows whose margin is
violated, the Newton point is ``w = X~_I^T a`` with ``(G_II + I / (2C)) a = y_I``, where
``G = X~ X~^T`` is computed once for all folds, values of ``C`` and classes. One Cholesky
factorisation of at most ``n x n`` per step, whatever the feature dimension.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

_MAX_STEPS = 200
# Relative size of a Newton step (in w's norm) below which beta counts as the minimiser.
_TOL = 1e-10


def gram(x: np.ndarray) -> np.ndarray:
    """``X~ X~^T`` in float64 for ``X~ = [x, 1]`` (liblinear's bias column)."""
    x = np.asarray(x, dtype=np.float64)
    return x @ x.T + 1.0


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


def fit(g: np.ndarray, y: np.ndarray, C: float, beta: np.ndarray | None = None) -> np.ndarray:
    """Coefficients ``beta`` (``w = X~^T beta``) minimising ``P`` on the rows of ``g``.

    Args:
      g: ``[n, n]`` float64 Gram matrix of the training rows (``gram``).
      y: ``[n]`` labels in {-1, +1}.
      C: the penalty's weight, > 0.
      beta: a starting point (e.g. the solution for a nearby ``C``); zeros by default.
    """
    n = y.shape[0]
    beta = np.zeros(n) if beta is None else beta.copy()
    f = g @ beta
    for _ in range(_MAX_STEPS):
        margin = 1.0 - y * f
        active = margin > 0
        newton = np.zeros(n)
        idx = np.flatnonzero(active)
        if idx.size:
            sub = g[np.ix_(idx, idx)]
            sub[np.diag_indices_from(sub)] += 0.5 / C
            factor = scipy.linalg.cho_factor(sub, check_finite=False)
            newton[idx] = scipy.linalg.cho_solve(factor, y[idx], check_finite=False)
        delta = newton - beta
        g_delta = g @ delta
        b, c = float(f @ delta), float(delta @ g_delta)
        if c <= _TOL**2 * max(1.0, float(f @ beta)):
            break  # the Newton point is beta itself (to rounding): the minimum
        t = _line_search(margin, y * g_delta, b, c, C)
        if t == 0.0:
            break  # no descent left along the Newton direction: the minimum, to rounding
        beta += t * delta
        f += t * g_delta
        new_active = 1.0 - y * f > 0
        if t == 1.0 and np.array_equal(new_active, active):
            break  # the Newton point of an unchanged active set: the exact minimum
    else:
        raise RuntimeError(f"newton linear SVM: no convergence in {_MAX_STEPS} steps (C={C})")
    return beta


def fit_predict(
    g: np.ndarray, labels: np.ndarray, train: np.ndarray, test: np.ndarray, cs
) -> np.ndarray:
    """``LinearSVC(C)`` for each ``C`` in ``cs`` trained on rows ``train`` of the Gram ``g``:
    ``[len(cs), len(test)]`` predictions for rows ``test``.

    One-vs-rest as liblinear: for two classes one problem (the larger label positive; a zero
    decision value predicts the smaller), else one per class and the largest decision value.
    Each ``C`` starts from the solution for the one before it (the minimiser is unique, so the
    start changes only how many steps it takes).
    """
    g_train, g_test = g[np.ix_(train, train)], g[np.ix_(test, train)]
    y_train = labels[train]
    classes = np.unique(y_train)
    positives = classes[1:] if classes.size == 2 else classes
    scores = np.empty((len(cs), test.size, positives.size))
    for k, label in enumerate(positives):
        y_pm = np.where(y_train == label, 1.0, -1.0)
        beta = None
        for i, C in enumerate(cs):
            beta = fit(g_train, y_pm, C, beta)
            scores[i, :, k] = g_test @ beta
    if classes.size == 2:
        return np.where(scores[..., 0] > 0, classes[1], classes[0])
    return classes[np.argmax(scores, axis=-1)]


def grid_search_accuracy(
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
            np.mean(fit_predict(g, labels, train[a], train[b], c_grid) == y_train[b], axis=1)
            for a, b in inner
        ]
    )
    best = c_grid[int(np.argmax(scores.mean(axis=0)))]
    refit = fit_predict(g, labels, train, test, [best])[0]
    return float(np.mean(refit == labels[test])), best
