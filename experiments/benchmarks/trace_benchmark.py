"""Benchmark: how long JAX takes to trace SimCLR's init and training step (ResNet-18/50),
with and without ``jaxcl._tracing.cheap_sharding_probes``.

Tracing is the Python half of a run's start-up (compilation is the other): building the
model under a trace, then tracing the step. flax NNX probes ``value.sharding`` on every
variable write (each key an ``nnx.Rngs`` stream hands out, each batch-norm update), and on a
tracer JAX answers that probe by walking everything traced so far: tracing becomes
quadratic in the model's size (see ``jaxcl/_tracing.py``). The trainer traces under
``cheap_sharding_probes``; this script times both ways on the trainer's own pieces:

- init: ``jax.make_jaxpr`` of building the model and its train state (LARS), as
  ``training.Run.build`` does;
- step: ``jax.jit(step).trace(state, batch, key)`` of the default training step, SimCLR's
  augmentations included (``make_default_train_step``), not compiled.

Each is timed ``--repeats`` times, alternating the two ways, and the fastest kept. The
number of equations in each jaxpr is reported too (the same both ways: the patch changes
no traced computation).

Usage (from the repository root)::

  python experiments/benchmarks/trace_benchmark.py               # ResNet-18 and -50
  python experiments/benchmarks/trace_benchmark.py --depths 18 --repeats 1   # quick

Writes trace_benchmark.json and .png to --out (default experiments/benchmarks/results).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import pathlib
import time

import _common  # experiments/benchmarks/_common.py: the script's folder is on sys.path

DEFAULT_OUT = pathlib.Path(__file__).resolve().parent / "results"
IMAGE_SIZE, BATCH = 32, 8  # tracing does not depend on the batch's size


def _pieces(depth: int):
    import jax
    import jax.numpy as jnp
    import numpy as np
    from flax import nnx

    from jaxcl import methods, models, training

    config = training.base_config("cifar10", "simclr", optimizer="lars")
    config.model.update(resnet_depth=depth, resnet_stem="cifar", base_width=0)
    config.train.batch_size = BATCH
    training.validate(config)
    method = methods.get("simclr")(config)
    spec = methods.DataSpec("image", 3, 10, image_shape=(IMAGE_SIZE, IMAGE_SIZE, 3))
    schedule = lambda step: 0.1  # noqa: E731 (the learning rate does not change the trace)
    tx = method.optimizer(schedule)

    def init():
        model = models.set_compute_dtype(method.build(spec, nnx.Rngs(0)), "float32")
        _, params, model_state = nnx.split(model, nnx.Param, ...)
        return training.TrainState.create(params, model_state, tx)

    def graphdef():
        return nnx.graphdef(nnx.eval_shape(lambda: method.build(spec, nnx.Rngs(0))))

    ctx = training.StepContext(method, graphdef(), tx, schedule, config)
    images = np.zeros((BATCH, IMAGE_SIZE, IMAGE_SIZE, 3), np.uint8)
    batch = methods.Batch(x=jnp.asarray(images), y=jnp.zeros((BATCH,), jnp.int32))
    return init, ctx, batch, jax.random.key(0)


def _time_once(depth: int, cheap: bool) -> dict:
    import jax

    from jaxcl import _tracing, training

    scope = _tracing.cheap_sharding_probes() if cheap else contextlib.nullcontext()
    init, ctx, batch, key = _pieces(depth)
    with scope:
        start = time.perf_counter()
        closed, state = jax.make_jaxpr(init, return_shape=True)()
        init_s = time.perf_counter() - start
        step = jax.jit(training.make_default_train_step(ctx))  # a fresh function: no cache
        start = time.perf_counter()
        traced = step.trace(state, batch, key)
        step_s = time.perf_counter() - start
    return {
        "init_seconds": init_s,
        "step_seconds": step_s,
        "init_equations": len(closed.jaxpr.eqns),
        "step_equations": len(traced.jaxpr.jaxpr.eqns),
    }


def _plot(records: list[dict], path: pathlib.Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.6))
    labels, width = [], 0.38
    for i, r in enumerate(records):
        for j, (way, color) in enumerate((("plain", "tab:gray"), ("cheap", "tab:blue"))):
            init, step = r[way]["init_seconds"], r[way]["step_seconds"]
            x = i + (j - 0.5) * width
            ax.bar(x, init, width, color=color, alpha=0.5)
            ax.bar(x, step, width, bottom=init, color=color)
            ax.text(x, init + step, f"{init + step:.1f} s", ha="center", va="bottom", fontsize=8)
        labels.append(f"ResNet-{r['depth']}")
    ax.set_xticks(range(len(records)), labels)
    ax.set_ylabel("tracing time (s): init (light) + step")
    ax.set_title(
        "SimCLR's init and step traced: flax's probes as JAX answers them (grey)\n"
        "and under cheap_sharding_probes (blue)",
        fontsize=9,
    )
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depths", type=int, nargs="+", default=[18, 50])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error(f"--repeats must be >= 1, got {args.repeats}")
    import jax

    start = time.time()
    records = []
    for depth in args.depths:
        runs = {"plain": [], "cheap": []}
        for _ in range(args.repeats):
            for way in runs:
                runs[way].append(_time_once(depth, way == "cheap"))
        record = {"depth": depth}
        for way, times in runs.items():
            record[way] = {
                "init_seconds": min(t["init_seconds"] for t in times),
                "step_seconds": min(t["step_seconds"] for t in times),
                "init_equations": times[0]["init_equations"],
                "step_equations": times[0]["step_equations"],
            }
        if record["plain"]["step_equations"] != record["cheap"]["step_equations"]:
            raise SystemExit(f"ResNet-{depth}: the two ways traced different step programs")
        records.append(record)
        p, c = record["plain"], record["cheap"]
        print(
            f"ResNet-{depth}: init {p['init_seconds']:.2f} -> {c['init_seconds']:.2f} s "
            f"({p['init_equations']} equations), step {p['step_seconds']:.2f} -> "
            f"{c['step_seconds']:.2f} s ({p['step_equations']} equations)",
            flush=True,
        )
    env = {
        "cpu": _common.cpu_model(),
        "cpu_signature": _common.cpu_signature(),
        "commit": _common.git_commit(),
        "jax": jax.__version__,
        "platform": jax.devices()[0].platform,
        "wall_seconds": time.time() - start,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "trace_benchmark.json"
    path.write_text(json.dumps({"env": env, "records": records}, indent=1) + "\n")
    _plot(records, args.out / "trace_benchmark.png")
    print(f"wrote {path} and {path.with_suffix('.png')} ({env['wall_seconds']:.0f} s)")


if __name__ == "__main__":
    main()
