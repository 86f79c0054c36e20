"""Node windows: the loss on a few runs of consecutive node ids per step (MVGRL's sampling)."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def node_windows(key: jax.Array, num_nodes: int, windows: int, size: int) -> jax.Array:
    """``[windows, size]`` node ids: ``windows`` runs of ``size`` consecutive ids, each
    starting uniformly in ``[0, num_nodes - size]`` (MVGRL's ``node/train.py`` sampling;
    ``config.method.windows`` and ``window_size``)."""
    if not 1 <= size <= num_nodes:
        raise ValueError(
            f"config.method.window_size = {size!r}: expected 1 .. {num_nodes} (the graph's "
            "number of nodes)"
        )
    starts = jax.random.randint(key, (windows,), 0, num_nodes - size + 1)
    return starts[:, None] + jnp.arange(size)


def check_windows(hp) -> None:
    """ValueError unless ``hp.windows`` is an integer >= 0 and ``hp.window_size`` >= 1."""
    for key in ("windows", "window_size"):
        value = hp[key]
        least = int(key == "window_size")
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            raise ValueError(f"config.method.{key} = {value!r}: expected an integer >= {least}")


def draw_windows(hp, key: jax.Array, num_nodes: int):
    """``(key, ids)``: this step's ``[windows, window_size]`` node ids and the key left for
    the rest of the step; ``(key, None)`` for the whole graph, the key untouched (so that
    ``windows = 0`` draws the random numbers it drew before windows existed)."""
    if not hp.windows:
        return key, None
    key, k_windows = jax.random.split(key)
    return key, node_windows(k_windows, num_nodes, hp.windows, hp.window_size)


def over_windows(objective, a: jax.Array, b: jax.Array, ids: jax.Array | None) -> jax.Array:
    """``objective(a, b)`` on the rows of the whole graph (``ids`` None), or its mean over
    the windows, each window's rows contrasted among themselves."""
    if ids is None:
        return objective(a, b)
    return jnp.mean(jax.vmap(lambda w: objective(a[w], b[w]))(ids))
