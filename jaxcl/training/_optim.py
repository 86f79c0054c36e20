"""Optimisers and learning-rate schedules for pretraining and linear evaluation."""

from __future__ import annotations

import jax
import optax

OPTIMIZERS = ("lars", "adam", "sgd")


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


def make_optimizer(
    name: str,
    schedule: optax.Schedule,
    *,
    weight_decay: float = 0.0,
    momentum: float = 0.9,
    trust_coefficient: float = 0.001,
) -> optax.GradientTransformation:
    """``'lars'`` (decay and trust ratio on kernels only), ``'adam'`` or ``'sgd'``.

    Args:
      name: one of ``OPTIMIZERS``.
      schedule: learning rate as a function of the step.
      weight_decay: L2 coefficient (decoupled for Adam: AdamW), kernels only.
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
    if name == "sgd":
        tx = optax.sgd(schedule, momentum=momentum or None)
        if weight_decay:
            tx = optax.chain(optax.add_decayed_weights(weight_decay, mask=decay_mask), tx)
        return tx
    raise ValueError(f"make_optimizer: `name` must be one of {list(OPTIMIZERS)}, got {name!r}")
