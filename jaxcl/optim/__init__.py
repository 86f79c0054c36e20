"""Optimisers, learning-rate schedules and parameter groups, for training and evaluation.

* :func:`make_optimizer` -- LARS (weight decay and trust ratio on kernels only, as SimCLR),
  Adam/AdamW, PyTorch-style Adam with L2, SGD, by name.
* :func:`make_schedule`, :func:`warmup_cosine` -- linear warm-up, then cosine decay or a
  constant rate.
* :func:`partition`, :func:`label_by_path`, :func:`frozen` -- one optimiser per group of
  parameters chosen by path: other learning rates, frozen layers, a second optimiser.

This package sits below :mod:`jaxcl.training` and :mod:`jaxcl.evaluation`, which both use it.
"""

from jaxcl.optim._groups import frozen, label_by_path, param_path, partition
from jaxcl.optim._optimizers import (
    OPTIMIZER_HYPERPARAMETERS,
    OPTIMIZERS,
    decay_mask,
    make_optimizer,
)
from jaxcl.optim._schedules import SCHEDULES, make_schedule, warmup_cosine

__all__ = [
    "OPTIMIZERS",
    "OPTIMIZER_HYPERPARAMETERS",
    "SCHEDULES",
    "decay_mask",
    "frozen",
    "label_by_path",
    "make_optimizer",
    "make_schedule",
    "param_path",
    "partition",
    "warmup_cosine",
]
