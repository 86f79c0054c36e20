"""Parameter groups: one optimiser per group of parameters, groups chosen by path.

A method that trains some parameters differently (a larger learning rate for a predictor,
frozen layers, a generator with an optimiser of its own) labels each parameter by its path
and gives one ``optax`` transformation per label; :func:`partition` combines them into one.
The anchors are big_vision's ``optax.make`` (regular expressions over parameter names) and
``optax.partition``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

import jax
import optax


def param_path(path) -> str:
    """``'encoder/linears/0/kernel'`` for a pytree path (a Variable's ``value`` dropped)."""
    names = []
    for entry in path:
        for attr in ("key", "name", "idx"):
            if hasattr(entry, attr):
                names.append(str(getattr(entry, attr)))
                break
    # A Variable's own value attribute (GetAttrKey), not a dict key that happens to be "value".
    if names and names[-1] == "value" and isinstance(path[-1], jax.tree_util.GetAttrKey):
        names.pop()
    return "/".join(names)


def label_by_path(rules: Sequence[tuple[str, str]], *, default: str) -> Callable[[object], object]:
    """A function that labels every leaf of a parameter tree by its path.

    Args:
      rules: ``(regex, label)`` pairs; a parameter takes the label of the first regex that
        ``re.search``-es its path (``'head/linears/1/kernel'``, see :func:`param_path`).
      default: the label of parameters no rule matches.

    Returns:
      ``labels(params)``: a tree of the structure of ``params`` holding labels, as
      ``optax.partition`` takes.

    Example:
      >>> import jax.numpy as jnp
      >>> labels = label_by_path([(r"^head/", "head")], default="encoder")
      >>> labels({"encoder": {"kernel": jnp.ones(2)}, "head": {"kernel": jnp.ones(2)}})
      {'encoder': {'kernel': 'encoder'}, 'head': {'kernel': 'head'}}
    """
    compiled = []
    for rule in rules:
        if not (
            isinstance(rule, tuple) and len(rule) == 2 and all(isinstance(r, str) for r in rule)
        ):
            raise ValueError(
                f"label_by_path: each rule must be a (regex, label) pair of strings, got {rule!r}"
            )
        try:
            compiled.append((re.compile(rule[0]), rule[1]))
        except re.error as err:
            raise ValueError(
                f"label_by_path: rule regex {rule[0]!r} does not compile: {err}"
            ) from None

    def label(path, _):
        name = param_path(path)
        for pattern, value in compiled:
            if pattern.search(name):
                return value
        return default

    def labels(params):
        return jax.tree_util.tree_map_with_path(label, params)

    return labels


def partition(
    transforms: Mapping[str, optax.GradientTransformation],
    labels: Callable[[object], object],
) -> optax.GradientTransformation:
    """``optax.partition`` that names a label without a transformation at ``init``.

    Args:
      transforms: one transformation per label (:func:`frozen` for parameters that must not
        move).
      labels: a function of the parameters returning their labels (:func:`label_by_path`).

    Returns:
      One transformation: each parameter is updated by its label's transformation, with that
      transformation's own state (a second optimiser is just another label).

    Example:
      >>> import jax.numpy as jnp, optax
      >>> params = {"encoder": {"w": jnp.ones(2)}, "head": {"w": jnp.ones(2)}}
      >>> tx = partition(
      ...     {"encoder": optax.sgd(0.1), "head": frozen()},
      ...     label_by_path([("^head/", "head")], default="encoder"),
      ... )
      >>> updates, _ = tx.update(params, tx.init(params), params)
      >>> updates["encoder"]["w"].tolist(), updates["head"]["w"].tolist()
      ([-0.10000000149011612, -0.10000000149011612], [0.0, 0.0])
    """
    inner = optax.partition(dict(transforms), labels)

    def init(params):
        tree = labels(params)
        unknown = sorted(
            {
                (param_path(path), label)
                for path, label in jax.tree_util.tree_leaves_with_path(tree)
                if label not in transforms
            }
        )
        if unknown:
            path, label = unknown[0]
            raise ValueError(
                f"partition: parameter {path!r} has label {label!r}, which has no "
                f"transformation; labels with one: {sorted(transforms)}"
            )
        return inner.init(params)

    return optax.GradientTransformation(init, inner.update)


def frozen() -> optax.GradientTransformation:
    """The transformation of a frozen group: zero updates, no state."""
    return optax.set_to_zero()
