"""Mixed precision: compute in a lower precision while parameters stay in float32."""

from __future__ import annotations

import jax.numpy as jnp
from flax import nnx

# The flax layers whose ``dtype`` attribute is the dtype of their computation (their
# parameters keep ``param_dtype``).
_LAYERS = (nnx.Linear, nnx.Conv, nnx.ConvTranspose, nnx.Einsum, nnx.Embed, nnx.BatchNorm,
           nnx.LayerNorm, nnx.RMSNorm, nnx.GroupNorm)  # fmt: skip

COMPUTE_DTYPES = ("float32", "bfloat16")


def set_compute_dtype(model: nnx.Module, dtype) -> nnx.Module:
    """Makes every flax layer of ``model`` compute in ``dtype``; returns ``model``.

    Parameters stay in their own dtype (float32): each layer casts its inputs and parameters
    to ``dtype`` for its computation, so gradients reach the float32 parameters through the
    cast. Batch norm keeps its running statistics in float32 and reduces in float32 (flax
    computes the batch statistics in float32 for 16-bit inputs). What the model's own code
    computes outside those layers (graph propagation, a bilinear form) follows the dtype of
    its inputs. jaxcl's losses accumulate in float32 whatever their inputs' dtype.

    Args:
      model: a built model.
      dtype: ``'float32'``, ``'bfloat16'`` or a jnp dtype.

    Example:
      >>> import jax.numpy as jnp
      >>> from flax import nnx
      >>> layer = set_compute_dtype(nnx.Linear(3, 2, rngs=nnx.Rngs(0)), "bfloat16")
      >>> layer(jnp.ones((1, 3))).dtype, layer.kernel[...].dtype
      (dtype(bfloat16), dtype('float32'))
    """
    dtype = jnp.dtype(dtype)
    if dtype.name not in COMPUTE_DTYPES:
        raise ValueError(
            f"set_compute_dtype: `dtype` must be one of {list(COMPUTE_DTYPES)}, got {dtype.name!r}"
        )
    for _, module in nnx.iter_modules(model):
        if isinstance(module, _LAYERS):
            module.dtype = None if dtype == jnp.float32 else dtype
    return model
