"""A convolution whose kernel gradient XLA:CPU computes without a strided fused transpose.

The kernel gradient of a convolution is itself a convolution, over the input with its batch
dimension as the feature (contracted) dimension. XLA:CPU's convolution kernels want that
dimension innermost, so layout assignment transposes the input from ``[B, H, W, C]`` to
``[C, H, W, B]``. Left alone, XLA also fuses the elementwise producers of the input (batch
norm, ReLU and, through ResNet's shortcuts, those of earlier blocks) into that transpose and
emits the fusion as a loop over the output that reads every input with a stride of
``H W C`` elements. In a ``jax.profiler`` trace of ResNet-18's forward + backward at batch 256
on 2 Intel Xeon cores (an ad hoc script), such a transpose of one ``[256, 32, 32, 64]``
float32 activation took 160-870 ms, against 30 ms for a plain transpose of the same array,
and the transposes were half of the time (``simclr_step_benchmark.py`` measures the effect).

:func:`conv_general_dilated` is ``jax.lax.conv_general_dilated`` with a custom VJP whose
backward pass first passes the saved input through a ``lax.cond`` whose predicate XLA cannot
fold (an integer ``i | ~i == -1``, true for every ``i``, with ``i`` the bits of the kernel's
maximum). A conditional is a fusion boundary that XLA:CPU keeps (``lax.optimization_barrier``
is expanded away before fusion on CPU), so the input is materialised by a contiguous fusion
and the transpose is a plain one. Values and gradients are those of
``jax.lax.conv_general_dilated``; on other platforms the backward pass is the plain one (the
barrier is chosen per platform at lowering), and where JAX's default backend is not the CPU
the function *is* ``jax.lax.conv_general_dilated``.

The price of a custom VJP: forward-mode differentiation (``jax.jvp``, ``jax.jacfwd``) of the
function raises a ``TypeError``; reverse mode to any order works. Models that need forward
mode on CPU take ``jax.lax.conv_general_dilated`` instead (``ResNet(...,
cpu_gradient_barrier=False)``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

_INT_OF_WIDTH = {1: jnp.int8, 2: jnp.int16, 4: jnp.int32, 8: jnp.int64}


def _materialised(x: jax.Array, token: jax.Array) -> jax.Array:
    """``x``, through a conditional that XLA cannot remove (its predicate is always true but
    depends on the bits of the runtime scalar ``token``)."""
    bits = lax.bitcast_convert_type(token, _INT_OF_WIDTH[token.dtype.itemsize])
    always = (bits | ~bits) == -1
    return lax.cond(always, lambda v: v, jnp.zeros_like, x)


def _barrier(x: jax.Array, source: jax.Array) -> jax.Array:
    """``x`` behind the conditional on CPU, its predicate taken from the runtime values of
    ``source`` (a small array: a reduction of it, not an element, so that it works whatever
    the sharding of ``source``); ``x`` itself elsewhere."""
    token = jnp.max(source) if source.size else jnp.zeros((), jnp.int32)
    return lax.platform_dependent(x, token, cpu=_materialised, default=lambda x, _: x)


def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None,
                         rhs_dilation=None, dimension_numbers=None, feature_group_count=1,
                         batch_group_count=1, precision=None, preferred_element_type=None,
                         **kwargs):  # fmt: skip
    """``jax.lax.conv_general_dilated`` (same arguments, same values and gradients) whose
    backward pass on CPU keeps XLA from fusing the input's producers into the kernel
    gradient's layout transpose (see the module's docstring). Pass it to ``flax.nnx.Conv``'s
    ``conv_general_dilated`` argument.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> x, w = jnp.ones((2, 8, 8, 3)), jnp.ones((3, 3, 3, 4))
      >>> args = ((1, 1), "SAME")
      >>> dims = dict(dimension_numbers=("NHWC", "HWIO", "NHWC"))
      >>> ours = jax.grad(lambda w: conv_general_dilated(x, w, *args, **dims).sum())(w)
      >>> plain = jax.grad(lambda w: lax.conv_general_dilated(x, w, *args, **dims).sum())(w)
      >>> bool(jnp.array_equal(ours, plain))
      True
    """

    def conv(lhs, rhs):
        return lax.conv_general_dilated(
            lhs,
            rhs,
            window_strides,
            padding,
            lhs_dilation=lhs_dilation,
            rhs_dilation=rhs_dilation,
            dimension_numbers=dimension_numbers,
            feature_group_count=feature_group_count,
            batch_group_count=batch_group_count,
            precision=precision,
            preferred_element_type=preferred_element_type,
            **kwargs,
        )

    if jax.default_backend() != "cpu":
        return conv(lhs, rhs)

    @jax.custom_vjp
    def barriered(lhs, rhs):
        return conv(lhs, rhs)

    def forward(lhs, rhs):
        return conv(lhs, rhs), (lhs, rhs)

    def backward(saved, g):
        lhs, rhs = saved
        return jax.vjp(conv, _barrier(lhs, rhs), rhs)[1](g)  # rhs: the (small) kernel

    barriered.defvjp(forward, backward)
    return barriered(lhs, rhs)
