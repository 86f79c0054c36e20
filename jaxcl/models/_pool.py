"""Max pooling as strided slices, differentiated through the window's first maximum.

``flax.nnx.max_pool`` is ``lax.reduce_window``, whose gradient JAX computes with
``select_and_scatter_add``. XLA:CPU emits both as generic loops over windows (the backward
one with index arithmetic and a scatter), slow enough that max pooling's backward pass was
about a third of MetAug's step on CPU (README, ``metaug_benchmark.py``). Here a ``k x k``
window of stride ``s`` is ``k^2`` strided slices of the (padded) input and an elementwise
maximum, which XLA fuses into one pass; the position of each window's maximum (the first in
row-major window order, as ``select_and_scatter_add`` picks it among ties) is kept as one
small integer per output (materialised behind a conditional on CPU, as in
:mod:`jaxcl.models._conv`, so that the backward pass reads it rather than recomputing the
window), and the tangent of the output is the tangent of the input at that position. That
rule is a ``custom_jvp``, so forward and reverse mode (to any order) both work, and the
backward pass (JAX's transpose of the rule) is ``k^2`` masked, interior-padded copies of the
output's cotangent summed in one fusion, with no scatter.

Values and gradients equal ``flax.nnx.max_pool``'s, ties included; where a window holds a
NaN the output is NaN (as ``reduce_window``'s) and no input of that window receives a
gradient.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
from jax import lax

from jaxcl.models._conv import _barrier


def _window_slices(x, window, strides, out_hw):
    """The ``k_h * k_w`` strided views of the padded ``[B, H, W, C]`` ``x``, row-major."""
    (kh, kw), (sh, sw), (oh, ow) = window, strides, out_hw
    return [
        lax.slice(
            x,
            (0, i, j, 0),
            (x.shape[0], i + sh * (oh - 1) + 1, j + sw * (ow - 1) + 1, x.shape[3]),
            (1, sh, sw, 1),
        )
        for i in range(kh)
        for j in range(kw)
    ]


def _pooled_shape(padded_hw, window, strides):
    return tuple((n - k) // s + 1 for n, k, s in zip(padded_hw, window, strides, strict=True))


@functools.partial(jax.custom_jvp, nondiff_argnums=(1, 2))
def _max_pool_padded(x, window, strides):
    out_hw = _pooled_shape(x.shape[1:3], window, strides)
    return functools.reduce(jnp.maximum, _window_slices(x, window, strides, out_hw))


@_max_pool_padded.defjvp
def _max_pool_padded_jvp(window, strides, primals, tangents):
    (x,), (t,) = primals, tangents
    out_hw = _pooled_shape(x.shape[1:3], window, strides)
    slices = _window_slices(x, window, strides, out_hw)
    y = functools.reduce(jnp.maximum, slices)
    # the first position (row-major) holding the maximum; NaN windows match none
    first = jnp.full(y.shape, len(slices), jnp.int8 if len(slices) < 127 else jnp.int32)
    for k in reversed(range(len(slices))):
        first = jnp.where(slices[k] == y, jnp.asarray(k, first.dtype), first)
    first = _barrier(first, first)
    t_slices = _window_slices(t, window, strides, out_hw)
    zero = jnp.zeros((), t.dtype)
    t_out = sum(jnp.where(first == k, tk, zero) for k, tk in enumerate(t_slices))
    return y, t_out


def max_pool(
    x: jax.Array,
    window_shape: Sequence[int],
    strides: Sequence[int] | None = None,
    padding: str | Sequence[tuple[int, int]] = "VALID",
) -> jax.Array:
    """Max pooling of ``[batch, H, W, C]`` images: ``flax.nnx.max_pool``'s values and
    gradients, computed as strided slices (see the module's docstring).

    Args:
      x: ``[batch, H, W, C]``, a floating dtype.
      window_shape: ``(k_h, k_w)``.
      strides: ``(s_h, s_w)``; ``None`` for 1.
      padding: ``'VALID'``, ``'SAME'`` or ``((lo_h, hi_h), (lo_w, hi_w))``; padded positions
        hold ``-inf``, as in ``flax.nnx.max_pool``.

    Example:
      >>> import jax.numpy as jnp
      >>> x = jnp.arange(16.0).reshape(1, 4, 4, 1)
      >>> max_pool(x, (2, 2), (2, 2))[0, :, :, 0]
      Array([[ 5.,  7.],
             [13., 15.]], dtype=float32)
    """
    fn = "max_pool"
    if x.ndim != 4:
        raise ValueError(f"{fn}: `x` must be [batch, H, W, C], got shape {x.shape}")
    if not jnp.issubdtype(x.dtype, jnp.floating):
        raise ValueError(f"{fn}: `x` must have a floating dtype, got {x.dtype}")
    window = tuple(window_shape)
    strides = (1, 1) if strides is None else tuple(strides)
    for name, value in (("window_shape", window), ("strides", strides)):
        if len(value) != 2 or any(isinstance(v, bool) or not isinstance(v, int) or v < 1
                                  for v in value):  # fmt: skip
            raise ValueError(f"{fn}: `{name}` must be two positive ints, got {value!r}")
    if isinstance(padding, str):
        pads = lax.padtype_to_pads(x.shape[1:3], window, strides, padding)
    else:
        pads = [tuple(p) for p in padding]
        if len(pads) != 2 or any(len(p) != 2 or min(p) < 0 for p in pads):
            raise ValueError(
                f"{fn}: `padding` must be 'VALID', 'SAME' or two (low, high) pairs of "
                f"non-negative ints, got {padding!r}"
            )
    padded = tuple(n + lo + hi for n, (lo, hi) in zip(x.shape[1:3], pads, strict=True))
    if any(n < k for n, k in zip(padded, window, strict=True)):
        raise ValueError(f"{fn}: the window {window} is larger than the padded input {padded}")
    if any(lo or hi for lo, hi in pads):
        x = jnp.pad(x, ((0, 0), *pads, (0, 0)), constant_values=-jnp.inf)
    return _max_pool_padded(x, window, strides)
