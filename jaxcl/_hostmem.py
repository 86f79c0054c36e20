"""glibc's allocator settings behind :func:`jaxcl.training.reuse_host_memory`, without JAX.

Kept apart from ``jaxcl.training`` so that a process that does not run JAX (the PyTorch side
of the benchmarks) can apply the same settings.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform

# mallopt(3) parameters (glibc's malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4
_INT_MAX = 2**31 - 1


def glibc_malloc() -> bool:
    """Whether this process's ``malloc`` is glibc's: Linux with glibc, and no other
    allocator (jemalloc, tcmalloc, through ``LD_PRELOAD``) in front of it, whose memory
    glibc's settings would not touch."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    address = lambda fn: ctypes.cast(fn, ctypes.c_void_p).value  # noqa: E731
    return address(ctypes.CDLL(None).malloc) == address(libc.malloc)


def keep_freed_memory() -> bool:
    """Makes glibc serve large blocks from its heap and keep freed memory there for reuse.

    ``M_MMAP_MAX = 0``: no block gets its own ``mmap`` (which ``free`` would unmap, so the
    next allocation of that size is zero-filled page by page again); ``M_TRIM_THRESHOLD`` at
    its maximum: the heap's free top is not returned to the system. Process-wide; effective
    for the main thread's allocations (another thread's heap maps a block above 64 MiB
    whatever ``M_MMAP_MAX`` says). Returns whether both settings took effect (False elsewhere
    than on Linux with glibc, and where another allocator serves ``malloc``:
    :func:`glibc_malloc`).
    """
    if not glibc_malloc():
        return False
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    settings = ((_M_MMAP_MAX, 0), (_M_TRIM_THRESHOLD, _INT_MAX))
    # A list, not a generator: every setting is applied even if one is refused.
    return all([libc.mallopt(param, value) == 1 for param, value in settings])
