"""Host memory: keep XLA:CPU's per-step temporaries in the process instead of the OS.

XLA:CPU allocates the temporaries of each execution as one block from ``malloc`` and frees it
when the execution ends (GRACE's step on Cora: 245 MiB). glibc serves a block that large with a
fresh ``mmap`` and unmaps it on ``free``, so every step touches new pages and the kernel
zero-fills all of them again: 63,000 page faults and ~120 ms of kernel time per GRACE step on
2 CPU cores, a step of ~530 ms. :func:`reuse_host_memory` makes glibc serve large blocks from
its heap and keep them there after ``free`` (``jaxcl._hostmem``), and has JAX run CPU
computations on the calling thread, whose heap those settings govern (JAX's asynchronous CPU
dispatch runs them on a worker thread with a heap of its own, where a block that large is
mapped whatever the settings). The next step reuses the same pages: the GRACE step ~465 ms.

The price is the asynchronous dispatch: a run of many short steps loses the overlap of Python
with computation (the quickstart's 14 ms steps: 10-15% slower). Hence a per-config choice,
``config.train.reuse_host_memory``: off in ``base_config()``, on in the configs of large
full-batch steps where it was measured to help (GRACE, DACL on graphs); the trainer applies
it before JAX creates its CPU backend.

Also XLA:CPU's choice of convolution library (:func:`eigen_cpu_convolutions`), a flag that has
to be set before JAX creates its backends as well.
"""

from __future__ import annotations

import os
import platform

import jax
import jaxlib.version
from absl import logging
from jax._src import xla_bridge

from jaxcl import _hostmem


def reuse_host_memory() -> bool:
    """Keeps freed host memory for reuse (glibc); returns whether the settings took effect.

    Sets glibc's ``M_MMAP_MAX`` to 0 and ``M_TRIM_THRESHOLD`` to its maximum for the whole
    process, and ``jax_cpu_enable_async_dispatch`` to False. Call it before the first JAX
    computation (the trainer does, when ``config.train.reuse_host_memory``): once JAX's CPU
    backend exists its dispatch mode is fixed, and this returns False (logging why) with the
    allocator settings applied but the large per-step blocks still allocated off the main
    thread.

    What it costs: memory the process frees stays in the process (its resident size does not
    shrink after a peak), and on CPU the host no longer dispatches the next computation while
    the current one runs. Elsewhere than on Linux with glibc, or where another allocator
    serves ``malloc`` (jemalloc or tcmalloc through ``LD_PRELOAD``, with settings of their
    own), it changes nothing and returns False. Accelerators' own memory is unaffected.
    """
    if not _hostmem.keep_freed_memory():
        logging.info(
            "reuse_host_memory: nothing changed (%s, libc %s%s)",
            platform.system(),
            platform.libc_ver()[0] or "unknown",
            f", malloc not glibc's: LD_PRELOAD={os.environ.get('LD_PRELOAD', '')!r}"
            if platform.libc_ver()[0] == "glibc" and not _hostmem.glibc_malloc()
            else "",
        )
        return False
    if jax.config.read("jax_cpu_enable_async_dispatch") and xla_bridge.backends_are_initialized():
        logging.info(
            "reuse_host_memory: JAX's CPU backend already exists with asynchronous dispatch; "
            "call it before the first JAX computation for the full effect"
        )
        return False
    jax.config.update("jax_cpu_enable_async_dispatch", False)
    return True


# XLA:CPU flag naming the operations it hands to YNNPACK; "-x" drops x from the defaults.
_YNN_FLAG = "--xla_cpu_experimental_ynn_fusion_type"
EIGEN_CONVOLUTIONS_FLAG = _YNN_FLAG + "=-individual_convolution"


def eigen_cpu_convolutions() -> bool:
    """Has XLA:CPU compute convolutions with Eigen instead of YNNPACK; returns whether it
    took effect.

    jaxlib 0.10's XLA:CPU sends each convolution to YNNPACK by default, which on x86 runs
    ResNet's convolutions (and above all their kernel gradients) at about half of Eigen's
    speed: the SimCLR ResNet-18 step at batch 512 on 2 cores takes 64.0 s with YNNPACK and
    30.2 s with Eigen, the same loss either way
    (``experiments/benchmarks/simclr_step_benchmark.py``, ``--cpu-convolutions`` picks).
    This appends ``--xla_cpu_experimental_ynn_fusion_type=-individual_convolution`` to
    ``XLA_FLAGS``: matrix products and the rest stay with
    YNNPACK, accelerators are unaffected. Call it before the first JAX computation (the
    trainer does, unless ``config.train.eigen_cpu_convolutions`` is False): XLA reads its
    flags once, when JAX creates its backends. Returns False, changing nothing, when those
    exist already, when ``XLA_FLAGS`` already sets the YNNPACK fusion types (the user's
    choice is kept), or before jaxlib 0.10 (where the flag was not checked to exist).
    """
    flags = os.environ.get("XLA_FLAGS", "")
    if _YNN_FLAG in flags:
        logging.info("eigen_cpu_convolutions: XLA_FLAGS sets %s already; left as it is", _YNN_FLAG)
        return False
    if xla_bridge.backends_are_initialized():
        logging.info(
            "eigen_cpu_convolutions: JAX's backends exist already; call it before the first "
            "JAX computation (or set XLA_FLAGS=%s)",
            EIGEN_CONVOLUTIONS_FLAG,
        )
        return False
    if tuple(int(p) for p in jaxlib.version.__version__.split(".")[:2]) < (0, 10):
        return False
    os.environ["XLA_FLAGS"] = f"{flags} {EIGEN_CONVOLUTIONS_FLAG}".strip()
    return True
