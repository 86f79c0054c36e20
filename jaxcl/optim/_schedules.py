"""Learning-rate schedules: linear warm-up, then cosine decay or a constant rate."""

from __future__ import annotations

import optax

SCHEDULES = ("cosine", "constant")


def warmup_cosine(*, peak: float, total_steps: int, warmup_steps: int) -> optax.Schedule:
    """Linear warm-up from 0 to ``peak`` over ``warmup_steps``, then cosine decay to 0.

    No restarts (Loshchilov & Hutter's SGDR with a single cycle), as DACL §5 uses.

    Example:
      >>> from jaxcl.optim import warmup_cosine
      >>> schedule = warmup_cosine(peak=1.0, total_steps=100, warmup_steps=10)
      >>> [round(float(schedule(s)), 3) for s in (0, 5, 10, 55, 100)]
      [0.0, 0.5, 1.0, 0.5, 0.0]
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

    GRACE and MVGRL train at a constant learning rate (torch Adam, no scheduler). Both cut a
    warm-up as long as the run to ``total_steps - 1`` steps, so that the last step reaches
    ``peak``.
    """
    if name == "cosine":
        return warmup_cosine(peak=peak, total_steps=total_steps, warmup_steps=warmup_steps)
    if name == "constant":
        warmup_steps = min(max(0, int(warmup_steps)), max(1, int(total_steps)) - 1)
        if warmup_steps == 0:
            return optax.constant_schedule(peak)
        return optax.linear_schedule(0.0, peak, transition_steps=warmup_steps)
    raise ValueError(f"make_schedule: `name` must be one of {list(SCHEDULES)}, got {name!r}")
