"""Evaluation splits: GRACE's random node split and stratified k-fold for graph sets."""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.model_selection import StratifiedKFold

from jaxcl import _checks


def _seed(fn: str, seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        _checks.fail(fn, f"`seed` must be a non-negative integer, got {seed!r}")
    return int(seed)


def random_node_split(
    num_nodes: int, *, seed: int, train: float = 0.1, val: float = 0.1
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A random train/val/test split of a graph's nodes (GRACE's 10%/10%/80% protocol).

    As in GRACE's ``generate_split``, the split sizes are ``int(num_nodes * train)`` and
    ``int(num_nodes * val)`` and the test set is every other node; the nodes are drawn by a
    NumPy permutation (GRACE uses torch's ``random_split``, so the same seed does not give
    GRACE's exact sets).

    Args:
      num_nodes: number of nodes in the graph.
      seed: seed of the permutation; the same seed gives the same split.
      train: fraction of nodes for training, in [0, 1].
      val: fraction of nodes for validation, in [0, 1], with ``train + val <= 1``.

    Returns:
      ``(train_mask, val_mask, test_mask)``, bool ``[num_nodes]`` each, disjoint and
      covering every node.

    Example:
      >>> tr, va, te = random_node_split(2708, seed=0)
      >>> int(tr.sum()), int(va.sum()), int(te.sum())
      (270, 270, 2168)

    References:
      Zhu et al., "Deep Graph Contrastive Representation Learning" (GRACE), 2020, Sec. 4.
    """
    fn = "random_node_split"
    num_nodes = _checks.positive_int(fn, "num_nodes", num_nodes)
    seed = _seed(fn, seed)
    _checks.in_range(fn, "train", train, 0.0, 1.0)
    _checks.in_range(fn, "val", val, 0.0, 1.0)
    if train + val > 1.0:
        _checks.fail(fn, f"`train` + `val` must be <= 1, got {train} + {val}")
    num_train, num_val = int(num_nodes * train), int(num_nodes * val)
    order = np.random.default_rng(seed).permutation(num_nodes)
    masks = np.zeros((3, num_nodes), dtype=bool)
    masks[0, order[:num_train]] = True
    masks[1, order[num_train : num_train + num_val]] = True
    masks[2, order[num_train + num_val :]] = True
    return masks[0], masks[1], masks[2]


def stratified_kfold(
    labels, *, num_folds: int = 10, seed: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Shuffled stratified k-fold splits, the graph-classification protocol of GIN/InfoGraph.

    A thin wrapper over ``sklearn.model_selection.StratifiedKFold(num_folds, shuffle=True,
    random_state=seed)``, as GIN's and InfoGraph's evaluation code use it.

    Args:
      labels: int ``[num_examples]`` class of each example (e.g. ``GraphDataset.labels``).
      num_folds: number of folds, from 2 to the smallest class's number of examples (so that
        every fold holds every class).
      seed: seed of the shuffle; the same seed gives the same folds.

    Returns:
      ``num_folds`` pairs ``(train_idx, test_idx)`` of int64 index arrays; the test sets
      partition ``range(num_examples)`` and each keeps the class proportions.

    Example:
      >>> folds = stratified_kfold(np.array([0, 1] * 10), num_folds=5, seed=0)
      >>> len(folds), [len(test) for _, test in folds]
      (5, [4, 4, 4, 4, 4])
    """
    fn = "stratified_kfold"
    labels = np.asarray(labels)
    if labels.ndim != 1:
        _checks.fail(fn, f"`labels` must have rank 1, got shape {labels.shape}")
    num_folds = _checks.positive_int(fn, "num_folds", num_folds)
    if not 2 <= num_folds <= labels.shape[0]:
        _checks.fail(
            fn, f"`num_folds` must lie in [2, {labels.shape[0]}] (the examples), got {num_folds}"
        )
    smallest = int(np.unique(labels, return_counts=True)[1].min())
    if num_folds > smallest:
        _checks.fail(
            fn,
            f"`num_folds` = {num_folds} is more than the smallest class's {smallest} examples: "
            "some folds would miss that class and the folds would not keep the proportions",
        )
    seed = _seed(fn, seed)
    folds = StratifiedKFold(n_splits=num_folds, shuffle=True, random_state=seed)
    return [
        (train.astype(np.int64), test.astype(np.int64))
        for train, test in folds.split(np.zeros((labels.shape[0], 1)), labels)
    ]
