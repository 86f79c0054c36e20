"""Batch norm over groups of the batch: per-device batch norm on one array.

In PyTorch's ``DistributedDataParallel`` without SyncBN every GPU normalises its own slice of
the batch: G GPUs, G sets of statistics. MoCo's shuffle-BN relies on that (the key batch is
shuffled across GPUs so that a query and its positive key are normalised with statistics of
different images), and i-Mix's CIFAR runs use it with 2 GPUs. Under ``jit`` an array is the
global batch, and :class:`flax.nnx.BatchNorm` normalises all of it at once (SyncBN).
:class:`BatchNorm` here does either: with ``groups = G`` the batch's G consecutive slices of
``N / G`` samples are normalised each with its own statistics, so that one device reproduces
a G-GPU run's batch norm, and a run on D devices with G a multiple of D keeps every group on
one device.

Running averages: each group's statistics are what one GPU would fold into its running
averages; DDP keeps the first GPU's (it broadcasts rank 0's buffers), here the groups' mean
and variance are averaged and folded in once per call (with one group: flax's update).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx


def _check_groups(groups) -> int:
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
        raise ValueError(f"BatchNorm: `groups` must be an int >= 1, got {groups!r}")
    return groups


class BatchNorm(nnx.BatchNorm):
    """:class:`flax.nnx.BatchNorm` with its batch statistics over ``groups`` equal slices of
    the batch (axis 0) in training; ``groups = 1`` is flax's batch norm exactly.

    Args:
      num_features: the features (last axis).
      groups: slices of the batch, each normalised with its own mean and variance (see the
        module's docstring); the batch size must be a multiple of it. Set it on a built model
        with :func:`set_batch_norm_groups`.
      **kwargs: :class:`flax.nnx.BatchNorm`'s (``momentum``, ``epsilon``, ``scale_init``,
        ``rngs``, ...); only the last axis as the feature axis.

    Example (two groups of two samples, each normalised to -1 and 1):
      >>> import jax.numpy as jnp
      >>> from flax import nnx
      >>> bn = BatchNorm(1, groups=2, epsilon=0.0, rngs=nnx.Rngs(0))
      >>> bn(jnp.array([[0.0], [2.0], [10.0], [30.0]])).ravel().tolist()
      [-1.0, 1.0, -1.0, 1.0]
    """

    def __init__(self, num_features: int, *, groups: int = 1, **kwargs):
        super().__init__(num_features, **kwargs)
        if self.axis != -1:
            raise ValueError(f"BatchNorm: only the last axis as features, got axis={self.axis!r}")
        self.groups = _check_groups(groups)

    def __call__(self, x, use_running_average: bool | None = None, *, mask=None):
        running = self.use_running_average if use_running_average is None else use_running_average
        if self.groups == 1 or running is not False:  # None: flax's error
            return super().__call__(x, use_running_average, mask=mask)
        if self.axis_name is not None:
            raise ValueError("BatchNorm: `groups` > 1 with `axis_name` (statistics over devices)")
        g, n = self.groups, x.shape[0]
        if n % g:
            raise ValueError(
                f"BatchNorm: a batch of {n} does not split into groups={g} equal slices "
                "(the batch size must be a multiple of the groups)"
            )
        scale = self.scale[...] if self.scale is not None else None
        bias = self.bias[...] if self.bias is not None else None
        # flax's promotion: input, running statistics and parameters to one dtype first
        x, _, _, scale, bias = self.promote_dtype(
            (x, self.mean[...], self.var[...], scale, bias), dtype=self.dtype
        )
        stats_dtype = jnp.promote_types(self.dtype or x.dtype, jnp.float32)
        xs = x.reshape(g, n // g, *x.shape[1:]).astype(stats_dtype)
        where = None if mask is None else jnp.broadcast_to(mask, x.shape).reshape(xs.shape)
        axes = tuple(range(1, xs.ndim - 1))  # within each group, all but the features
        mean = jnp.mean(xs, axes, keepdims=True, where=where)
        if self.use_fast_variance:
            var = jnp.maximum(0.0, jnp.mean(xs * xs, axes, keepdims=True, where=where) - mean**2)
        else:
            var = jnp.mean((xs - mean) ** 2, axes, keepdims=True, where=where)
        flat = (g, x.shape[-1])
        decay = self.momentum
        self.mean[...] = jax.lax.stop_gradient(
            decay * self.mean[...] + (1 - decay) * mean.reshape(flat).mean(0)
        )
        self.var[...] = jax.lax.stop_gradient(
            decay * self.var[...] + (1 - decay) * var.reshape(flat).mean(0)
        )
        # flax's _normalize: (x - mean) * (rsqrt(var + eps) * scale) + bias, cast at the end
        y = x.reshape(xs.shape) - mean
        mul = jax.lax.rsqrt(var + self.epsilon)
        if scale is not None:
            mul = mul * scale
        y = y * mul
        if bias is not None:
            y = y + bias
        params = [p for p in (scale, bias) if p is not None]
        out_dtype = self.dtype or jnp.result_type(x, *params)
        return y.reshape(x.shape).astype(out_dtype)


def set_batch_norm_groups(model: nnx.Module, groups: int) -> nnx.Module:
    """Sets ``groups`` on every :class:`BatchNorm` of ``model`` (in place; returns it).

    A model with :class:`flax.nnx.BatchNorm` layers that are not jaxcl's (which cannot group
    their statistics) is refused when ``groups > 1``, naming them, rather than left half
    grouped.
    """
    _check_groups(groups)
    ours, plain = [], []
    for path, module in nnx.iter_modules(model):
        if isinstance(module, BatchNorm):
            ours.append(module)
        elif isinstance(module, nnx.BatchNorm):
            plain.append("/".join(map(str, path)))
    if plain and groups > 1:  # refused before any layer is changed
        raise ValueError(
            f"set_batch_norm_groups: groups={groups}, but these batch norms are flax's and "
            f"cannot group their statistics: {plain} (build them with "
            "jaxcl.models.BatchNorm)"
        )
    for module in ours:
        module.groups = groups
    return model
