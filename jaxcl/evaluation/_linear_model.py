"""The linear softmax classifier every protocol here trains: parameters, loss, accuracy."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax

# Columns with a smaller training standard deviation are only centred: they carry no
# information a linear map could use, and dividing by ~0 would blow up rounding noise.
_STD_FLOOR = 1e-8


def zeros_init(dim: int, num_classes: int) -> dict:
    """All-zero kernel and bias (the objective is convex; zeros leave no init randomness)."""
    return {
        "kernel": jnp.zeros((dim, num_classes), jnp.float32),
        "bias": jnp.zeros((num_classes,), jnp.float32),
    }


def glorot_init(key: jax.Array, dim: int, num_classes: int) -> dict:
    """Glorot-uniform kernel and zero bias: torch's ``xavier_uniform_`` as DGI/InfoGraph use."""
    kernel = jax.nn.initializers.glorot_uniform()(key, (dim, num_classes), jnp.float32)
    return {"kernel": kernel, "bias": jnp.zeros((num_classes,), jnp.float32)}


def logits(params: dict, x: jax.Array) -> jax.Array:
    return x @ params["kernel"] + params["bias"]


def weighted_cross_entropy(params: dict, x: jax.Array, y: jax.Array, weight: jax.Array):
    """Mean softmax cross entropy over the rows with weight 1 (0 marks padding / other folds)."""
    per_row = optax.softmax_cross_entropy_with_integer_labels(logits(params, x), y)
    return jnp.sum(weight * per_row) / jnp.maximum(jnp.sum(weight), 1.0)


def correct(params: dict, x: jax.Array, y: jax.Array) -> jax.Array:
    """``[n]`` float 1/0: whether the arg-max class is the label (ties go to the lower class)."""
    return (jnp.argmax(logits(params, x), axis=-1) == y).astype(jnp.float32)


@jax.jit
def num_correct(params: dict, x: jax.Array, y: jax.Array) -> jax.Array:
    """Number of rows classified correctly, as int32 (exact, unlike a float32 mean)."""
    return jnp.sum(correct(params, x, y).astype(jnp.int32))


def accuracy(params: dict, x: jax.Array, y: jax.Array) -> float:
    """Fraction of rows classified correctly, divided on the host in float64."""
    return int(num_correct(params, x, y)) / x.shape[0]


@jax.jit
def standardize(train_x: jax.Array, *others: jax.Array) -> tuple[jax.Array, ...]:
    """Z-scores ``train_x`` and ``others`` with the mean and standard deviation of ``train_x``."""
    mean = jnp.mean(train_x, axis=0)
    std = jnp.std(train_x, axis=0)
    std = jnp.where(std > _STD_FLOOR, std, 1.0)
    return tuple((x - mean) / std for x in (train_x, *others))
