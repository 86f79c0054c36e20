"""jaxcl's finite Newton linear SVM against scikit-learn's LinearSVC run to convergence."""

import importlib.util
import json
import pathlib
import warnings

import numpy as np
import pytest
import scipy.optimize
import threadpoolctl
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score
from sklearn.svm import LinearSVC

from jaxcl import evaluation, training
from jaxcl.configs import mmix_graph
from jaxcl.evaluation import _newton_svm

REPO = pathlib.Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"


def _converged_svc(C):
    """LinearSVC whose liblinear solver is run until its gradient is negligible."""
    return LinearSVC(C=C, dual=False, tol=1e-12, max_iter=10**6, random_state=0)


def _objective(x, y_pm, w, C):
    """LinearSVC's primal: 1/2 |w|^2 + C sum max(0, 1 - y [x, 1] . w)^2 (bias penalised)."""
    x1 = np.c_[x, np.ones(len(x))]
    return 0.5 * w @ w + C * np.sum(np.maximum(0.0, 1.0 - y_pm * (x1 @ w)) ** 2)


def _fit(x, y, C, w=None):
    x1 = _newton_svm.design(x)
    return _newton_svm.fit(x1, x1 @ x1.T, y, C, w)


def _relu_features(n, d, rank, scale, seed=0):
    """Correlated, unscaled, low-rank non-negative features (like ReLU embeddings), on which
    liblinear's default ``max_iter`` stops short of the minimum for large C."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, rank))
    x = scale * np.maximum(z @ rng.normal(size=(rank, d)), 0.0)
    return x, np.where(z[:, 0] + 0.7 * rng.normal(size=n) > 0, 1.0, -1.0)


def _problem(n, d, seed, noise=0.5):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    y = np.where(x[:, 0] + noise * rng.normal(size=n) > 0, 1.0, -1.0)
    return x, y


@pytest.mark.parametrize(
    "n,d,C",
    [(200, 10, 1.0), (300, 50, 0.1), (60, 300, 1.0), (150, 5, 1e-3), (80, 80, 100.0)],
)
def test_fit_equals_converged_liblinear(n, d, C):
    # more rows than columns (the Newton system in w's space) and fewer (in the Gram's)
    x, y = _problem(n, d, seed=n + d)
    ref = _converged_svc(C).fit(x, y)
    np.testing.assert_allclose(_fit(x, y, C), np.r_[ref.coef_[0], ref.intercept_], atol=1e-7)


@pytest.mark.parametrize("n,d", [(300, 100), (100, 300)])
def test_fit_reaches_the_minimum_where_liblinear_stops_early(n, d):
    x, y = _relu_features(n, d, rank=5, scale=3.0)
    C = 1000.0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        early = LinearSVC(C=C, random_state=0).fit(x, y)
    assert any(issubclass(w.category, ConvergenceWarning) for w in caught)
    w = _fit(x, y, C)
    assert _objective(x, y, w, C) < _objective(x, y, np.r_[early.coef_[0], early.intercept_], C)
    # ... and it is the minimum: the objective's gradient vanishes there (to rounding).
    x1 = _newton_svm.design(x)
    grad = w - 2 * C * x1.T @ (y * np.maximum(0.0, 1.0 - y * (x1 @ w)))
    assert np.linalg.norm(grad) < 1e-4 * np.linalg.norm(w)


def test_warm_start_gives_the_same_minimiser():
    x, y = _problem(120, 15, seed=4)
    np.testing.assert_allclose(_fit(x, y, 10.0, _fit(x, y, 0.01)), _fit(x, y, 10.0), atol=1e-9)


@pytest.mark.parametrize("seed", [1, 9, 14])
def test_fit_ends_at_the_minimum_on_an_ill_conditioned_gram_matrix(seed):
    # Rank-1 ReLU features at scale 300 (64 rows, 120 columns): the computed Newton point is off
    # the quadratic's minimum by rounding, the exact line search stops short of it with the
    # active set unchanged, and repeating the same step used to leave w as it was until the
    # step limit raised (these three seeds did, on the grid's warm-started chain of C).
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(64, 1))
    x = 300.0 * np.maximum(z @ rng.normal(size=(1, 120)), 0.0)
    y = np.where(z[:, 0] + rng.normal(size=64) > 0, 1.0, -1.0)
    x1 = _newton_svm.design(x)
    w = None
    for C in (1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1000.0):
        w = _newton_svm.fit(x1, x1 @ x1.T, y, C, w)

        def objective_and_gradient(v, C=C):
            r = np.maximum(0.0, 1.0 - y * (x1 @ v))
            return 0.5 * v @ v + C * np.sum(r**2), v - 2 * C * x1.T @ (y * r)

        polished = scipy.optimize.minimize(
            objective_and_gradient,
            w,
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": 20000, "ftol": 1e-16, "gtol": 1e-14},
        )
        assert objective_and_gradient(w)[0] <= polished.fun * (1 + 1e-9), C


def test_line_search_is_the_exact_minimiser_along_the_direction():
    rng = np.random.default_rng(0)
    margin, yg = rng.normal(size=50), rng.normal(size=50)
    C, c = 3.0, 2.0
    b = 2.0 * C * np.dot(np.maximum(margin, 0.0), yg) - 5.0  # phi'(0) = -5 < 0

    def phi(t):
        return t * b + 0.5 * c * t * t + C * np.sum(np.maximum(0.0, margin - t * yg) ** 2)

    t = _newton_svm._line_search(margin, yg, b, c, C)
    ref = scipy.optimize.minimize_scalar(
        phi, bounds=(0.0, 100.0), method="bounded", options={"xatol": 1e-12}
    )
    assert t > 0 and abs(t - ref.x) < 1e-6 and phi(t) <= ref.fun + 1e-12
    # no descent at t = 0: no step
    no_descent = 2.0 * C * np.dot(np.maximum(margin, 0.0), yg) + 1.0  # phi'(0) = +1
    assert _newton_svm._line_search(margin, yg, no_descent, c, C) == 0.0


def test_one_vs_rest_predictions_equal_converged_liblinear():
    x, y = load_digits(return_X_y=True)
    x, y = x[:400] / 16.0, y[:400]
    x1 = _newton_svm.design(x)
    train, test = np.arange(300), np.arange(300, 400)
    ref = _converged_svc(0.1).fit(x[train], y[train])
    pred = _newton_svm.fit_predict(x1, x1 @ x1.T, y, train, test, [0.01, 0.1])
    np.testing.assert_array_equal(pred[1], ref.predict(x[test]))
    # two classes: one problem, the larger label positive
    two = np.isin(y, (3, 8))
    xb, yb = x[two], y[two]
    x1, idx = _newton_svm.design(xb), np.arange(len(yb))
    ref = _converged_svc(1.0).fit(xb[idx < 60], yb[idx < 60])
    pred = _newton_svm.fit_predict(x1, x1 @ x1.T, yb, idx[idx < 60], idx[idx >= 60], [1.0])[0]
    np.testing.assert_array_equal(pred, ref.predict(xb[idx >= 60]))


def test_svm_kfold_newton_equals_sklearn_grid_search_run_to_convergence():
    x, y = load_digits(return_X_y=True)
    x, y = x[:300] / 16.0, y[:300]
    grid = (0.01, 0.1, 1.0)
    out = evaluation.svm_kfold_accuracy(x, y, num_folds=5, c_grid=grid, seed=3, solver="newton")
    reference = []
    for train, test in StratifiedKFold(n_splits=5, shuffle=True, random_state=3).split(x, y):
        search = GridSearchCV(_converged_svc(1.0), {"C": list(grid)}, cv=5, scoring="accuracy")
        search.fit(x[train], y[train])
        reference.append((search.score(x[test], y[test]), search.best_params_["C"]))
    np.testing.assert_allclose(out["per_fold"], [r[0] for r in reference], rtol=0, atol=1e-12)
    assert out["best_c"] == [r[1] for r in reference]
    assert out["mean"] > 0.9
    # the fold split is the same one the liblinear path uses
    ref_cv = cross_val_score(
        _converged_svc(0.1), x, y, cv=StratifiedKFold(5, shuffle=True, random_state=3)
    )
    fixed = evaluation.svm_kfold_accuracy(x, y, num_folds=5, c_grid=(0.1,), seed=3, solver="newton")
    np.testing.assert_allclose(fixed["per_fold"], ref_cv, rtol=0, atol=1e-12)


def test_svm_kfold_newton_threads_give_the_same_result_with_one_blas_thread(monkeypatch):
    x, y = load_digits(return_X_y=True)
    x, y = x[:200] / 16.0, y[:200]
    grid = (0.01, 1.0)

    def blas_threads():
        info = threadpoolctl.threadpool_info()
        return [i["num_threads"] for i in info if i["user_api"] == "blas"]

    blas_before = blas_threads()
    serial = evaluation.svm_kfold_accuracy(x, y, num_folds=4, c_grid=grid, seed=1, solver="newton")
    seen = []  # BLAS threads as each outer fold's search sees them
    search = _newton_svm.grid_search_accuracy

    def recording(*args, **kwargs):
        seen.append(blas_threads())
        return search(*args, **kwargs)

    monkeypatch.setattr(_newton_svm, "grid_search_accuracy", recording)
    for jobs in (2, -1):
        out = evaluation.svm_kfold_accuracy(
            x, y, num_folds=4, c_grid=grid, seed=1, solver="newton", n_jobs=jobs
        )
        assert out == serial
    assert len(seen) == 8 and all(threads and set(threads) == {1} for threads in seen)
    # the limit is lifted afterwards
    assert blas_threads() == blas_before
    for bad in (0, 1.5, True):
        with pytest.raises(ValueError, match=rf"`n_jobs` must be a non-zero integer .*{bad!r}"):
            evaluation.svm_kfold_accuracy(x, y, num_folds=4, solver="newton", n_jobs=bad)


def test_svm_kfold_unknown_solver_is_named():
    x, y = _problem(40, 3, seed=0)
    with pytest.raises(ValueError, match=r"svm_kfold_accuracy: `solver` must be one of .*'lbfgs'"):
        evaluation.svm_kfold_accuracy(x, (y > 0).astype(int), num_folds=2, solver="lbfgs")


def test_config_svm_solver_is_checked_and_imdb_multi_uses_newton():
    config = mmix_graph.make("mo", "imdb_multi,quick")
    assert config.eval.svm_solver == "newton"
    assert mmix_graph.make("mo", "imdb_binary,quick").eval.svm_solver == "liblinear"
    config.eval.svm_solver = "cg"
    with pytest.raises(training.ConfigError, match="config.eval.svm_solver = 'cg'"):
        training.validate(config)


def test_graph_run_scores_with_newton_and_rescore_script_reproduces_it(tmp_path):
    config = mmix_graph.make("mo", "mutag,quick")
    config.data.data_dir = str(DATA)
    config.train.epochs = 1
    config.eval.svm_solver = "newton"
    config.model.encoder_width = 16  # an override the rescoring must be told (--set)
    results = training.train_and_evaluate(config, str(tmp_path / "run"))
    spec = importlib.util.spec_from_file_location(
        "rescore_svm", REPO / "experiments/mmix/rescore_svm.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    argv = ["--config", f"{REPO}/experiments/mmix/graph_mo.py:mutag,quick"]
    argv += ["--workdirs", str(tmp_path / "run"), "--data-dir", str(DATA)]
    argv += ["--set", "model.encoder_width=16"]
    argv += ["--out", str(tmp_path / "rescore.json")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        (row,) = module.main(argv)
    # the run's own score is the newton score of its last checkpoint's embeddings
    assert row["newton"]["mean"] == results["test_top1"] == row["recorded"]
    assert 0.0 <= row["liblinear"]["mean"] <= 1.0 and len(row["liblinear"]["per_fold"]) == 10
    record = json.loads((tmp_path / "rescore.json").read_text())
    assert record["rows"][0]["seed"] == config.seed
    assert record["set"] == ["model.encoder_width=16"]  # the overrides are part of the record
    # Settings the rescoring was not told of (they leave the shapes alone) are said and kept.
    differences = row["config_differences"]
    assert any(d.startswith("train.epochs: 1 -> ") for d in differences), differences
    assert any(d.startswith("eval.svm_solver: 'newton' -> ") for d in differences), differences
    assert not any(d.startswith("model.encoder_width") for d in differences)
    # three draws of the outer folds: the first is the run's own, the others differ
    (row,) = module.main([*argv, "--solvers", "newton", "--fold-seeds", "3"])
    draws = row["newton"]["over_fold_seeds"]
    assert draws["seeds"] == [config.seed, config.seed + 1, config.seed + 2]
    assert draws["means"][0] == results["test_top1"]
    assert draws["min"] <= draws["mean"] <= draws["max"] and len(set(draws["means"])) > 1
    with pytest.raises(SystemExit, match="--fold-seeds 0"):
        module.main([*argv, "--fold-seeds", "0"])
    with pytest.raises(SystemExit, match="no field 'model.encoder_wdth'"):
        module.main([*argv, "--set", "model.encoder_wdth=16"])
    with pytest.raises(SystemExit, match="expected KEY=VALUE"):
        module.main([*argv, "--set", "model.encoder_width"])
