"""Row-blocked reductions whose memory does not grow with the batch.

A loss over N rows that needs an ``[N, D]`` intermediate (random features, a block of
logits) is computed one block of rows at a time inside ``lax.scan``. The block function is
wrapped in ``jax.checkpoint`` so the backward pass recomputes each block's intermediate
instead of storing all of them: peak memory is O(block * D) on top of the inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax

from jaxcl import _blocks
from jaxcl.losses import _common


def chunked_reduce(
    fn: Callable,
    combine: Callable,
    init,
    arrays: Sequence[jax.Array],
    chunk_size: int,
):
    """Folds ``fn`` over row blocks of ``arrays`` with ``combine``, starting from ``init``.

    Args:
      fn: maps row blocks ``(x_1[rows], x_2[rows], ...)`` to a pytree of partial results.
      combine: associative ``(acc, partial) -> acc`` on those pytrees.
      init: the identity of ``combine`` (same structure as ``fn``'s result).
      arrays: arrays that share their leading dimension N.
      chunk_size: most rows per block. With ``N <= chunk_size`` ``fn`` runs once on
        everything, un-rematerialised, so XLA can fuse and share work across the whole loss.

    Returns:
      ``combine`` folded over all blocks. Blocks divide N exactly when a divisor within 4x of
      ``chunk_size`` exists; otherwise the rows beyond the last full block form one short
      block at the end.
    """
    n = arrays[0].shape[0]
    if n <= chunk_size:
        return combine(init, fn(*arrays))
    chunk_size = _blocks.even_block(n, chunk_size) or chunk_size
    num_blocks = n // chunk_size
    n_main = num_blocks * chunk_size
    block_fn = jax.checkpoint(fn)
    blocks = tuple(x[:n_main].reshape((num_blocks, chunk_size) + x.shape[1:]) for x in arrays)

    def step(acc, block):
        return combine(acc, block_fn(*block)), None

    # Inside shard_map the carry varies along the axes the rows vary along (a constant init
    # does not), and scan wants the two types equal.
    axes = _common.varying_axes(*arrays)
    init = jax.tree.map(lambda x: _common.as_varying(x, axes), init)
    acc, _ = jax.lax.scan(step, init, blocks)
    if n_main < n:
        acc = combine(acc, block_fn(*(x[n_main:] for x in arrays)))
    return acc


def add(acc, part):
    return jax.tree.map(lambda x, y: x + y, acc, part)
