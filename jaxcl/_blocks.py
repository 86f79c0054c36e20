"""Choosing block sizes for loops over rows."""

from __future__ import annotations

import math


def largest_divisor_at_most(n: int, limit: int) -> int:
    """The largest divisor of ``n`` that is ``<= limit`` (1 if none is larger)."""
    best = 1
    for small in range(1, math.isqrt(n) + 1):
        if n % small == 0:
            large = n // small
            if small <= limit:
                best = max(best, small)
            if large <= limit:
                best = max(best, large)
    return best


def even_block(n: int, target: int) -> int | None:
    """A block size that divides ``n`` exactly and is within 4x of ``target``, if one exists.

    Blocks that divide the rows make the blocking a free reshape: no prefix slice to copy and
    no short tail to handle (and concatenate) separately.
    """
    block = largest_divisor_at_most(n, target)
    return block if 4 * block >= target else None
