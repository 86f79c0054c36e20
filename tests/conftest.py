"""Test-session setup: eight fake CPU devices, so multi-device code runs on one machine.

The flag must be in place before JAX initialises its backends, which is why it is set
at import time of this conftest (pytest imports it before any test module).
"""

import os
import pathlib

_FLAG = "--xla_force_host_platform_device_count=8"
# XLA:CPU's compile time (LLVM's optimisation passes) dominates most tests: at LLVM's
# optimisation level 0 compile-bound tests run 1.5-2x faster (the MetAug ResNet-50 test 82 s
# instead of 123 s, when it was added). It changes how fast the compiled code runs, not what it
# computes. Training, benchmarks and the README's examples keep XLA's default level.
# Not used: XLA's older fusion emitters (--xla_cpu_use_fusion_emitters=false) compile another
# ~40% faster (six integration tests 196 -> 115 s, 2026-11-29, jax 0.10.2), but together with
# level 0 they miscompile: test_metaug's float64 second-order gradient came out 4.14 against
# finite differences' 8.13 (right at level 2, and with the default emitters at either level).
_FAST_COMPILE = "--xla_backend_optimization_level=0"
for _flag in (_FLAG, _FAST_COMPILE):
    if _flag.split("=")[0] not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _flag).strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# A compilation cache on disk, fresh for each session and shared with the subprocesses the
# tests start: many tests compile the same step more than once (a run, its resumed rerun,
# one process against two), and XLA then compiles it once. Small programs too (no minimum
# compile time): the two xdist workers compile many of the same small ones (a file's tests
# split between them), each ~45 ms to compile and ~4 ms to read back. On test_mmix.py and
# test_esco.py (-n 2, 2 Zen 3 cores, 2026-12-02) 719 of 2,586 compiles were hits; with a
# 0.2 s minimum they took 183-198 s, without 172-185 s.
if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
    import atexit
    import shutil
    import tempfile

    _CACHE = tempfile.mkdtemp(prefix="jaxcl-tests-xla-cache-")
    atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)
    os.environ["JAX_COMPILATION_CACHE_DIR"] = _CACHE
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")

# jemalloc in the processes the session starts (xdist's workers, the jaxcl.main runs some
# tests start) where it is installed, as the README's test command does (Debian's
# libjemalloc2); without it they run on glibc's malloc, slower (and test_host_memory's
# check of another allocator fails, naming the package). XLA:CPU's compiler
# allocates many small objects: glibc's malloc took 14 % of a compile-bound test's profile,
# and with jemalloc two such tests (image_imix_moco's mock-data run and m-Mix's PTC_MR run)
# took 55.7-58.1 s against 62.2-64.3 s (2 Zen 3 cores, 2026-12-02, two runs each).
_MALLOC = ""
if "LD_PRELOAD" not in os.environ:
    import ctypes.util

    _MALLOC = ctypes.util.find_library("jemalloc") or ""
    if _MALLOC:
        os.environ["LD_PRELOAD"] = _MALLOC

import jax  # noqa: E402
import pytest  # noqa: E402

import jaxcl.methods  # noqa: E402, F401
import jaxcl.training  # noqa: E402, F401
from jaxcl import _tracing  # noqa: E402

# Tracing's garbage, as jaxcl.main does (see there): most tests trace and compile a step, and
# at Python's default thresholds each full collection scanned the worker's whole heap, which
# grows over the session. A fresh-clone `bash .ci/run` took 2083 s with this, 2982 s without
# (2 Zen 3 cores, 2026-12-01).
_tracing.collect_garbage_less_often()


def subprocess_xla_flags(devices: int) -> str:
    """``XLA_FLAGS`` for a ``jaxcl.main`` the tests start: ``devices`` fake CPU devices and
    the test session's fast-compile flags (``from conftest import subprocess_xla_flags``)."""
    return " ".join([f"--xla_force_host_platform_device_count={devices}", _FAST_COMPILE])


def communicate_all(procs, timeout: float) -> list[tuple]:
    """``p.communicate(timeout=timeout)`` of every process in ``procs``, read at the same time
    (``from conftest import communicate_all``). Read one after the other, a process whose
    output fills its pipe (64 KiB) while another is read stops at its next write, and the
    one read waits for it at a collective until jax.distributed gives up and aborts. On any
    failure all of them are killed."""
    from concurrent.futures import ThreadPoolExecutor

    try:
        with ThreadPoolExecutor(len(procs)) as pool:
            futures = [pool.submit(p.communicate, timeout=timeout) for p in procs]
            return [f.result() for f in futures]
    except BaseException:
        for p in procs:
            p.kill()
        raise


def count_batches(monkeypatch, task_class) -> dict:
    """Counts the training batches ``task_class.batches(epoch)`` hands out (the trainer's
    only source of steps): ``{'n': count}``, updated as the run draws them
    (``from conftest import count_batches``)."""
    drawn = {"n": 0}
    original = task_class.batches

    def counting(self, epoch, *args, **kwargs):
        for batch in original(self, epoch, *args, **kwargs):
            drawn["n"] += 1
            yield batch

    monkeypatch.setattr(task_class, "batches", counting)
    return drawn


def train_once(tmp_path_factory, name: str, train) -> tuple[dict, pathlib.Path]:
    """``(results, workdir)`` of ``train(workdir)``, run once per test session and shared by
    the tests that compare other runs with it, on whichever pytest-xdist worker they land
    (the workers share the base temporary folder; xdist's own ``--dist loadgroup`` does not
    group tests under pytest 9). The first caller trains under a file lock, the others wait
    for it and read its results, which ``train`` must return as JSON-serialisable data
    (``from conftest import train_once``)."""
    import fcntl
    import json

    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    workdir, done = root / name, root / f"{name}.json"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not done.exists():
            done.write_text(json.dumps(train(str(workdir))))
        return json.loads(done.read_text()), workdir


def tiny_config(method: str = "dacl", **overrides):
    """``tests/configs/tiny.py``'s config for ``method`` (a seconds-long run on scikit-learn's
    digits; DACL's MLP with batch norm by default), with ``overrides`` such as
    ``**{"mesh.data": 8}`` applied (``from conftest import tiny_config``)."""
    import importlib.util

    path = pathlib.Path(__file__).parent / "configs" / "tiny.py"
    spec = importlib.util.spec_from_file_location("tiny_config", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    c = module.get_config(method)
    for dotted, value in overrides.items():
        section, key = dotted.split(".")
        with c.unlocked():
            c[section][key] = value
    return c


def pytest_report_header(config):
    if _MALLOC:
        malloc = f"{_MALLOC} preloaded"
    elif "LD_PRELOAD" in os.environ:
        malloc = f"LD_PRELOAD={os.environ['LD_PRELOAD']!r}, as set"
    else:
        malloc = "glibc's malloc (no libjemalloc2 installed)"
    return (
        f"jax {jax.__version__}, devices: {jax.device_count()} x {jax.devices()[0].platform}; "
        f"worker processes: {malloc}"
    )


@pytest.fixture(scope="session")
def num_devices():
    n = jax.device_count()
    assert n == 8, f"expected 8 fake CPU devices from tests/conftest.py, got {n}"
    return n


@pytest.fixture(autouse=True)
def _cheap_sharding_probes(request):
    """Every test traces as the trainer does (``jaxcl._tracing.cheap_sharding_probes``), also
    the many that jit a method's step or loss themselves: flax's probes otherwise cost them
    O(probes x equations) of tracing (MetAug's one-step test traced its step in 10.8 s
    without, 5.2 s with; its four direct-jit tests 171 -> 162 s, 2 Zen 3 cores, 2026-12-01).
    Tests marked ``plain_sharding_probes`` see JAX's own property (the workaround's own)."""
    if request.node.get_closest_marker("plain_sharding_probes"):
        yield
        return
    with _tracing.cheap_sharding_probes():
        yield


@pytest.fixture(scope="session", autouse=True)
def _remove_tfds_empty_temp_dirs():
    """tensorflow-datasets makes an empty ``/tmp/tmp*tfds`` folder and leaves it there each
    time it builds a data set's info without a prepared copy on disk
    (``DatasetInfo.initialize_from_bucket``, with Google Cloud Storage disabled), which the
    tests' ``tfds.testing.mock_data`` does hundreds of times a run. Remove the empty ones this
    session made."""
    import glob
    import tempfile

    pattern = os.path.join(tempfile.gettempdir(), "tmp*tfds")
    before = set(glob.glob(pattern))
    yield
    for path in set(glob.glob(pattern)) - before:
        try:
            os.rmdir(path)  # only ever removes an empty folder
        except OSError:
            pass
