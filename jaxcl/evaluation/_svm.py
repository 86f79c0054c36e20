"""InfoGraph's graph-level protocol: a linear SVM, C by inner grid search, 10-fold CV."""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import threadpoolctl
from jax.typing import ArrayLike

from jaxcl import _checks
from jaxcl.evaluation import _inputs, _newton_svm
from jaxcl.evaluation._kfold import fold_masks

_C_GRID = (1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1000.0)
_SOLVERS = ("liblinear", "newton")


def svm_kfold_accuracy(
    x: ArrayLike,
    y: ArrayLike,
    *,
    num_folds: int = 10,
    c_grid: Sequence[float] = _C_GRID,
    inner_folds: int = 5,
    seed: int = 0,
    n_jobs: int | None = None,
    solver: str = "liblinear",
) -> dict:
    """Stratified k-fold accuracy of a linear SVM whose C is chosen on the training folds.

    The graph-classification protocol of InfoGraph that m-Mix follows: for each shuffled
    stratified outer fold, ``GridSearchCV`` over ``C`` in ``c_grid`` with ``inner_folds``-fold
    (stratified, unshuffled) cross-validated accuracy on the training folds, refit on all of
    them, accuracy on the held-out fold. The classifier is scikit-learn's ``LinearSVC`` as
    InfoGraph's ``linearsvc_classify`` and PyGCL's ``SVMEvaluator(linear=True)`` ran it, with
    the defaults of the scikit-learn of their time (squared hinge, one-vs-rest,
    ``max_iter=1000``, ``dual=True``): ``dual=True`` is set explicitly, since scikit-learn 1.5
    changed the default to ``'auto'``, which runs liblinear's primal solver instead wherever
    a training set has at least as many rows as features (jaxcl ran that default until
    2026-11-28, see CHANGELOG). ``random_state`` is set from ``seed`` so the solver is
    deterministic. Features are not scaled. Runs on the host (scikit-learn); scikit-learn may
    warn that liblinear did not converge for large C on unscaled features, as it does in those
    codebases.

    ``solver='newton'`` fits the same classifiers (same objective, one-vs-rest, bias column,
    inner folds and choice among tied ``C``) by jaxcl's exact finite Newton method on the Gram
    matrix of ``x``, computed once: where liblinear converges both give the same weights (to
    1e-7 in the tests, liblinear run to a tolerance of 1e-12); where it stops at ``max_iter``
    (large ``C`` on unscaled features) ``'newton'`` still reaches the minimum, so the chosen
    ``C`` and the accuracies can differ there. ``experiments/benchmarks/svm_benchmark.py``
    times both.

    Args:
      x: ``[n, dim]`` frozen features (e.g. graph embeddings), host or jax array.
      y: ``[n]`` integer labels (any non-negative class indices).
      num_folds: outer folds, between 2 and the size of the smallest class.
      c_grid: candidate values of ``C`` (all > 0); InfoGraph's grid by default.
      inner_folds: folds of the grid search inside each training set, between 2 and the
        smallest class count of any training set.
      seed: seed of the outer fold shuffle (``jaxcl.data.stratified_kfold``) and of liblinear.
      n_jobs: parallel jobs, as joblib counts them (``None``: one, ``-1``: every core):
        ``GridSearchCV``'s processes for ``'liblinear'``, threads over the outer folds for
        ``'newton'`` (which runs BLAS on one thread each).
      solver: ``'liblinear'`` (scikit-learn's ``LinearSVC``, the published protocol's code) or
        ``'newton'`` (the exact minimiser of the same objective, faster).

    Returns:
      ``{'mean', 'std', 'per_fold', 'best_c'}``: mean and (population) standard deviation of
      the held-out accuracies in [0, 1], the ``num_folds`` accuracies, and the ``C`` chosen in
      each fold.

    Example:
      >>> import numpy as np
      >>> from jaxcl.evaluation import svm_kfold_accuracy
      >>> x = np.random.default_rng(0).normal(size=(100, 4))
      >>> y = (x[:, 0] > 0).astype(np.int32)
      >>> svm_kfold_accuracy(x, y, num_folds=5, c_grid=(0.1, 1.0))["mean"] > 0.9
      True
      >>> svm_kfold_accuracy(x, y, num_folds=5, c_grid=(0.1, 1.0), solver="newton")["mean"] > 0.9
      True

    References:
      Sun et al., "InfoGraph", ICLR 2020 (code: ``unsupervised/evaluate_embedding.py``);
      "m-Mix: Generating Hard Negatives via Multiple Samples Mixing for Contrastive Learning",
      evaluation protocol (linear SVM, 10-fold CV); Fan et al., "LIBLINEAR", JMLR 2008.
    """
    fn = "svm_kfold_accuracy"
    x = _inputs.host_features(fn, "x", x)
    y = _inputs.labels(fn, "y", y, num_rows=x.shape[0], rows_name="x", num_classes=None)
    if y.min() < 0:
        _checks.fail(fn, f"`y` must hold non-negative class indices, found label {int(y.min())}")
    num_folds = _inputs.num_folds(fn, num_folds, y)
    if isinstance(c_grid, (str, bytes)) or not isinstance(c_grid, Iterable):
        _checks.fail(fn, f"`c_grid` must be a sequence of C values > 0, got {c_grid!r}")
    c_grid = tuple(c_grid)
    if not c_grid:
        _checks.fail(fn, "`c_grid` must hold at least one value of C, got an empty sequence")
    c_grid = tuple(_inputs.real(fn, "c_grid", c, allow_zero=False) for c in c_grid)
    inner_folds = _inputs.count(fn, "inner_folds", inner_folds)
    seed = _inputs.seed(fn, seed)
    if solver not in _SOLVERS:
        _checks.fail(fn, f"`solver` must be one of {_SOLVERS}, got {solver!r}")

    train_masks, test_masks = fold_masks(y, num_folds=num_folds, seed=seed)
    smallest = min(int(np.unique(y[m], return_counts=True)[1].min()) for m in train_masks)
    if not 2 <= inner_folds <= smallest:
        _checks.fail(
            fn,
            f"`inner_folds` must lie in [2, {smallest}] (the smallest class count in a "
            f"training set), got {inner_folds}",
        )

    workers = _workers(fn, n_jobs, len(train_masks))  # checks n_jobs for either solver
    if solver == "newton":
        per_fold, best_c = _newton(x, y, train_masks, test_masks, c_grid, inner_folds, workers)
    else:
        per_fold, best_c = _liblinear(
            x, y, train_masks, test_masks, c_grid, inner_folds, seed, n_jobs
        )
    accs = np.asarray(per_fold)
    return {
        "mean": float(accs.mean()),
        "std": float(accs.std()),
        "per_fold": per_fold,
        "best_c": best_c,
    }


def _workers(fn: str, n_jobs, folds: int) -> int:
    """Threads for ``n_jobs`` as joblib reads it (None: 1, -1: every core, -k: all but k - 1)."""
    if n_jobs is None:
        return 1
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, numbers.Integral) or n_jobs == 0:
        _checks.fail(fn, f"`n_jobs` must be a non-zero integer or None, got {n_jobs!r}")
    import joblib  # scikit-learn's own parallel backend: the same counting as its n_jobs

    return max(1, min(joblib.effective_n_jobs(int(n_jobs)), folds))


def _newton(x, y, train_masks, test_masks, c_grid, inner_folds, workers):
    """Per-fold accuracies and chosen ``C`` of the Newton solver's grid search.

    The outer folds run on ``workers`` threads, and BLAS on one thread each: the solver's many
    factorisations of a few hundred rows run 4-7 times slower when OpenBLAS spreads each over
    the cores (2 cores; ``svm_benchmark.py``). Each fold's result does not depend on either.
    """
    x1 = _newton_svm.design(x)
    g = x1 @ x1.T

    def fold(masks):
        train, test = masks
        return _newton_svm.grid_search_accuracy(
            x1, g, y, np.flatnonzero(train), np.flatnonzero(test), c_grid, inner_folds
        )

    with threadpoolctl.threadpool_limits(limits=1, user_api="blas"):
        with ThreadPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(fold, zip(train_masks, test_masks, strict=True)))
    return [r[0] for r in results], [r[1] for r in results]


def _liblinear(x, y, train_masks, test_masks, c_grid, inner_folds, seed, n_jobs):
    """Per-fold accuracies and chosen ``C`` of scikit-learn's grid search over ``LinearSVC``."""
    # Imported on first use so that `import jaxcl.evaluation` does not load scikit-learn's SVMs.
    from sklearn.model_selection import GridSearchCV
    from sklearn.svm import LinearSVC

    per_fold, best_c = [], []
    for train, test in zip(train_masks, test_masks, strict=True):
        search = GridSearchCV(
            LinearSVC(dual=True, random_state=seed),
            {"C": list(c_grid)},
            cv=inner_folds,
            scoring="accuracy",
            n_jobs=n_jobs,
        )
        search.fit(x[train], y[train])
        per_fold.append(float(search.score(x[test], y[test])))
        best_c.append(float(search.best_params_["C"]))
    return per_fold, best_c
