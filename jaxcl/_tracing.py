"""Tracing without the quadratic cost of flax NNX's ``sharding`` probes on tracers.

flax NNX's ``Variable.set_value`` (flax 0.12) reads ``getattr(value, 'sharding', None)`` on
every ``variable[...] = value``: each batch-norm update of the running averages, each key an
``nnx.Rngs`` stream hands out (parameter initialisers draw one per parameter). Under a trace
``value`` is a tracer, whose ``sharding`` property raises ``AttributeError``, and JAX (0.10)
builds that error's message eagerly: it walks every equation traced so far to say where the
tracer came from. ``getattr`` then discards the message. Tracing a model's step therefore
costs O(number of probes x equations traced), quadratic in the model's depth: for MetAug's
three ResNet-50s the probes took 69 s of a 258 s test run under cProfile (jax 0.10.2,
flax 0.12.8, CPU).
Upstream: jax-ml/jax pull request 40041 removes the walk.

:func:`cheap_sharding_probes` replaces that property, for the duration of the block and
process-wide (every thread sees it), by one that raises ``AttributeError`` without the walk.
Nothing a user sees changes: when the property raises, Python falls back to
``Tracer.__getattr__``, which raises its own (cheap) message for ``'sharding'``, so the
property's message was never shown. Where the property is not the one described above,
JAX is left untouched.

:func:`collect_garbage_less_often` is the process-wide half, for entry points that own their
process (``jaxcl.main``, the test session): the cyclic garbage collector's thresholds.
"""

from __future__ import annotations

import contextlib
import gc
import threading

from jax._src import core as _core

_LOCK = threading.Lock()
_DEPTH = 0
_ORIGINAL = _core.Tracer.__dict__.get("sharding")


def _sharding_without_origin(self):
    raise AttributeError(f"The 'sharding' attribute is not available on {self._error_repr()}.")


_PATCHED = property(_sharding_without_origin, doc="As JAX's, without the traced-origin walk.")


def _patchable() -> bool:
    return (
        isinstance(_ORIGINAL, property)
        and hasattr(_core.Tracer, "_origin_msg")
        and hasattr(_core.Tracer, "_error_repr")
    )


@contextlib.contextmanager
def cheap_sharding_probes():
    """Within the block, ``getattr(tracer, 'sharding', None)`` costs O(1) (see the module).

    Re-entrant, also across threads (a locked count of open blocks): the property is
    restored when the last open block exits, by an exception too.
    """
    global _DEPTH
    if not _patchable():
        yield
        return
    with _LOCK:
        if _DEPTH == 0:
            _core.Tracer.sharding = _PATCHED
        _DEPTH += 1
    try:
        yield
    finally:
        with _LOCK:
            _DEPTH -= 1
            if _DEPTH == 0:
                _core.Tracer.sharding = _ORIGINAL


# Python's default thresholds (700, 10, 10); generation 0's is raised about 70-fold.
GC_THRESHOLDS = (50_000, 20, 100)


def collect_garbage_less_often() -> None:
    """Freezes every object made so far (the imports') out of the cyclic collector's scans
    and raises its thresholds to :data:`GC_THRESHOLDS`.

    Tracing and lowering a train step allocate millions of short-lived objects, and at the
    default thresholds the collector then runs dozens of full collections, each scanning the
    whole heap: MetAug's one-step test spent 4.5-6.0 s of its 58-72 s of CPU in 22 of them
    (0.2-0.8 s each, growing with the heap); frozen and with these thresholds, 0.1-0.25 s,
    and the test 49-54 s of CPU. A graph run of ``jaxcl.main`` (``graph_dacl.py:mutag,quick``)
    took 18.8-19.2 s instead of 20.6-21.2 s (AMD EPYC Zen 3, 2 cores, jax 0.10.2,
    2026-12-01). Objects whose last reference goes are freed at once as before; only
    reference cycles wait longer. For a process's entry point, after its imports: it changes
    the whole process, so the library's functions never call it.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
