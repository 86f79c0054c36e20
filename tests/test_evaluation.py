"""Evaluation protocols against scikit-learn and independent per-fold / brute-force references."""

import functools
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score, train_test_split
from sklearn.svm import LinearSVC

from jaxcl import evaluation
from jaxcl.data import random_node_split, stratified_kfold
from jaxcl.evaluation import _kfold


@functools.cache
def _digits():
    x, y = load_digits(return_X_y=True)
    return train_test_split(x, y.astype(np.int32), test_size=0.3, random_state=0, stratify=y)


def _separable(n, dim=10, num_classes=3, margin=0.5, seed=0):
    """Points labelled by the arg-max of a random linear map, kept only with a clear margin."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=(dim, num_classes))
    x = rng.normal(size=(4 * n, dim))
    scores = np.sort(x @ w, axis=1)
    keep = (scores[:, -1] - scores[:, -2]) > margin
    x = x[keep][:n]
    return x.astype(np.float32), np.argmax(x @ w, axis=1).astype(np.int32)


def _noisy(n, dim=8, num_classes=3, flip=0.3, seed=0):
    """A linear problem with a fraction ``flip`` of labels replaced at random: not separable."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, dim)).astype(np.float32)
    y = np.argmax(x @ rng.normal(size=(dim, num_classes)), axis=1)
    flipped = rng.random(n) < flip
    y[flipped] = rng.integers(0, num_classes, size=int(flipped.sum()))
    return x, y.astype(np.int32)


# ----------------------------------------------------------------------------- linear_probe


@pytest.mark.parametrize("optimizer,lr", [("lars", 1.0), ("sgd", 0.1), ("adam", 0.05)])
def test_linear_probe_separable_data_is_learned(optimizer, lr):
    x, y = _separable(1200)
    out = evaluation.linear_probe(
        x[:1000],
        y[:1000],
        x[1000:],
        y[1000:],
        num_classes=3,
        epochs=30,
        batch_size=100,
        learning_rate=lr,
        optimizer=optimizer,
    )
    assert out["train_top1"] >= 0.99
    assert out["test_top1"] >= 0.98
    assert 0.0 <= out["final_loss"] < 0.1


def test_linear_probe_random_labels_give_chance_on_test():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(3000, 16)).astype(np.float32)
    y = rng.integers(0, 4, size=3000).astype(np.int32)
    out = evaluation.linear_probe(
        x[:1000],
        y[:1000],
        x[1000:],
        y[1000:],
        num_classes=4,
        epochs=30,
        batch_size=100,
        learning_rate=1.0,
    )
    assert abs(out["test_top1"] - 0.25) < 0.04  # 2000 test rows: binomial sd ~ 0.01
    assert out["final_loss"] > 1.2  # cannot fit 1000 random labels with 68 parameters/class


@pytest.mark.parametrize("standardize", [True, False])
def test_linear_probe_matches_sklearn_logistic_regression_on_digits(standardize):
    xtr, xte, ytr, yte = _digits()
    if standardize:
        mean, std = xtr.mean(0), xtr.std(0)
        std[std == 0] = 1.0
        sk_tr, sk_te = (xtr - mean) / std, (xte - mean) / std
    else:
        sk_tr, sk_te = xtr, xte
    reference = LogisticRegression(max_iter=5000).fit(sk_tr, ytr).score(sk_te, yte)
    out = evaluation.linear_probe(
        xtr,
        ytr,
        xte,
        yte,
        num_classes=10,
        epochs=50,
        batch_size=64,
        learning_rate=1.0,
        standardize=standardize,
    )
    assert reference > 0.95
    assert abs(out["test_top1"] - reference) <= 0.025, (out, reference)


def test_linear_probe_deterministic_per_seed_and_seed_changes_shuffle():
    xtr, xte, ytr, yte = _digits()
    run = functools.partial(
        evaluation.linear_probe,
        xtr,
        ytr,
        xte,
        yte,
        num_classes=10,
        epochs=5,
        batch_size=64,
        learning_rate=0.5,
    )
    assert run(seed=3) == run(seed=3)
    assert run(seed=3)["final_loss"] != run(seed=4)["final_loss"]


def test_linear_probe_full_batch_jax_and_bfloat16_inputs():
    x, y = _separable(300)
    kw = dict(num_classes=3, epochs=40, learning_rate=1.0, optimizer="sgd")
    host = evaluation.linear_probe(x[:200], y[:200], x[200:], y[200:], batch_size=200, **kw)
    assert host["test_top1"] >= 0.97
    # A batch larger than the training set is the full batch.
    big = evaluation.linear_probe(x[:200], y[:200], x[200:], y[200:], batch_size=10**6, **kw)
    assert big == host
    dev = [jnp.asarray(a) for a in (x[:200], y[:200], x[200:], y[200:])]
    assert evaluation.linear_probe(*dev, batch_size=200, **kw) == host
    half = [jnp.asarray(a, jnp.bfloat16) for a in (x[:200], x[200:])]
    out = evaluation.linear_probe(half[0], y[:200], half[1], y[200:], batch_size=200, **kw)
    assert abs(out["test_top1"] - host["test_top1"]) <= 0.02


def _numpy_lars_probe(x, y, num_classes, epochs, lr, trust_ratio, eta=0.001, momentum=0.9):
    """Full-batch LARS from zeros, as SimCLR's ``lars_optimizer.py`` updates a layer: the
    momentum accumulates ``lr * ratio * grad``; ``ratio`` is 1 without layer adaptation, else
    ``eta * |w| / |g|`` (1 while either norm is 0). Biases never adapt. Returns the last
    epoch's loss (before its update) and the final training accuracy."""
    n = len(x)
    w, b = np.zeros((x.shape[1], num_classes)), np.zeros(num_classes)
    vw, vb = np.zeros_like(w), np.zeros_like(b)
    onehot = np.eye(num_classes)[y]
    for t in range(epochs):
        logits = x @ w + b
        p = np.exp(logits - logits.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        loss = -np.mean(np.log(p[np.arange(n), y]))
        gw, gb = x.T @ (p - onehot) / n, np.mean(p - onehot, axis=0)
        ratio = 1.0
        if trust_ratio and np.linalg.norm(w) > 0 and np.linalg.norm(gw) > 0:
            ratio = eta * np.linalg.norm(w) / np.linalg.norm(gw)
        step_lr = lr * 0.5 * (1 + np.cos(np.pi * t / epochs))  # cosine, no warm-up
        vw = momentum * vw + step_lr * ratio * gw
        vb = momentum * vb + step_lr * gb
        w, b = w - vw, b - vb
    return loss, np.mean(np.argmax(x @ w + b, axis=1) == y)


@pytest.mark.parametrize("trust_ratio", [False, True])
def test_lars_probe_is_simclrs_lars_with_and_without_the_trust_ratio(trust_ratio):
    # Default (False): SimCLR's code exempts its classifier (head_supervised) from LARS's layer
    # adaptation, so the probe's kernel takes momentum-SGD steps; True: the trust ratio too.
    x, y = _noisy(400, dim=6, num_classes=3)
    kw = dict(num_classes=3, epochs=25, batch_size=400, learning_rate=0.5, standardize=False)
    if trust_ratio:
        kw["trust_ratio"] = True
    out = evaluation.linear_probe(x, y, x, y, optimizer="lars", **kw)
    loss, top1 = _numpy_lars_probe(x.astype(np.float64), y, 3, 25, 0.5, trust_ratio)
    np.testing.assert_allclose(out["final_loss"], loss, rtol=1e-4)
    assert out["train_top1"] == pytest.approx(top1, abs=1e-6)
    other = _numpy_lars_probe(x.astype(np.float64), y, 3, 25, 0.5, not trust_ratio)[0]
    assert abs(other - loss) > 0.05  # the two readings are told apart


def test_linear_probe_standardizes_test_rows_with_training_statistics():
    # Class 1 iff x0 > 1. A test set holding only class-1 rows would be re-centred around its
    # own mean (~1.5) by test statistics, sending about half of it to class 0.
    rng = np.random.default_rng(2)
    x = rng.normal(size=(1500, 4)).astype(np.float32) + np.float32([1.0, 0, 0, 0])
    x = x[np.abs(x[:, 0] - 1.0) > 0.1]
    y = (x[:, 0] > 1.0).astype(np.int32)
    train, test = slice(0, 1000), slice(1000, None)
    only_ones = y[test] == 1
    out = evaluation.linear_probe(
        x[train],
        y[train],
        x[test][only_ones],
        y[test][only_ones],
        num_classes=2,
        epochs=30,
        batch_size=100,
        learning_rate=1.0,
        standardize=True,
    )
    assert out["test_top1"] >= 0.97


# ----------------------------------------------------------------------- kfold_linear_accuracy


def _adam_fold_reference(x, y, train, test, key, *, num_classes, steps, lr):
    """One fold trained alone on its own rows: plain optax Adam on the mean cross entropy."""
    xt, yt = jnp.asarray(x[train]), jnp.asarray(y[train])
    params = {
        "kernel": jax.nn.initializers.glorot_uniform()(key, (x.shape[1], num_classes)),
        "bias": jnp.zeros(num_classes),
    }
    tx = optax.adam(lr)
    state = tx.init(params)

    @jax.jit
    def step(params, state):
        def loss(p):
            logits = xt @ p["kernel"] + p["bias"]
            return optax.softmax_cross_entropy_with_integer_labels(logits, yt).mean()

        updates, state = tx.update(jax.grad(loss)(params), state)
        return optax.apply_updates(params, updates), state

    for _ in range(steps):
        params, state = step(params, state)
    pred = np.argmax(x[test] @ np.asarray(params["kernel"]) + np.asarray(params["bias"]), axis=1)
    return np.mean(pred == y[test])


def test_kfold_folds_equal_training_each_fold_separately():
    x, y = _noisy(400)
    out = evaluation.kfold_linear_accuracy(
        x, y, num_classes=3, num_folds=5, steps=60, learning_rate=0.05, seed=7
    )
    folds = stratified_kfold(y, num_folds=5, seed=7)
    base = jax.random.key(7)
    reference = [
        _adam_fold_reference(
            x, y, tr, te, jax.random.fold_in(base, f), num_classes=3, steps=60, lr=0.05
        )
        for f, (tr, te) in enumerate(folds)
    ]
    # Held-out folds of 80 rows: equal up to at most one borderline row (float reassociation).
    np.testing.assert_allclose(out["per_fold"], reference, atol=1 / 80 + 1e-6)
    assert len(set(np.round(reference, 4))) > 1  # the folds really differ
    np.testing.assert_allclose(out["mean"], np.mean(out["per_fold"]), rtol=1e-12)
    np.testing.assert_allclose(out["std"], np.std(out["per_fold"]), rtol=1e-12)
    assert 0.55 < out["mean"] < 0.95


def test_kfold_fold_masks_are_stratified_disjoint_and_cover_all_rows():
    y = np.repeat(np.arange(3), [50, 30, 20]).astype(np.int32)
    np.random.default_rng(0).shuffle(y)
    train, test = _kfold.fold_masks(y, num_folds=10, seed=1)
    assert train.shape == test.shape == (10, 100)
    np.testing.assert_array_equal(test.sum(0), np.ones(100))  # each row tested exactly once
    np.testing.assert_array_equal(train, ~test)
    for f in range(10):
        np.testing.assert_array_equal(np.bincount(y[test[f]], minlength=3), [5, 3, 2])


def test_kfold_separable_data_near_perfect_and_deterministic():
    x, y = _separable(300)
    out = evaluation.kfold_linear_accuracy(x, y, num_classes=3, steps=200, seed=0)
    assert len(out["per_fold"]) == 10
    assert out["mean"] >= 0.97
    assert out == evaluation.kfold_linear_accuracy(x, y, num_classes=3, steps=200, seed=0)


def test_kfold_learning_rate_sweep_reuses_one_compiled_program():
    # DACL sweeps the learning rate over {1e-2, 1e-3, 1e-4}: it is a traced argument.
    x, y = _separable(130, dim=5)
    before = _kfold._fold_hits._cache_size()
    means = [
        evaluation.kfold_linear_accuracy(x, y, num_classes=3, learning_rate=lr)["mean"]
        for lr in (1e-2, 1e-3, 1e-4)
    ]
    assert _kfold._fold_hits._cache_size() == before + 1
    assert means[0] > means[2]  # the learning rate does reach the optimiser


# ------------------------------------------------------------------------- svm_kfold_accuracy


def test_svm_kfold_matches_sklearn_nested_cross_validation_on_digits():
    x, y = load_digits(return_X_y=True)
    x, y = x[:600] / 16.0, y[:600]
    grid = (0.01, 0.1, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        out = evaluation.svm_kfold_accuracy(x, y, num_folds=5, c_grid=grid, seed=3)
        reference = cross_val_score(
            GridSearchCV(
                LinearSVC(dual=True, random_state=3), {"C": list(grid)}, cv=5, scoring="accuracy"
            ),
            x,
            y,
            cv=StratifiedKFold(n_splits=5, shuffle=True, random_state=3),
        )
    np.testing.assert_allclose(out["per_fold"], reference, rtol=0, atol=1e-12)
    np.testing.assert_allclose(out["mean"], reference.mean(), atol=1e-12)
    assert out["mean"] > 0.9
    assert set(out["best_c"]) <= set(grid)
    # the grid search in 2 worker processes: the same folds, Cs and accuracies
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        parallel = evaluation.svm_kfold_accuracy(x, y, num_folds=5, c_grid=grid, seed=3, n_jobs=2)
    assert parallel["per_fold"] == out["per_fold"] and parallel["best_c"] == out["best_c"]


def test_svm_kfold_liblinear_runs_the_dual_solver_the_published_protocol_ran():
    # More rows than features, small unscaled ReLU-like features: scikit-learn >= 1.5's default
    # dual='auto' would run liblinear's primal solver here, which reaches other minima for the
    # larger C than the dual coordinate descent (max_iter 1000) that InfoGraph's code ran.
    rng = np.random.default_rng(0)
    z = rng.normal(size=(400, 5))
    x = 0.05 * np.maximum(z @ rng.normal(size=(5, 32)), 0.0)
    y = (z[:, 0] + 0.2 * rng.normal(size=400) > 0).astype(np.int32)
    grid = (1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1000.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        out = evaluation.svm_kfold_accuracy(x, y, seed=0)
        folds = StratifiedKFold(n_splits=10, shuffle=True, random_state=0)
        refs = {
            dual: cross_val_score(
                GridSearchCV(LinearSVC(dual=dual, random_state=0), {"C": list(grid)}, cv=5),
                x,
                y,
                cv=folds,
            )
            for dual in (True, "auto")
        }
    np.testing.assert_allclose(out["per_fold"], refs[True], rtol=0, atol=1e-12)
    assert not np.allclose(refs["auto"], refs[True])  # the data tells the two solvers apart


# -------------------------------------------------------------------- node_logistic_regression


def _node_reference(x, y, masks, *, num_classes, steps, lr, eval_every, seed):
    """Plain Python loop of PyGCL's LREvaluator: evaluate every `eval_every`, keep first best."""
    x = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-6)
    tr, va, te = (np.flatnonzero(m) for m in masks)
    params = {
        "kernel": jax.nn.initializers.glorot_uniform()(
            jax.random.key(seed), (x.shape[1], num_classes)
        ),
        "bias": jnp.zeros(num_classes),
    }
    tx = optax.adam(lr)
    state = tx.init(params)
    xt, yt = jnp.asarray(x[tr], jnp.float32), jnp.asarray(y[tr])

    @jax.jit
    def step(params, state):
        def loss(p):
            logits = xt @ p["kernel"] + p["bias"]
            return optax.softmax_cross_entropy_with_integer_labels(logits, yt).mean()

        updates, state = tx.update(jax.grad(loss)(params), state)
        return optax.apply_updates(params, updates), state

    def acc(params, rows):
        logits = x[rows] @ np.asarray(params["kernel"]) + np.asarray(params["bias"])
        return np.mean(np.argmax(logits, axis=1) == y[rows])

    best, history = (-1.0, None, 0), []
    for t in range(1, steps + 1):
        params, state = step(params, state)
        if t % eval_every == 0 or t == steps:
            val, test = acc(params, va), acc(params, te)
            history.append(test)
            if val > best[0]:
                best = (val, test, t)
    return best, history


def test_node_logistic_regression_selects_the_best_validation_step():
    # Few noisy training labels in 32 dims: the classifier overfits, so the validation
    # accuracy peaks before the last step and the selection changes the reported number.
    x, y = _noisy(1000, dim=32, num_classes=4, flip=0.35, seed=5)
    masks = random_node_split(1000, seed=0)
    kw = dict(num_classes=4, steps=600, eval_every=10, seed=2)
    out = evaluation.node_logistic_regression(x, y, *masks, learning_rate=0.05, **kw)
    (val, test, step), history = _node_reference(x, y, masks, lr=0.05, **kw)
    assert step < 600  # selection is doing something here
    assert not np.isclose(history[-1], test)
    assert out["best_step"] == step
    np.testing.assert_allclose([out["val_acc"], out["test_acc"]], [val, test], atol=1e-6)


def test_node_logistic_regression_learns_and_respects_eval_every():
    x, y = _separable(1000, dim=8, num_classes=3)
    masks = random_node_split(1000, seed=1)
    for normalize in ("l2", "standardize", None):
        out = evaluation.node_logistic_regression(
            x,
            y,
            *masks,
            num_classes=3,
            steps=250,
            learning_rate=0.05,
            eval_every=20,
            normalize=normalize,
        )
        assert out["test_acc"] >= 0.95, normalize
        assert out["best_step"] % 20 == 0 or out["best_step"] == 250


# ------------------------------------------------------------------------------------ kNN


def _knn_reference(train_x, train_y, query_x, *, k, num_classes, temperature):
    """Brute force in float64: stable sort (lower index first on ties), lowest class on ties."""
    a = train_x / np.linalg.norm(train_x, axis=1, keepdims=True)
    q = query_x / np.linalg.norm(query_x, axis=1, keepdims=True)
    sim = q.astype(np.float64) @ a.T.astype(np.float64)
    preds = []
    for row in sim:
        idx = np.argsort(-row, kind="stable")[:k]
        w = np.ones(k) if temperature is None else np.exp(row[idx] / temperature)
        scores = np.zeros(num_classes)
        for j in range(k):
            scores[train_y[idx[j]]] += w[j]
        preds.append(int(np.argmax(scores)))
    return np.asarray(preds)


@pytest.mark.parametrize("k,temperature,chunk", [(1, 0.07, 7), (20, 0.07, 64), (15, None, 1000)])
def test_knn_matches_brute_force(k, temperature, chunk):
    rng = np.random.default_rng(0)
    centers = rng.normal(size=(5, 12))
    train_y = rng.integers(0, 5, size=300).astype(np.int32)
    test_y = rng.integers(0, 5, size=101).astype(np.int32)
    train_x = (centers[train_y] + 1.5 * rng.normal(size=(300, 12))).astype(np.float32)
    test_x = (centers[test_y] + 1.5 * rng.normal(size=(101, 12))).astype(np.float32)
    ref = _knn_reference(train_x, train_y, test_x, k=k, num_classes=5, temperature=temperature)
    kw = dict(k=k, num_classes=5, temperature=temperature, chunk_size=chunk)
    pred = evaluation.knn_predict(train_x, train_y, test_x, **kw)
    np.testing.assert_array_equal(np.asarray(pred), ref)
    acc = evaluation.knn_accuracy(train_x, train_y, test_x, test_y, **kw)
    assert acc == pytest.approx(np.mean(ref == test_y))
    assert 0.4 < acc < 1.0  # neither trivial nor chance (0.2)


def test_knn_ties_are_broken_deterministically():
    e = np.eye(3, dtype=np.float32)
    # Rows 0 and 1 are the same point with labels 2 and 0; row 2 points elsewhere.
    train_x = np.stack([e[0], 2 * e[0], e[1]])
    train_y = np.array([2, 0, 1], np.int32)
    query = e[:1]
    for temperature in (0.07, None):
        kw = dict(num_classes=3, temperature=temperature)
        # k=1: equal similarities, the lower training index (label 2) is the neighbour.
        assert evaluation.knn_predict(train_x, train_y, query, k=1, **kw).tolist() == [2]
        # k=2: both duplicates vote with equal weight for 2 and 0: the lower class wins.
        assert evaluation.knn_predict(train_x, train_y, query, k=2, **kw).tolist() == [0]
        for k in (1, 2):
            ref = _knn_reference(train_x, train_y, query, k=k, **kw)
            got = evaluation.knn_predict(train_x, train_y, query, k=k, **kw)
            np.testing.assert_array_equal(np.asarray(got), ref)


def test_knn_weighting_differs_from_majority_vote():
    # One very close neighbour of class 1 against two distant ones of class 0.
    train_x = np.float32([[1.0, 0.01], [1.0, 0.9], [1.0, -0.9]])
    train_y = np.int32([1, 0, 0])
    query = np.float32([[1.0, 0.0]])
    kw = dict(k=3, num_classes=2)
    assert evaluation.knn_predict(train_x, train_y, query, temperature=0.07, **kw).tolist() == [1]
    assert evaluation.knn_predict(train_x, train_y, query, temperature=None, **kw).tolist() == [0]


# --------------------------------------------------------------------------------- errors

_X = np.zeros((20, 3), np.float32)
_Y = np.arange(20, dtype=np.int32) % 2


def _probe(**kw):
    args = dict(
        train_x=_X,
        train_y=_Y,
        test_x=_X,
        test_y=_Y,
        num_classes=2,
        epochs=1,
        batch_size=4,
        learning_rate=0.1,
    )
    args.update(kw)
    return evaluation.linear_probe(**args)


@pytest.mark.parametrize(
    "kw,match",
    [
        (dict(train_y=_Y[:-1]), r"`train_y` has 19 labels but `train_x` has 20 rows"),
        (dict(test_y=_Y.astype(np.float32)), r"`test_y` must have an integer dtype"),
        (dict(train_y=_Y + 1), r"`train_y` must lie in \[0, 2\).*found label 2"),
        (dict(train_y=_Y - 1), r"found label -1"),
        (dict(epochs=0), r"`epochs` must be a positive integer, got 0"),
        (dict(batch_size=-3), r"`batch_size` must be a positive integer, got -3"),
        (dict(batch_size=2.0), r"`batch_size` must be a positive integer"),
        (dict(learning_rate=0.0), r"`learning_rate` must be a finite number > 0"),
        (dict(optimizer="rmsprop"), r"`optimizer` must be one of"),
        (dict(momentum=1.0), r"`momentum` must lie in \[0.0, 1.0\)"),
        (dict(trust_ratio="yes"), r"`trust_ratio` must be True or False, got 'yes'"),
        (dict(standardize=1), r"`standardize` must be True or False, got 1"),
        (dict(test_x=np.zeros((20, 4), np.float32)), r"same feature dimension, got 3 and 4"),
        (dict(train_x=np.zeros((0, 3), np.float32), train_y=_Y[:0]), r"`train_x` is an empty"),
        (dict(train_x=_X.astype(np.int32)), r"`train_x` must have a floating dtype"),
        (dict(test_x=np.full((20, 3), np.nan, np.float32)), r"`test_x` contains NaN"),
        (dict(test_x=np.full((20, 3), np.inf)), r"`test_x` contains NaN"),
        # finite in float64 but not in float32: named as such, not as an infinity
        (dict(train_x=np.full((20, 3), 1e300)), r"`train_x` holds values beyond float32"),
        (dict(seed=-1), r"`seed` must be a non-negative integer"),
    ],
)
def test_linear_probe_errors(kw, match):
    with pytest.raises(ValueError, match=r"linear_probe: .*" + match):
        _probe(**kw)


@pytest.mark.parametrize(
    "kw,match",
    [
        (dict(num_folds=1), r"`num_folds` must lie in \[2, 10\].*got 1"),
        (dict(num_folds=11), r"`num_folds` must lie in \[2, 10\] \(the smallest class has 10"),
        (dict(steps=0), r"`steps` must be a positive integer, got 0"),
        (dict(y=_Y.astype(bool)), r"`y` must have an integer dtype"),
        (dict(y=_Y[:5]), r"`y` has 5 labels but `x` has 20 rows"),
    ],
)
def test_kfold_linear_accuracy_errors(kw, match):
    args = dict(x=_X, y=_Y, num_classes=2, num_folds=2)
    args.update(kw)
    with pytest.raises(ValueError, match=r"kfold_linear_accuracy: .*" + match):
        evaluation.kfold_linear_accuracy(**args)


@pytest.mark.parametrize(
    "kw,match",
    [
        (dict(num_folds=11), r"`num_folds` must lie in \[2, 10\]"),
        (dict(c_grid=()), r"`c_grid` must hold at least one value"),
        (dict(c_grid=1.0), r"`c_grid` must be a sequence of C values > 0, got 1.0"),
        (dict(c_grid="1"), r"`c_grid` must be a sequence of C values > 0, got '1'"),
        (dict(c_grid=(1.0, -1.0)), r"`c_grid` must be a finite number > 0, got -1.0"),
        (dict(inner_folds=6), r"`inner_folds` must lie in \[2, 5\]"),
        (dict(y=_Y - 1), r"non-negative class indices, found label -1"),
        (
            dict(y=_Y.astype(np.int64) + 2**32),
            r"`y` must hold class indices within int32, found label 4294967297",
        ),
        (dict(n_jobs=0), r"`n_jobs` must be a non-zero integer or None, got 0"),
        (dict(n_jobs=True, solver="liblinear"), r"`n_jobs` must be .*, got True"),
    ],
)
def test_svm_kfold_accuracy_errors(kw, match):
    args = dict(x=_X, y=_Y, num_folds=2)
    args.update(kw)
    with pytest.raises(ValueError, match=r"svm_kfold_accuracy: .*" + match):
        evaluation.svm_kfold_accuracy(**args)


def test_node_logistic_regression_with_one_evaluation_reports_the_last_step():
    # eval_every = steps: MVGRL's classifier (no selection), the accuracy after the last step.
    x, y = _noisy(1000, dim=32, num_classes=4, flip=0.35, seed=5)
    masks = random_node_split(1000, seed=0)
    kw = dict(num_classes=4, steps=300, eval_every=300, seed=2)
    out = evaluation.node_logistic_regression(x, y, *masks, learning_rate=0.05, **kw)
    (val, test, step), history = _node_reference(x, y, masks, lr=0.05, **kw)
    assert out["best_step"] == step == 300 and len(history) == 1
    np.testing.assert_allclose([out["val_acc"], out["test_acc"]], [val, test], atol=1e-6)


def test_node_logistic_regression_runs_equal_one_run_per_seed():
    # The selection problem above (validation peaks early): every seed's classifier, trained
    # in one batched program, gives what its own run gives.
    x, y = _noisy(1000, dim=32, num_classes=4, flip=0.35, seed=5)
    masks = random_node_split(1000, seed=0)
    kw = dict(num_classes=4, steps=600, eval_every=10, learning_rate=0.05)
    seeds = [0, 7, 1000, 2000, 3, 2**33 + 5]
    many = evaluation.node_logistic_regression_runs(x, y, *masks, seeds=seeds, **kw)
    one = [evaluation.node_logistic_regression(x, y, *masks, seed=s, **kw) for s in seeds]
    for name in ("test_acc", "val_acc", "best_step"):
        assert many[name].shape == (len(seeds),)
        np.testing.assert_array_equal(many[name], [r[name] for r in one], err_msg=name)
    assert len(set(many["best_step"].tolist())) > 1  # the seeds do differ
    single = evaluation.node_logistic_regression_runs(x, y, *masks, seeds=[7], **kw)
    assert single["test_acc"].tolist() == [one[1]["test_acc"]]


@pytest.mark.parametrize(
    "seeds,match",
    [
        ([], r"`seeds` is empty"),
        (3, r"`seeds` must be a sequence of non-negative integers, got 3"),
        ("01", r"`seeds` must be a sequence"),
        ([0, -1], r"`seed` must be a non-negative integer, got -1"),
        ([0, 1.5], r"`seed` must be a non-negative integer, got 1.5"),
    ],
)
def test_node_logistic_regression_runs_errors(seeds, match):
    with pytest.raises(ValueError, match=r"node_logistic_regression_runs: " + match):
        evaluation.node_logistic_regression_runs(
            _X, _Y, _TR, _VA, _TE, num_classes=2, steps=5, seeds=seeds
        )


_TR = np.arange(20) < 10
_VA = (np.arange(20) >= 10) & (np.arange(20) < 15)
_TE = np.arange(20) >= 15


@pytest.mark.parametrize(
    "kw,match",
    [
        (dict(val_mask=_VA | _TR), r"`train_mask` and `val_mask` overlap in 10 rows"),
        (dict(test_mask=_TE | _VA), r"`val_mask` and `test_mask` overlap in 5 rows"),
        (dict(test_mask=_TE[:10]), r"`test_mask` must be a boolean mask of shape \(20,\)"),
        (dict(train_mask=np.flatnonzero(_TR)), r"`train_mask` must be a boolean mask"),
        (dict(val_mask=np.zeros(20, bool)), r"`val_mask` selects no rows"),
        (dict(steps=0), r"`steps` must be a positive integer"),
        (dict(eval_every=0), r"`eval_every` must be a positive integer"),
        (dict(weight_decay=-1e-4), r"`weight_decay` must be a finite number >= 0"),
        (dict(normalize="l1"), r"`normalize` must be one of"),
        (dict(num_classes=1), r"`y` must lie in \[0, 1\)"),
    ],
)
def test_node_logistic_regression_errors(kw, match):
    args = dict(x=_X, y=_Y, train_mask=_TR, val_mask=_VA, test_mask=_TE, num_classes=2, steps=5)
    args.update(kw)
    with pytest.raises(ValueError, match=r"node_logistic_regression: .*" + match):
        evaluation.node_logistic_regression(**args)


@pytest.mark.parametrize(
    "kw,match",
    [
        (dict(k=0), r"`k` must be a positive integer, got 0"),
        (dict(k=21), r"`k` must be at most the number of training rows \(20\), got 21"),
        (dict(chunk_size=0), r"`chunk_size` must be a positive integer"),
        (dict(temperature=0.0), r"`temperature` must be a finite number > 0"),
        (dict(test_y=_Y[:3]), r"`test_y` has 3 labels but `test_x` has 20 rows"),
        (dict(train_y=_Y * 3), r"`train_y` must lie in \[0, 2\)"),
    ],
)
def test_knn_errors(kw, match):
    args = dict(train_x=_X + 1, train_y=_Y, test_x=_X + 1, test_y=_Y, num_classes=2, k=3)
    args.update(kw)
    with pytest.raises(ValueError, match=r"knn_accuracy: .*" + match):
        evaluation.knn_accuracy(**args)


# -- node clustering (k-means, NMI / ARI) ---------------------------------------------------


def test_kmeans_recovers_separated_clusters_and_not_random_labels():
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(4), 50)
    centres = rng.normal(size=(4, 8)) * 10
    x = centres[labels] + rng.normal(size=(200, 8))
    r = evaluation.kmeans_nmi_ari(x, labels)
    assert r["nmi"] > 0.99 and r["ari"] > 0.99
    shuffled = evaluation.kmeans_nmi_ari(x, rng.permutation(labels))
    assert abs(shuffled["nmi"]) < 0.1 and abs(shuffled["ari"]) < 0.1


def test_kmeans_bad_input_is_named():
    x = np.zeros((5, 3))
    with pytest.raises(ValueError, match=r"kmeans_nmi_ari.*\[n, dim\].*\[n\]"):
        evaluation.kmeans_nmi_ari(x, np.zeros(4, int))
    with pytest.raises(ValueError, match="NaN or inf"):
        evaluation.kmeans_nmi_ari(np.full((5, 3), np.nan), np.zeros(5, int))
    with pytest.raises(ValueError, match=r"`x` is empty \(\(0, 3\)\)"):  # not num_clusters
        evaluation.kmeans_nmi_ari(np.zeros((0, 3)), np.zeros(0, int))
    with pytest.raises(ValueError, match=r"`x` is empty \(\(5, 0\)\)"):
        evaluation.kmeans_nmi_ari(np.zeros((5, 0)), np.zeros(5, int))
    with pytest.raises(ValueError, match="num_clusters` = 9 exceeds"):
        evaluation.kmeans_nmi_ari(x, np.zeros(5, int), num_clusters=9)
    with pytest.raises(ValueError, match="`labels` must have an integer dtype.*float64"):
        evaluation.kmeans_nmi_ari(x, np.zeros(5))
    with pytest.raises(ValueError, match="`seed` must be a non-negative integer, got -1"):
        evaluation.kmeans_nmi_ari(x, np.zeros(5, int), seed=-1)
    with pytest.raises(ValueError, match="n_init"):
        evaluation.kmeans_nmi_ari(x, np.zeros(5, int), n_init=0)


def test_svm_kfold_accuracy_takes_bfloat16_and_lists_as_float64():
    from jaxcl.evaluation import _inputs

    x = np.random.default_rng(0).normal(size=(40, 3))
    y = (x[:, 0] > 0).astype(np.int32)
    # a nested list keeps its float64 values; bfloat16 becomes its float64 values
    listed = _inputs.host_features("f", "x", x.tolist())
    assert listed.dtype == np.float64 and np.array_equal(listed, x)
    half = jnp.asarray(x, jnp.bfloat16)
    widened = _inputs.host_features("f", "x", half)
    assert widened.dtype == np.float64 and np.array_equal(widened, np.asarray(half, np.float64))
    # ... which scikit-learn's solver reads (it cannot read bfloat16 arrays)
    assert evaluation.svm_kfold_accuracy(half, y, num_folds=2) == evaluation.svm_kfold_accuracy(
        widened, y, num_folds=2
    )
