"""Optimisers by name, for pretraining and linear evaluation alike."""

from __future__ import annotations

import jax
import optax

# Each optimiser's hyperparameters besides the learning rate and the weight decay, with their
# defaults: the keys a run's ``config.optim`` holds for it (and no others).
OPTIMIZER_HYPERPARAMETERS: dict[str, dict[str, float | bool]] = {
    "lars": {"momentum": 0.9, "trust_coefficient": 0.001},
    "sgd": {"momentum": 0.9, "decay_all": False},
    "adam": {},
    "adam_l2": {},
}
OPTIMIZERS = tuple(OPTIMIZER_HYPERPARAMETERS)


def decay_mask(params):
    """True for the parameters that take weight decay and LARS trust-ratio adaptation.

    Batch-norm scales and offsets and biases (every parameter with fewer than two axes) are
    excluded, as in SimCLR and the LARS paper's practice; kernels keep both.
    """
    return jax.tree.map(lambda p: jax.numpy.ndim(p) > 1, params)


def _nowhere(params):
    return jax.tree.map(lambda _: False, params)


def make_optimizer(
    name: str,
    schedule: optax.Schedule,
    *,
    weight_decay: float = 0.0,
    momentum: float = 0.9,
    trust_coefficient: float = 0.001,
    trust_ratio: bool = True,
    decay_all: bool = False,
) -> optax.GradientTransformation:
    """``'lars'`` (decay and trust ratio on kernels only), ``'adam'``, ``'adam_l2'`` or ``'sgd'``
    (decay on kernels only unless ``decay_all``).

    ``'adam'`` with weight decay is AdamW (decoupled decay, kernels only). ``'adam_l2'`` is
    PyTorch's ``Adam(weight_decay=wd)``, which GRACE and MVGRL train with: ``wd * param`` is
    added to the gradient of every parameter (biases and PReLU slopes too) before Adam's
    moment estimates, so the decay is rescaled by Adam like the loss gradient.

    Args:
      name: one of ``OPTIMIZERS``.
      schedule: learning rate as a function of the step.
      weight_decay: L2 coefficient (decoupled for ``'adam'``: AdamW; coupled for
        ``'adam_l2'``), on kernels only except for ``'adam_l2'``.
      momentum: LARS/SGD momentum.
      trust_coefficient: LARS's eta.
      trust_ratio: for ``'lars'``, whether kernels take the trust ratio
        ``trust_coefficient * |w| / |g|``. ``False`` leaves LARS as momentum SGD with its
        weight decay, as SimCLR's code runs it on the linear classifier (``head_supervised``
        is among the layers it excludes from layer adaptation).
      decay_all: for ``'sgd'``, decay every parameter (biases and batch-norm scales and
        offsets too), as ``torch.optim.SGD(weight_decay=...)`` does when a training script
        hands it all parameters (MoCo's and i-Mix's code); the default decays kernels only.
    """
    if name == "lars":
        return optax.lars(
            schedule,
            weight_decay=weight_decay,
            weight_decay_mask=decay_mask,
            trust_coefficient=trust_coefficient,
            trust_ratio_mask=decay_mask if trust_ratio else _nowhere,
            momentum=momentum,
        )
    if name == "adam":
        if weight_decay:
            return optax.adamw(schedule, weight_decay=weight_decay, mask=decay_mask)
        return optax.adam(schedule)
    if name == "adam_l2":
        return optax.chain(optax.add_decayed_weights(weight_decay), optax.adam(schedule))
    if name == "sgd":
        tx = optax.sgd(schedule, momentum=momentum or None)
        if weight_decay:
            mask = None if decay_all else decay_mask
            tx = optax.chain(optax.add_decayed_weights(weight_decay, mask=mask), tx)
        return tx
    raise ValueError(f"make_optimizer: `name` must be one of {list(OPTIMIZERS)}, got {name!r}")
