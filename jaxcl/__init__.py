"""jaxcl: domain-agnostic contrastive self-supervised learning in JAX.

``import jaxcl`` gives every subpackage as an attribute, as optax does
(``jaxcl.losses.esco_loss``, ``jaxcl.training.train_and_evaluate``). Each is imported the
first time it is used, so ``import jaxcl`` alone stays cheap and the trainer's dependencies
load only for training.

Subpackages: :mod:`~jaxcl.augment`, :mod:`~jaxcl.losses`, :mod:`~jaxcl.random_features`,
:mod:`~jaxcl.mixers`, :mod:`~jaxcl.graphs`, :mod:`~jaxcl.data`, :mod:`~jaxcl.models`,
:mod:`~jaxcl.optim`, :mod:`~jaxcl.evaluation`, :mod:`~jaxcl.methods`, :mod:`~jaxcl.training`,
:mod:`~jaxcl.configs`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0.dev0"

_SUBPACKAGES = (
    "augment",
    "configs",
    "data",
    "evaluation",
    "graphs",
    "losses",
    "methods",
    "mixers",
    "models",
    "optim",
    "random_features",
    "training",
)

__all__ = ["__version__", *_SUBPACKAGES]

if TYPE_CHECKING:  # for static analysis; at run time they load on first use
    from jaxcl import (  # noqa: F401
        augment,
        configs,
        data,
        evaluation,
        graphs,
        losses,
        methods,
        mixers,
        models,
        optim,
        random_features,
        training,
    )


def __getattr__(name: str):
    if name in _SUBPACKAGES:
        module = importlib.import_module(f"jaxcl.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module 'jaxcl' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_SUBPACKAGES))
