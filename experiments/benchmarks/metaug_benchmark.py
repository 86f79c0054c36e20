"""Benchmark: the cost of MetAug's second-order training step against a plain contrastive step
of the same encoders, in time and in memory.

Four steps of one setting, each built as the trainer builds it (config from
``jaxcl/configs/metaug_images.py``, ``method.build`` at the config's compute dtype,
``nnx.split``, ``method.optimizer`` on ``optim.make_schedule`` of ``config.optim``,
``TrainState.create`` with ``method.init_extra``, ``training.StepContext``), jitted with
``donate_argnums=0``:

  split_simclr   the default step (``make_default_train_step``) of SimCLR's NT-Xent on the
                 view-specific encoders (row ``simclr``);
  metaug_oucl    the default step of MetAug (only OUCL): the same encoders, OUCL against the
                 batch and the memory queues (row ``oucl``);
  metaug_plain   the default first-order step on MetAug's own loss ``L_MetAug`` (Eq. 11),
                 the same model with its generators and both optimisers (row ``metaug``): the
                 plain contrastive step of the same encoders that MetAug's step compares with;
  metaug         MetAug's own step, ``method.make_train_step(ctx)``: the encoders' update and
                 the generators' second-order update through the fast weights (row
                 ``metaug``).

The queues start full (random l2-normalised rows enqueued until filled), so that all
``queue_size`` negatives per view take part from the first timed step. XLA:CPU convolutions
on Eigen (``training.eigen_cpu_convolutions()``, as the trainer does by default, before JAX's
backend exists); host-memory reuse off (the MetAug configs' setting). All four steps live in
one process: each is built, compiled and warmed up (``--warmup`` steps), then they are timed
in ``--steps`` interleaved rounds of one step each, so that a change of the machine's load
(a shared 2-core machine) hits them alike; each step is waited for
(``jax.block_until_ready``). Time: the median and the interquartile range of the per-step
seconds, on uint8 random images of the setting's shape. Memory: what XLA plans for the
compiled step (arguments + outputs - donated aliases + temporaries, ``_common.xla_memory``),
the process's peak RSS after each step's compile and warm-up (cumulative: the states of
the steps built before stay alive), and each step's own peak RSS, measured in a process of
its own that imports, builds, compiles and warms up that step alone (``--no-isolated-memory``
skips it). Also XLA's flop count of each compiled step
(``cost_analysis``) and the 1-minute load average after each round.

Settings (``--setting``): ``cpu`` (default): ``make(row, 'cpu')``, Fashion-MNIST's 28x28x1,
two gray views, split AlexNet at width 0.25, generators of width 512, batch 64, queue 4096;
``cifar10``: ``make(row, 'cifar10')``, the paper's scale: 32x32x3, three views (L, ab, RGB),
split AlexNet (fc) at width 1.0, generators of width 2048, batch 64, queue 4096.

Usage (from the repository root):

  python experiments/benchmarks/metaug_benchmark.py                                  # cpu
  python experiments/benchmarks/metaug_benchmark.py --setting cifar10 --steps 5 --warmup 1
  python experiments/benchmarks/metaug_benchmark.py --quick       # 3 timed steps, 1 warm-up

Writes metaug_benchmark[_quick][_cifar10].json and .png to --out (default: results/ here).

In Algorithm 1's order (since commit 11415b3 the generators' step starts from the encoders'
updated weights: one forward and backward pass more), ``cpu`` setting, 2 AMD EPYC Zen 3 cores,
2026-11-29: 222.3 against 77.1 ms, 2.88x the plain step, XLA's flops 3.64x
(``results/metaug_benchmark_zen3.json``); the cifar10 ratio was not remeasured in this order.
The tables and ratios below are from before 11415b3 (both updates from one gradient at theta_t).

Measured on 2 cores of an AMD EPYC (XLA:CPU, jax 0.10.2). ms/step median (IQR), XLA's planned
MiB, each step's peak RSS in a process of its own ("alone"):

  cpu (20 steps after 3; 2026-11-25, commit 15c5bca, quiet machine: 1-minute load 1.6 while
  timed; 52 s timed run, 114 s with the memory workers)
                            ms/step         / plain  GFLOP   XLA MiB  (temp)   alone MiB
    split_simclr              55.1 (2.8)     0.87     1.76     63.4    (53.2)     938
    metaug_oucl               54.5 (1.5)     0.86     2.05     67.9    (53.7)    1001
    metaug_plain              63.6 (1.8)     1.00     2.99     82.6    (59.3)    1040
    metaug                   143.0 (4.0)     2.25     8.05    137.7   (114.4)    1311
  cifar10 (5 steps after 1; 2026-11-24, commit 4424196, the machine shared with another job:
  1-minute load 3.5-4.1, absolute times about 2x a quiet machine's, the ratios steady)
    split_simclr            1189.9 (123)     0.88    52.77    641.8   (381.1)
    metaug_oucl             1278.9 (191)     0.95    53.73    649.3   (382.6)
    metaug_plain            1348.9 (133)     1.00    62.14    856.3   (427.2)
    metaug                  3789.8 (1005)    2.81   166.52   1339.5   (910.3)

MetAug's step: 2.25x the plain step on ``cpu`` (2.62x only OUCL's), 2.81x on ``cifar10``
(2.96x), within the target of <= 3x (a second-order step costs ~2x at least); its flops are
2.7x the plain step's in both. Its 5 cifar10 steps are noisy (4.6 s falling to 3.2 s); 15
after 3 (load 4.0-4.7): 3302 vs 1384 ms, 2.39x. Peak RSS of the whole cifar10 run (all four
steps in one process) 3.84 GiB. ~35% of XLA:CPU's time in
both steps was max pooling's backward (select-and-scatter expanded into iotas, a variadic
reduce-window and a scatter; profile of the cpu setting), until AlexNet pooled through
``jaxcl.models.max_pool``. On 2 cores of an Intel Xeon, cpu setting, 2026-11-26, quiet cores
(``results/metaug_benchmark.json`` holds the second run):

                     commit 2338eb7 (nnx.max_pool)   commit eb5b896 (jaxcl max_pool)
    split_simclr              55.5 (3.4)                      34.8 (0.9)
    metaug_oucl               56.7 (1.8)                      35.7 (1.9)
    metaug_plain              68.8 (1.9)                      54.7 (2.6)
    metaug                   151.1 (2.7)  2.20x              127.3 (3.1)  2.33x
"""

from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import _common  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[2]
MIB = 1 << 20
TARGET_RATIO = 3.0
# variant -> (row of metaug_images.make, step): 'default' is make_default_train_step.
VARIANTS = {
    "split_simclr": ("simclr", "default"),
    "metaug_oucl": ("oucl", "default"),
    "metaug_plain": ("metaug", "default"),
    "metaug": ("metaug", "full"),
}
# setting -> (make's arg, image shape, classes, training images: the schedule's epoch)
SETTINGS = {
    "cpu": ("cpu", (28, 28, 1), 10, 60_000),
    "cifar10": ("cifar10", (32, 32, 3), 10, 50_000),
}


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--setting", choices=sorted(SETTINGS), default="cpu")
    p.add_argument("--steps", type=int, default=20, help="timed steps per variant")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps after compiling")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="3 timed steps, 1 warm-up")
    p.add_argument("--out", type=pathlib.Path, default=REPO / "experiments/benchmarks/results")
    p.add_argument(
        "--no-isolated-memory",
        dest="isolated_memory",
        action="store_false",
        help="skip measuring each step's peak RSS in a process of its own",
    )
    p.add_argument("--memory-of", choices=sorted(VARIANTS), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.quick:
        args.steps, args.warmup = 3, 1
    if args.steps < 2:  # the spread is the steps' quartiles
        p.error(f"--steps must be >= 2, got {args.steps}")
    return args


# --------------------------------------------------------------------------------------------
# The steps


def prepare(name: str, args):
    """Builds, compiles and warms up one variant's step; returns its description, a function
    that takes one step and waits for it, and the dict that holds its state and metrics."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from flax import nnx

    from jaxcl import methods, models, optim, training
    from jaxcl.configs import metaug_images
    from jaxcl.methods import enqueue

    row, kind = VARIANTS[name]
    arg, shape, classes, train_size = SETTINGS[args.setting]
    config = metaug_images.make(row, arg)
    training.validate(config)
    batch_size = config.train.batch_size
    method = methods.get(config.method.name)(config)
    spec = methods.DataSpec("image", shape[-1], classes, image_shape=shape)
    steps_per_epoch = train_size // batch_size
    total_steps = steps_per_epoch * config.train.epochs
    method.total_steps = total_steps  # as training.Run.build
    model = models.set_compute_dtype(
        method.build(spec, nnx.Rngs(config.seed)), config.model.compute_dtype
    )
    o = config.optim
    schedule = optim.make_schedule(
        o.schedule,
        peak=o.lr,
        total_steps=total_steps,
        warmup_steps=round(o.warmup_epochs * steps_per_epoch),
    )
    tx = method.optimizer(schedule)
    extra = method.init_extra(model, jax.random.key(args.seed + 1))
    if "queues" in extra:  # fill every queue: all its rows are negatives from the first step
        rng = np.random.default_rng(args.seed + 2)
        filled = []
        for q in extra["queues"]:
            rows = rng.standard_normal(q["keys"].shape).astype(np.float32)
            rows /= np.linalg.norm(rows, axis=1, keepdims=True)
            for chunk in np.split(rows, rows.shape[0] // batch_size):
                q = enqueue(q, jnp.asarray(chunk))
            filled.append(q)
        extra = {**extra, "queues": filled}
        assert all(int(q["filled"]) == q["keys"].shape[0] for q in filled)
    graphdef, params, model_state = nnx.split(model, nnx.Param, ...)
    state = training.TrainState.create(params, model_state, tx, extra=extra)
    num_params = sum(x.size for x in jax.tree.leaves(params))
    ctx = training.StepContext(method, graphdef, tx, schedule, config)
    step_fn = (
        method.make_train_step(ctx) if kind == "full" else training.make_default_train_step(ctx)
    )
    train_step = jax.jit(step_fn, donate_argnums=0)
    rng = np.random.default_rng(args.seed)
    images = rng.integers(0, 256, (batch_size, *shape), np.uint8)
    batch = methods.Batch(x=jnp.asarray(images), y=jnp.zeros((batch_size,), jnp.int32))
    key = jax.random.key(args.seed)

    start = time.perf_counter()
    compiled = train_step.lower(state, batch, key).compile()
    compile_s = time.perf_counter() - start
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, list | tuple) else cost
    carry = {"state": state, "metrics": None}

    def step() -> None:
        carry["state"], carry["metrics"] = compiled(carry["state"], batch, key)
        jax.block_until_ready(carry)

    for _ in range(args.warmup):
        step()
    info = {
        "method": config.method.name,
        "row": row,
        "step": kind,
        "batch": batch_size,
        "image_shape": list(shape),
        "views": config.method.views,
        "queue_size": config.method.get("queue_size"),
        "model": config.model.to_dict(),
        "num_params": int(num_params),
        "compile_s": compile_s,
        "xla": _common.xla_memory(compiled),
        "flops": float(cost.get("flops", float("nan"))) if cost else float("nan"),
        # Monotone: the process's peak so far, after this variant's compile and warm-up.
        "peak_rss_after_warmup_bytes": _common.peak_rss_bytes(),
    }
    return info, step, carry


def isolated_peak_rss(args) -> dict[str, int]:
    """Each variant's peak RSS in a process of its own (imports, build, compile, warm-up),
    so that no other step's state counts: ``{variant: bytes}``."""
    flags = ["--setting", args.setting, "--warmup", str(args.warmup), "--seed", str(args.seed)]
    peaks = {}
    for name in VARIANTS:
        out = _common.run_worker(__file__, [*flags, "--memory-of", name], f"{name} memory")
        peaks[name] = out["peak_rss_bytes"]
        print(f"  {name}: peak RSS {peaks[name] / MIB:.0f} MiB in a process of its own")
    return peaks


def memory_worker(args) -> None:
    """``--memory-of NAME``: build, compile and warm up one variant, print its peak RSS."""
    import json

    from jaxcl import training

    training.eigen_cpu_convolutions()
    prepare(args.memory_of, args)
    print(json.dumps({"peak_rss_bytes": _common.peak_rss_bytes()}))


def measure(args) -> tuple[dict, dict]:
    """All variants: built one after the other, then timed in interleaved rounds (one step of
    each per round), so that a change of the machine's load hits them alike."""
    from jaxcl import training

    eigen = training.eigen_cpu_convolutions()  # before JAX's backends exist, as the trainer
    import jax

    rss_after_imports = _common.peak_rss_bytes()
    results, steps, carries = {}, {}, {}
    for name in VARIANTS:
        results[name], steps[name], carries[name] = prepare(name, args)
        r = results[name]
        print(f"  {name}: compiled in {r['compile_s']:.1f} s, {r['flops'] / 1e9:.2f} GFLOP")
    seconds = {name: [] for name in VARIANTS}
    loads = [os.getloadavg()[0]]
    for _ in range(args.steps):
        for name, step in steps.items():
            start = time.perf_counter()
            step()
            seconds[name].append(time.perf_counter() - start)
        loads.append(os.getloadavg()[0])
    for name, r in results.items():
        s = seconds[name]
        q1, _, q3 = statistics.quantiles(s, n=4, method="inclusive")
        metrics = carries[name]["metrics"]
        r.update(
            median_s=statistics.median(s),
            q1_s=q1,
            q3_s=q3,
            iqr_s=q3 - q1,
            min_s=min(s),
            all_s=s,
            final_loss=float(metrics["loss"]),
            metrics={k: float(v) for k, v in metrics.items()},
            nonfinite_step=int(carries[name]["state"].nonfinite_step),
        )
    device = jax.devices()[0]
    run = {
        "device": f"{device.platform}: {device.device_kind} ({device}) x {jax.device_count()}",
        "eigen_cpu_convolutions": bool(eigen),
        # 1-minute load average after each round (this process's own threads count too)
        "load_average_per_round": loads,
        "rss_after_imports_bytes": rss_after_imports,
        "peak_rss_bytes": _common.peak_rss_bytes(),
    }
    return results, run


# --------------------------------------------------------------------------------------------
# Driver


def plot(results: dict, rss_after_imports: int, path: pathlib.Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(results)
    colors = [f"C{i}" for i in range(len(names))]
    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(11, 4.4))
    med = [results[n]["median_s"] * 1e3 for n in names]
    err = [[(r["median_s"] - r["q1_s"]) * 1e3 for r in results.values()]]
    err.append([(r["q3_s"] - r["median_s"]) * 1e3 for r in results.values()])
    bars = ax_t.bar(names, med, yerr=err, capsize=4, color=colors)
    plain = results["metaug_plain"]["median_s"] * 1e3
    for bar, m, up in zip(bars, med, err[1], strict=True):
        ax_t.annotate(
            f"{m / plain:.2f}x", (bar.get_x() + bar.get_width() / 2, m + up), ha="center",
            va="bottom", fontsize=8, xytext=(0, 3), textcoords="offset points",
        )  # fmt: skip
    ax_t.axhline(TARGET_RATIO * plain, color="red", ls="--", lw=1, label="3x metaug_plain")
    ax_t.set_ylabel("ms / step (median, IQR bars)")
    ax_t.set_title("training step (labels: ratio to metaug_plain)", fontsize=9)
    ax_t.legend(fontsize=8)
    x = range(len(names))
    width = 0.27
    xla = [(results[n]["xla"] or {}).get("total_bytes", 0) / MIB for n in names]
    rss = [results[n]["peak_rss_after_warmup_bytes"] / MIB for n in names]
    base = [rss_after_imports / MIB] * len(names)
    ax_m.bar([i - width for i in x], xla, width, color=colors, label="XLA planned total")
    ax_m.bar(x, base, width, color="lightgray", label="RSS after imports")
    ax_m.bar(
        x, [r - b for r, b in zip(rss, base, strict=True)], width, bottom=base,
        color=colors, alpha=0.4, hatch="//", label="peak RSS so far, after this\nstep's "
        "compile + warm-up",
    )  # fmt: skip
    if all("isolated_peak_rss_bytes" in results[n] for n in names):
        alone = [results[n]["isolated_peak_rss_bytes"] / MIB for n in names]
        ax_m.bar(
            [i + width for i in x], alone, width, color=colors, alpha=0.7, hatch="..",
            label="peak RSS of the step\nin a process of its own",
        )  # fmt: skip
    ax_m.set_xticks(list(x), names)
    ax_m.set_ylabel("MiB")
    ax_m.set_title("memory per step", fontsize=9)
    ax_m.legend(fontsize=8)
    for ax in (ax_t, ax_m):
        ax.grid(True, axis="y", alpha=0.3)
        ax.tick_params(axis="x", labelsize=8)
    _common.finish_figure(fig, path, title)


def main() -> None:
    args = parse_args()
    if args.memory_of:
        memory_worker(args)
        return
    env = _common.environment(("jax", "jaxlib", "flax", "optax"))
    _common.print_environment(env)
    command = " ".join(["python", *sys.argv])
    print(
        f"# {command}\n# setting {args.setting}: median of {args.steps} steps after "
        f"{args.warmup} warm-up, the variants' steps interleaved"
    )
    isolated, isolated_error = {}, None
    if args.isolated_memory:  # first: a failing worker costs no timings
        try:
            isolated = isolated_peak_rss(args)
        except RuntimeError as err:
            isolated_error = str(err)
            print(f"  each step's own peak RSS not measured: {err}")
    start = time.perf_counter()
    results, run = measure(args)
    wall_s = time.perf_counter() - start  # the timed run, without the memory workers
    for name, peak in isolated.items():
        results[name]["isolated_peak_rss_bytes"] = peak
    if isolated_error:
        run["isolated_memory_error"] = isolated_error
    first = results["metaug"]
    env.update(command=command, **run)
    loads = run["load_average_per_round"]
    print(
        f"# device {run['device']}; batch {first['batch']}, images {first['image_shape']}, "
        f"views {first['views']}, queue {first['queue_size']}; Eigen convolutions "
        f"{run['eigen_cpu_convolutions']}; 1-min load during the rounds {min(loads):.2f}-"
        f"{max(loads):.2f}"
    )

    plain = results["metaug_plain"]["median_s"]
    oucl = results["metaug_oucl"]["median_s"]
    header = (
        f"\n{'step':<14} | {'ms/step':>9} {'IQR ms':>8} | {'/ plain':>7} {'/ oucl':>7} | "
        f"{'GFLOP':>7} | {'XLA MiB':>8} {'temp MiB':>8} {'RSS MiB':>8} {'alone':>7} | "
        f"{'params':>9}"
    )
    print(header)
    print("-" * (len(header) - 1))
    for name, r in results.items():
        xla = r["xla"] or {}
        print(
            f"{name:<14} | {r['median_s'] * 1e3:9.1f} {r['iqr_s'] * 1e3:8.1f} | "
            f"{r['median_s'] / plain:7.2f} {r['median_s'] / oucl:7.2f} | "
            f"{r['flops'] / 1e9:7.2f} | {xla.get('total_bytes', 0) / MIB:8.1f} "
            f"{xla.get('temp_bytes', 0) / MIB:8.1f} "
            f"{r['peak_rss_after_warmup_bytes'] / MIB:8.1f} "
            f"{r.get('isolated_peak_rss_bytes', float('nan')) / MIB:7.0f} | "
            f"{r['num_params']:9,d}"
        )
    full = results["metaug"]
    ratios = {
        "full_over_plain": full["median_s"] / plain,
        "full_over_oucl": full["median_s"] / oucl,
        "plain_over_oucl": plain / oucl,
        "oucl_over_split_simclr": oucl / results["split_simclr"]["median_s"],
        "flops_full_over_plain": full["flops"] / results["metaug_plain"]["flops"],
    }
    status = "PASS" if ratios["full_over_plain"] <= TARGET_RATIO else "FAIL"
    target = {
        "target": f"MetAug's step <= {TARGET_RATIO:g}x the plain step (metaug_plain)",
        "status": status,
        "detail": f"{ratios['full_over_plain']:.2f}x (flops {ratios['flops_full_over_plain']:.2f}x)"
        f"; {ratios['full_over_oucl']:.2f}x metaug_oucl",
    }
    print(f"\n[{status}] {target['target']}: {target['detail']}")
    print(
        "RSS: the process's peak so far after each step's compile and warm-up (the states "
        f"before it stay alive); after imports {run['rss_after_imports_bytes'] / MIB:.0f} MiB, "
        f"peak at the end {run['peak_rss_bytes'] / MIB:.0f} MiB; 'alone': the step's peak "
        "in a process of its own (imports, build, compile, warm-up)"
    )
    print(f"wall time of the run: {wall_s:.0f} s")

    record = {
        "env": env,
        "setting": args.setting,
        "wall_s": wall_s,
        "results": results,
        "ratios": ratios,
        "targets": [target],
    }
    title = (
        f"MetAug step cost, setting {args.setting} (batch {first['batch']}, "
        f"{'x'.join(map(str, first['image_shape']))}, views {first['views']}, queue "
        f"{first['queue_size']}), median of {args.steps} interleaved\n{env['cpu_model']} "
        f"({env['cpu_count']} cores, 1-min load {min(loads):.1f}-{max(loads):.1f} while timed), "
        f"jax {env['jax']}, {env['date'][:10]}"
    )
    _common.save_record(
        args,
        "metaug_benchmark",
        record,
        lambda path: plot(results, run["rss_after_imports_bytes"], path, title),
        settings=() if args.setting == "cpu" else (args.setting,),
    )


if __name__ == "__main__":
    main()
