"""``jaxcl._tracing.cheap_sharding_probes``: flax's ``sharding`` probes on tracers without
JAX's walk over everything traced so far (quadratic tracing otherwise)."""

import contextlib
import os

import jax
import jax.numpy as jnp
import pytest
from flax import nnx
from jax._src import core as jax_core
from jax._src.interpreters import partial_eval

from jaxcl import _tracing, training
from jaxcl.configs import esco_synthetic

# The workaround itself: without the test session's own block (see conftest.py).
pytestmark = pytest.mark.plain_sharding_probes


@pytest.fixture
def walks(monkeypatch):
    """How often JAX walked the traced equations to explain a tracer's origin."""
    calls = []
    original = partial_eval.JaxprStackFrame.find_progenitors

    def counted(self, tracer):
        calls.append(tracer)
        return original(self, tracer)

    monkeypatch.setattr(partial_eval.JaxprStackFrame, "find_progenitors", counted)
    return calls


def _bn_model_step():
    """Keys drawn and a batch norm's running averages written under a trace (flax:
    ``var[...] = value``)."""

    def step(x):
        bn = nnx.BatchNorm(4, rngs=nnx.Rngs(0))
        return bn(nnx.Linear(4, 4, rngs=nnx.Rngs(1))(x)).sum()

    return lambda: jax.make_jaxpr(step)(jnp.ones((8, 4)))


def test_flax_updates_walk_the_trace_without_it_and_not_with_it(walks):
    trace = _bn_model_step()
    trace()
    assert walks, "flax/JAX no longer probe .sharding this way: the workaround can go"
    walks.clear()
    with _tracing.cheap_sharding_probes():
        trace()
    assert walks == []


def test_the_probe_answers_as_before_and_the_property_is_restored():
    """hasattr / getattr give the same answers and the error the same text as without the
    patch (JAX's ``Tracer.__getattr__`` words it either way); the property comes back."""
    original = jax_core.Tracer.__dict__["sharding"]
    seen = {}

    def message(x):
        with pytest.raises(AttributeError) as err:
            x.sharding  # noqa: B018
        return str(err.value)

    def f(x):
        seen["plain"] = message(x)
        with _tracing.cheap_sharding_probes():
            with _tracing.cheap_sharding_probes():  # re-entrant
                seen["inner"] = (hasattr(x, "sharding"), getattr(x, "sharding", None))
            seen["still_patched"] = jax_core.Tracer.__dict__["sharding"] is not original
            seen["patched"] = message(x)
        return x

    jax.make_jaxpr(f)(1.0)
    assert seen["inner"] == (False, None) and seen["still_patched"]
    assert seen["patched"] == seen["plain"] and "'sharding' attribute" in seen["plain"]
    assert jax_core.Tracer.__dict__["sharding"] is original
    with pytest.raises(RuntimeError), _tracing.cheap_sharding_probes():  # restored on errors
        raise RuntimeError
    assert jax_core.Tracer.__dict__["sharding"] is original


def test_training_traces_with_cheap_probes(walks, tmp_path, monkeypatch):
    """The trainer's own traces (the init and the step) make no walk: the patch is on. The
    same run without it walks (the parameter initialisers' keys)."""
    config = esco_synthetic.make("simclr", "quick")
    with config.unlocked():
        config.train.epochs = 1
    with monkeypatch.context() as m:
        m.setattr(_tracing, "cheap_sharding_probes", contextlib.nullcontext)
        training.train_and_evaluate(config, str(tmp_path / "without"))
    assert walks
    walks.clear()
    training.train_and_evaluate(config, str(tmp_path / "with"))
    assert walks == []


_GC_PROBE = """
import gc, sys, weakref
from jaxcl import training

def stop(config):  # the first thing main does after its set-up
    print("thresholds", gc.get_threshold(), "frozen", gc.get_freeze_count() > 0)

    class Node:
        pass

    a, b = Node(), Node()
    a.other, b.other = b, a  # a reference cycle: only the cyclic collector frees it
    gone = weakref.ref(a)
    del a, b
    keep = [[] for _ in range(60_000)]  # more live allocations than generation 0 allows
    print("cycle freed", gone() is None, len(keep))
    raise SystemExit(0)

training.validate = stop
sys.argv = ["jaxcl.main", "--config=tests/configs/tiny.py"]
from jaxcl import main
main.run()
"""


def test_the_command_line_collects_garbage_less_often_and_still_frees_cycles():
    import subprocess
    import sys
    from pathlib import Path

    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    out = subprocess.run(
        [sys.executable, "-c", _GC_PROBE],
        cwd=Path(__file__).parents[1],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    assert f"thresholds {_tracing.GC_THRESHOLDS} frozen True" in out, out
    assert "cycle freed True 60000" in out, out


def test_a_runs_jitted_step_traces_with_cheap_probes_outside_the_trainer(walks):
    """``Run.train_step()`` as a benchmark or a user's loop after ``load_run`` calls it,
    outside the trainer's block: its trace makes no walk (the batch norm's running
    averages); the same step function jitted without the wrapper walks."""
    from conftest import tiny_config

    from jaxcl import methods

    config = tiny_config(**{"mesh.data": 1})  # DACL's MLP, batch norm in it
    method = methods.get(config.method.name)(config)
    mesh = training.make_mesh(1)
    with jax.set_mesh(mesh):
        run = training.Run.build(config, method, mesh)
        state = jax.jit(run.init_state, out_shardings=run.shardings)()
        batch = next(iter(run.task.batches(0)))
        key = jax.random.key(0)
        ctx = run.step_context()
        walks.clear()
        jax.jit(training.make_default_train_step(ctx)).trace(state, batch, key)
        assert walks, "this model's step no longer probes .sharding: pick one that does"
        walks.clear()
        step = run.train_step()
        assert step.__name__ == "train_step"  # its name in compile logs and caches
        step.trace(state, batch, key)
        assert walks == []
