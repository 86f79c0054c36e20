"""``training.reuse_host_memory``: XLA:CPU's per-step temporaries stop being page-faulted in
again every step (counted with ``getrusage``, in fresh interpreters, since the settings are
process-wide and must come before JAX creates its CPU backend)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

from jaxcl import training

_GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"

# A computation whose temporaries (exp(x @ x.T), 64 MiB) are far above glibc's largest mmap
# threshold (32 MiB), so that by default every call maps and zero-fills them afresh.
_PROGRAM = """
import json, resource, sys
import jax, jax.numpy as jnp
from jaxcl import training
mode = sys.argv[1]
applied = None
if mode == "before":
    applied = training.reuse_host_memory()
f = jax.jit(lambda x: jnp.sum(jnp.exp(x @ x.T) @ x, axis=0))
x = jax.random.normal(jax.random.key(0), (4096, 16)) * 0.1
if mode == "after":
    applied = training.reuse_host_memory()
for _ in range(3):
    f(x).block_until_ready()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(5):
    f(x).block_until_ready()
faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 5
print(json.dumps(dict(applied=applied, faults=faults,
                      async_dispatch=bool(jax.config.read("jax_cpu_enable_async_dispatch")))))
"""


def _run(mode: str, preload: str | None = None) -> dict:
    # The allocator's own environment settings would decide the outcome: left out, and
    # glibc's malloc unless ``preload`` names another (the test session preloads jemalloc).
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MALLOC_", "GLIBC_"))}
    env.pop("LD_PRELOAD", None)
    if preload:
        env["LD_PRELOAD"] = preload
    out = subprocess.run(
        [sys.executable, "-c", _PROGRAM, mode],
        capture_output=True,
        text=True,
        env={**env, "JAX_PLATFORMS": "cpu"},
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _huge_pages_always() -> bool:
    """Whether the kernel backs every large mapping with 2 MiB pages (then a fresh mapping
    costs a few faults, not one per 4 KiB page)."""
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            return "[always]" in f.read()
    except OSError:
        return False


def test_reuse_host_memory_stops_per_call_page_faults():
    default, reused = _run("none"), _run("before")
    if not _GLIBC:
        assert reused["applied"] is False
        return
    assert default["async_dispatch"] is True
    if not _huge_pages_always():
        # 64 MiB of temporaries = 16,384 pages of 4 KiB, zero-filled again on every call ...
        assert default["faults"] > 8000, default
    # ... and reused once the settings apply.
    assert reused["applied"] is True
    assert reused["async_dispatch"] is False
    assert reused["faults"] < 500, reused


def test_reuse_host_memory_changes_nothing_under_another_malloc():
    """With jemalloc in front of glibc (LD_PRELOAD), glibc's settings would reach no memory:
    it says so (False) and leaves the dispatch asynchronous. It used to answer True there."""
    import ctypes.util

    jemalloc = ctypes.util.find_library("jemalloc")
    if jemalloc is None:
        pytest.fail("libjemalloc2 is not installed (the README's test command installs it)")
    other = _run("before", preload=jemalloc)
    assert other["applied"] is False
    assert other["async_dispatch"] is True


def test_reuse_host_memory_after_the_backend_exists_says_so():
    late = _run("after")
    assert late["applied"] is False
    if _GLIBC:
        assert late["async_dispatch"] is True  # unchanged: fixed when the backend was created


def test_reuse_host_memory_config_key_defaults_and_validation():
    """Off by default (it costs short steps their asynchronous dispatch), on in the configs
    of large full-batch steps; a value other than a bool is named."""
    from jaxcl.configs import dacl_graph, grace_node

    assert grace_node.make("cora").train.reuse_host_memory is True
    assert dacl_graph.make("dacl_graph", "mutag").train.reuse_host_memory is True
    c = training.base_config()
    assert c.train.reuse_host_memory is False
    training.validate(c)
    with c.unlocked():
        del c.train["reuse_host_memory"]
        c.train.reuse_host_memory = "yes"
    with pytest.raises(training.ConfigError, match=r"config.train.reuse_host_memory = 'yes'"):
        training.validate(c)
