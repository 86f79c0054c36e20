"""Optimisers and learning-rate schedules for pretraining and linear evaluation."""

from __future__ import annotations

import jax
import optax

OPTIMIZERS = ("lars", "adam", "adam_l2", "sgd")
SCHEDULES = ("cosine", "constant")


def decay_mask(params):
    """True for the parameters that take weight decay and LARS trust-ratio adaptation.

    Batch-norm scales and offsets and biases (every parameter with fewer than two axes) are
    excluded, as in SimCLR and the LARS paper's practice; kernels keep both.
    """
    return jax.tree.map(lambda p: jax.numpy.ndim(p) > 1, params)


def warmup_cosine(*, peak: float, total_steps: int, warmup_steps: int) -> optax.Schedule:
    """Linear warm-up from 0 to ``peak`` over ``warmup_steps``, then cosine decay to 0.

    No restarts (Loshchilov & Hutter's SGDR with a single cycle), as DACL §5 uses.
    """
    total_steps = max(1, int(total_steps))
    warmup_steps = min(max(0, int(warmup_steps)), total_steps - 1)
    if warmup_steps == 0:
        return optax.cosine_decay_schedule(peak, decay_steps=total_steps)
    return optax.warmup_cosine_decay_schedule(
        init_value=0.0,
        peak_value=peak,
        warmup_steps=warmup_steps,
        decay_steps=total_steps,
        end_value=0.0,
    )


def make_schedule(name: str, *, peak: float, total_steps: int, warmup_steps: int) -> optax.Schedule:
    """``'cosine'`` (:func:`warmup_cosine`) or ``'constant'``: linear warm-up, then ``peak``.

    GRACE and MVGRL train at a constant learning rate (torch Adam, no scheduler).
    """
    if name == "cosine":
        return warmup_cosine(peak=peak, total_steps=total_steps, warmup_steps=warmup_steps)
    if name == "constant":
        warmup_steps = max(0, int(warmup_steps))
        if warmup_steps == 0:
            return optax.constant_schedule(peak)
        return optax.linear_schedule(0.0, peak, transition_steps=warmup_steps)
    raise ValueError(f"make_schedule: `name` must be one of {list(SCHEDULES)}, got {name!r}")


def make_optimizer(
    name: str,
    schedule: optax.Schedule,
    *,
    weight_decay: float = 0.0,
    momentum: float = 0.9,
    trust_coefficient: float = 0.001,
) -> optax.GradientTransformation:
    """``'lars'`` (decay and trust ratio on kernels only), ``'adam'``, ``'adam_l2'`` or ``'sgd'``.

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
    """
    if name == "lars":
        return optax.lars(
            schedule,
            weight_decay=weight_decay,
            weight_decay_mask=decay_mask,
            trust_coefficient=trust_coefficient,
            trust_ratio_mask=decay_mask,
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
            tx = optax.chain(optax.add_decayed_weights(weight_decay, mask=decay_mask), tx)
        return tx
    raise ValueError(f"make_optimizer: `name` must be one of {list(OPTIMIZERS)}, got {name!r}")
