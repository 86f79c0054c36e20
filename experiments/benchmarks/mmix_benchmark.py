"""Benchmark: m-Mix's mixing step (memory and time, dense vs blocked vs -wp) and the cost of an
m-Mix epoch relative to its base method (MVGRL) on Cora and Citeseer, and on IMDB-BINARY.

Part 1, the mixing step: value and gradient (with respect to ``z``, ``p_m``, ``p_n``) of
``sum(mp_mix(z, p_m, p_n, ...))`` for ``z`` of ``N x dim`` (``N`` = 2,708, Cora's size, and
20,000, Pubmed's order; ``dim`` 512). Four paths: ``dense`` (one ``N x N`` block, -op),
``blocked`` (-op in row blocks of ``--block-size``, recomputed in the backward pass), ``wp``
(neighbours only: a random symmetric graph with Cora's mean in-degree, 3.9, sparse over its
edges) and ``wp_slabs`` (the same edges laid out as slabs: ``mp_mix(..., slabs=True)``).
Memory is what XLA plans for the compiled function: its temporaries
(``memory_analysis().temp_size_in_bytes``), arguments and outputs apart. Time is the median
of ``--repeats`` calls after one warm-up, each waited for. A path whose planned temporaries
exceed ``--max-run-gib`` is compiled (its plan reported) but not run.

Part 2, the epoch: the trainer's own jitted step (``training.Run.train_step()``) of ``mvgrl``
(MVGRL's config, ``experiments/mvgrl``) and of each m-Mix row of
``jaxcl/configs/mmix_node.py`` (MVGRL's encoders at width 512, the full graph every epoch),
median seconds per epoch over ``--epochs`` after compiling and one warm-up step, and the
ratio to MVGRL's. MVGRL's base step has a corrupted second pass and a bilinear
discriminator; the m-Mix rows have no corruption but an ``N x N`` contrast (Eq. 7), so the
ratio measures the methods as the paper runs them, not the mixing alone (part 1 has that).

Part 3, graph-level epochs: the trainer's step over one whole epoch of IMDB-BINARY's padded
batches (``jaxcl/configs/mmix_graph.py``: one GCN layer of 512 per view, batch 256, the
graphs' PPR diffusion precomputed) for MVGRL's graph objective at that same setup (the base;
``mvgrl_setup`` also MVGRL's own: 4 layers, batch 64) and each m-Mix row (-wp). Epochs 1 ..
``--graph-epochs`` run once untimed (compiling every padding budget they use), then again,
timed (the same batches): the median, with the trainer's at most two steps in flight, and
the compilations counted while timed (0).

Time on a quiet machine: XLA:CPU's threads share the cores with any other job.

Usage (from the repository root; Cora and Citeseer from ``$JAXCL_DATA_DIR`` or
``../shared/data``):

  python experiments/benchmarks/mmix_benchmark.py            # all three parts
  python experiments/benchmarks/mmix_benchmark.py --parts graph   # part 3 only
  python experiments/benchmarks/mmix_benchmark.py --parts graph --graph-rows mvgrl,mp
  python experiments/benchmarks/mmix_benchmark.py --quick    # small N, 2 epochs: a smoke run

Writes mmix_benchmark[_quick][_gpu].json and .png to --out (default
experiments/benchmarks/results), after each part and each row of part 3.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import _common  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[2]
ROWS = ("random", "binary", "mo", "mp_nodiv", "mp")
# Part 3's rows: MVGRL at m-Mix's setup (the base of the ratios), MVGRL's own setup, and the
# m-Mix rows (binary-mix has no graph-level row).
GRAPH_ROWS = ("mvgrl", "mvgrl_setup") + tuple(r for r in ROWS if r != "binary")


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="small sizes and 2 epochs")
    p.add_argument("--sizes", type=int, nargs="+", default=[2708, 20000])
    p.add_argument("--dim", type=int, default=512)
    p.add_argument("--block-size", type=int, default=1024)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--max-run-gib", type=float, default=6.0)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--datasets", nargs="+", default=["cora", "citeseer"])
    p.add_argument("--graph-datasets", nargs="*", default=["imdb_binary"])
    p.add_argument("--graph-epochs", type=int, default=5)
    p.add_argument(
        "--graph-rows",
        default=",".join(GRAPH_ROWS),
        help=f"part 3's rows, comma-separated, mvgrl among them (default {','.join(GRAPH_ROWS)})",
    )
    p.add_argument(
        "--parts", default="mixing,node,graph", help="which parts, comma-separated (default all)"
    )
    p.add_argument("--out", type=pathlib.Path, default=REPO / "experiments/benchmarks/results")
    args = p.parse_args()
    args.graph_rows = [r for r in args.graph_rows.split(",") if r]
    unknown = sorted(set(args.graph_rows) - set(GRAPH_ROWS))
    if unknown or "mvgrl" not in args.graph_rows:
        p.error(
            f"--graph-rows={','.join(args.graph_rows)}: expected rows among "
            f"{','.join(GRAPH_ROWS)}, mvgrl (the base of the ratios) among them"
            + (f"; unknown {unknown}" if unknown else "")
        )
    if args.quick:
        args.sizes, args.dim, args.block_size = [512, 2048], 64, 256
        args.repeats, args.epochs, args.datasets = 2, 2, ["cora"]
        args.graph_datasets, args.graph_epochs = ["mutag"], 1
    return args


def _median_seconds(fn, repeats: int) -> float:
    import jax

    jax.block_until_ready(fn())  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _random_graph(n: int, degree: float, seed: int):
    import numpy as np

    rng = np.random.default_rng(seed)
    m = int(n * degree / 2)
    a, b = rng.integers(0, n, m), rng.integers(0, n, m)
    keep = a != b
    a, b = a[keep], b[keep]
    senders = np.concatenate([a, b]).astype(np.int32)
    receivers = np.concatenate([b, a]).astype(np.int32)
    return senders, receivers


def mixing_step(args) -> list[dict]:
    import jax
    import jax.numpy as jnp
    import numpy as np

    from jaxcl import mixers

    rows = []
    for n in args.sizes:
        rng = np.random.default_rng(0)
        z = jnp.asarray(rng.normal(size=(n, args.dim)), jnp.float32)
        p_m, p_n = jnp.asarray(rng.normal(size=(2, args.dim, args.dim)) / args.dim**0.5)
        senders, receivers = _random_graph(n, 3.9, 1)
        paths = {
            "dense": dict(),
            "blocked": dict(block_size=args.block_size),
            "wp": dict(senders=jnp.asarray(senders), receivers=jnp.asarray(receivers)),
            "wp_slabs": dict(
                senders=jnp.asarray(senders), receivers=jnp.asarray(receivers), slabs=True
            ),
        }
        for path, kw in paths.items():

            def loss(z, p, q, kw=kw):
                return jnp.sum(mixers.mp_mix(z, p, q, **kw))

            grad = jax.jit(jax.value_and_grad(loss, argnums=(0, 1, 2)))
            compiled = grad.lower(z, p_m, p_n).compile()
            mem = _common.xla_memory(compiled)
            row = {"n": n, "path": path, "edges": int(senders.size) if "senders" in kw else None}
            row.update(mem or {})
            temp_gib = (mem or {}).get("temp_bytes", 0) / 2**30
            if temp_gib > args.max_run_gib:
                row["seconds"] = None
                row["note"] = f"not run: {temp_gib:.1f} GiB planned > --max-run-gib"
            else:
                args_ = (z, p_m, p_n)
                row["seconds"] = _median_seconds(lambda c=compiled, a=args_: c(*a), args.repeats)
            rows.append(row)
            secs = "not run" if row["seconds"] is None else f"{row['seconds'] * 1e3:9.1f} ms"
            print(
                f"  N={n:6d} {path:8s} temp {row.get('temp_bytes', 0) / 2**20:10.1f} MiB  {secs}",
                flush=True,
            )
    return rows


def _trainer_parts(c, epochs: int):
    """The trainer's own parts for config ``c`` trained ``epochs`` epochs on one device."""
    c.train.epochs = epochs
    return _common.trainer_parts(c)


def epochs(args) -> list[dict]:
    import jax

    from jaxcl.configs import mmix_node, mvgrl_node
    from jaxcl.configs.common import default_data_dir

    rows = []
    for dataset in args.datasets:
        configs = {"mvgrl": mvgrl_node.make(dataset)}
        configs.update({row: mmix_node.make(row, dataset) for row in ROWS})
        base = None
        for row, c in configs.items():
            c.data.data_dir = c.data.data_dir or default_data_dir("planetoid") or ""
            run, state, step, mesh = _trainer_parts(c, args.epochs + 1)
            with jax.set_mesh(mesh):
                graph = run.task.place(next(iter(run.task.batches(0))))
                key = jax.random.key(0)
                state, _ = step(state, graph, key)  # compile + warm-up
                jax.block_until_ready(state)
                times = []
                for i in range(args.epochs):
                    start = time.perf_counter()
                    state, metrics = step(state, graph, jax.random.fold_in(key, i))
                    jax.block_until_ready(state)
                    times.append(time.perf_counter() - start)
            sec = statistics.median(times)
            base = sec if row == "mvgrl" else base
            rows.append({"data": dataset, "row": row, "seconds_per_epoch": sec})
            print(f"  {dataset:9s} {row:9s} {sec * 1e3:9.1f} ms/epoch  {sec / base:5.2f}x MVGRL")
    return rows


def graph_epochs(args, on_row=lambda rows: None) -> list[dict]:
    import jax

    from jaxcl.configs import mmix_graph
    from jaxcl.configs.common import apply_setup

    compiles = {"count": 0}

    def on_event(name, seconds, **kwargs):
        if name == "/jax/core/compile/backend_compile_duration":
            compiles["count"] += 1

    jax.monitoring.register_event_duration_secs_listener(on_event)
    rows = []
    for dataset in args.graph_datasets:
        arg = dataset + (",quick" if args.quick else "")
        base = mmix_graph.make("mvgrl", arg)
        apply_setup(base, mmix_graph.MMIX)  # MVGRL's objective at m-Mix's encoder and batch
        if args.quick:
            apply_setup(base, mmix_graph.QUICK)
        base_sec = None
        for row in [r for r in GRAPH_ROWS if r in args.graph_rows]:  # mvgrl first
            if row == "mvgrl":
                c = base
            else:  # mvgrl_setup: MVGRL's own setup
                c = mmix_graph.make("mvgrl" if row == "mvgrl_setup" else row, arg)
            run, state, step, mesh = _trainer_parts(c, args.graph_epochs + 1)
            task = run.task
            with jax.set_mesh(mesh):
                key = jax.random.key(0)

                def one_epoch(state, epoch, step=step, task=task, key=key):
                    pending = []
                    for batch in task.batches(epoch):
                        state, metrics = step(state, task.place(batch), key)
                        pending.append(metrics)
                        if len(pending) > 2:  # the trainer's steps in flight
                            jax.block_until_ready(pending.pop(0))
                    return jax.block_until_ready(state)

                timed = range(1, args.graph_epochs + 1)
                for epoch in timed:  # untimed: compiles every padding budget they use
                    state = one_epoch(state, epoch)
                compiles["count"] = 0
                times = []
                for epoch in timed:  # the same batches again, timed
                    start = time.perf_counter()
                    state = one_epoch(state, epoch)
                    times.append(time.perf_counter() - start)
            sec = statistics.median(times)
            base_sec = sec if row == "mvgrl" else base_sec
            rows.append(
                {
                    "data": dataset,
                    "row": row,
                    "seconds_per_epoch": sec,
                    "steps_per_epoch": task.steps_per_epoch,
                    "batch_size": c.train.batch_size,
                    "encoder_depth": c.model.encoder_depth,
                    "compilations_during_timing": compiles["count"],
                }
            )
            print(
                f"  {dataset:11s} {row:11s} {sec * 1e3:9.1f} ms/epoch  {sec / base_sec:5.2f}x "
                f"MVGRL ({task.steps_per_epoch} steps of {c.train.batch_size}; "
                f"{compiles['count']} compilations while timed)",
                flush=True,
            )
            on_row(rows)
    return rows


def draw(record: dict, path: pathlib.Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    mix = record["mixing_step"]
    sizes = sorted({r["n"] for r in mix})
    for path_name, marker in (("dense", "o"), ("blocked", "s"), ("wp", "^"), ("wp_slabs", "v")):
        pts = [r for r in mix if r["path"] == path_name]
        axes[0].plot(
            [r["n"] for r in pts],
            [r.get("temp_bytes", 0) / 2**20 for r in pts],
            marker=marker,
            label=path_name,
        )
    axes[0].set(
        xlabel="N (nodes)", ylabel="XLA temporaries (MiB)",
        title="mp-mix value + gradient: planned memory",
    )  # fmt: skip
    if sizes:
        axes[0].set(xscale="log", yscale="log")
        axes[0].set_xticks(sizes, [f"{n:,}" for n in sizes])
        axes[0].minorticks_off()
        axes[0].legend()
    else:
        axes[0].text(0.5, 0.5, "part 1 not run", ha="center", transform=axes[0].transAxes)
        axes[0].set(xticks=[], yticks=[])
    ep = (record.get("epochs") or []) + [
        r for r in record.get("graph_epochs") or [] if r["row"] != "mvgrl_setup"
    ]
    if ep:
        datasets = list(dict.fromkeys(r["data"] for r in ep))
        names = list(dict.fromkeys(r["row"] for r in ep))
        width = 0.8 / len(datasets)
        for k, d in enumerate(datasets):
            mine = {r["row"]: r["seconds_per_epoch"] for r in ep if r["data"] == d}
            xs = [i + k * width for i, n in enumerate(names) if n in mine]
            axes[1].bar(xs, [mine[n] / mine["mvgrl"] for n in names if n in mine], width, label=d)
        axes[1].axhline(1.0, color="gray", lw=0.8)
        axes[1].set_xticks([i + width * (len(datasets) - 1) / 2 for i in range(len(names))])
        axes[1].set_xticklabels(names)
        axes[1].set(ylabel="time per epoch / MVGRL's", title="m-Mix's epoch against MVGRL's")
        axes[1].legend()
    env = record["env"]
    where = f"{env.get('cpu_model', '')} x{env.get('cpu_count', '')}"
    if env.get("platform", "cpu") != "cpu":
        where = env.get("device_kind", env["platform"])
    title = f"{where} | jax {env.get('jax', '')}"
    _common.finish_figure(fig, path, title)


def main() -> None:
    import jax

    args = parse_args()
    env = _common.environment(("jax", "jaxlib", "flax"))
    device = jax.devices()[0]
    env.update(platform=device.platform, device_kind=device.device_kind)
    _common.print_environment(env)
    print(f"# on {device.platform}: {device.device_kind}")
    parts = set(args.parts.split(","))
    unknown = parts - {"mixing", "node", "graph"}
    if unknown:
        raise SystemExit(f"--parts: unknown {sorted(unknown)}; parts: mixing, node, graph")
    record = {"env": env, "mixing_step": []}
    # A GPU run is named after its platform, so that it does not overwrite the CPU figures.
    settings = () if device.platform == "cpu" else (device.platform,)

    def save():  # after each part and each graph row: a run cut short keeps what it measured
        _common.save_record(
            args, "mmix_benchmark", record, lambda p: draw(record, p), settings=settings
        )

    if "mixing" in parts:
        print("part 1: mp-mix value + gradient")
        record["mixing_step"] = mixing_step(args)
        save()
    if "node" in parts:
        print("part 2: seconds per epoch, the trainer's step")
        record["epochs"] = epochs(args)
        save()
    if "graph" in parts and args.graph_datasets:
        print("part 3: seconds per epoch, graph level (padded batches)")
        record["graph_epochs"] = graph_epochs(
            args, on_row=lambda rows: (record.update(graph_epochs=rows), save())
        )


if __name__ == "__main__":
    main()
