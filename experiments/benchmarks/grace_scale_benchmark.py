"""GRACE against ESCo-GRACE (RFF, SORF) at Pubmed's size: time per epoch and peak memory.

ESCo's Table 2 reports, on Pubmed (19,717 nodes) and a GPU, GRACE at 842 s / 14.5 GB for its
1500 epochs against ESCo-RFF's 204 s / 3.8 GB and ESCo-SORF's 259 s / 4.1 GB. Pubmed's files
are not here, so each row trains on a random graph of Pubmed's size
(:func:`jaxcl.data.synthetic_planetoid`; the node counts, edges, features and nonzeros of the
real one, random labels) with the config ``experiments/grace/pubmed.py`` (ESCo's Table 4:
d_e = d_p = 256, tau = 0.7, D = 1024, lambda 1.5).

Each row runs in its own subprocess: the trainer's node task and its jitted step
(``training.Run.train_step()``), one full-graph step per epoch. It reports XLA's plan for the
compiled step (arguments + outputs + temporaries), the process's peak resident memory, and the
median time per epoch over ``--epochs`` epochs after ``--warmup`` (and after compiling); the
whole-run figure is that median times the config's epochs (1500 for Pubmed; training time
only, as the paper's). A row whose
XLA plan needs more than ``--memory-limit-gib`` is compiled but not run.

Rows: ``grace`` (the exact loss over the 2N x 2N similarities, what GRACE computes) and
``grace_esco`` with ``rff`` / ``sorf``.

Usage (from the repository root):

  python experiments/benchmarks/grace_scale_benchmark.py            # 5 timed epochs per row
  python experiments/benchmarks/grace_scale_benchmark.py --quick    # Cora's size, 2 epochs

Writes grace_scale_benchmark[_quick].json and .png to --out (default
experiments/benchmarks/results).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import time

import _common  # experiments/benchmarks/_common.py: the script's folder is on sys.path

DEFAULT_OUT = pathlib.Path(__file__).resolve().parent / "results"
ROWS = ("grace", "rff", "sorf")
PAPER = {"grace": (842.3, 14.5), "rff": (203.9, 3.8), "sorf": (259.2, 4.1)}  # s, GB (Table 2)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", nargs="+", choices=ROWS, default=list(ROWS))
    parser.add_argument("--dataset", default="pubmed", choices=["cora", "citeseer", "pubmed"])
    parser.add_argument("--epochs", type=int, default=5, help="timed epochs per row")
    parser.add_argument("--warmup", type=int, default=1, help="untimed epochs after compiling")
    parser.add_argument("--memory-limit-gib", type=float, default=20.0)
    parser.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT)
    parser.add_argument("--quick", action="store_true", help="Cora's size, 2 timed epochs")
    parser.add_argument("--worker", choices=ROWS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.dataset, args.epochs = "cora", 2
    return args


def worker(args) -> dict:
    import jax

    from jaxcl import methods, training
    from jaxcl.configs import grace_node

    config = grace_node.make(args.dataset, None if args.worker == "grace" else args.worker)
    config.data.synthetic = True
    config.mesh.data = 1
    training.validate(config)
    training.reuse_host_memory()  # as the trainer does for this config (reuse_host_memory)
    method = methods.get(config.method.name)(config)
    mesh = training.make_mesh(1)
    with jax.set_mesh(mesh):
        run = training.Run.build(config, method, mesh)
        graph = run.task.place(next(iter(run.task.batches(0))))
        state = jax.jit(run.init_state, out_shardings=run.shardings)()
        train_step = run.train_step()
    key = jax.random.key(0)
    start = time.perf_counter()
    compiled = train_step.lower(state, graph, key).compile()
    compile_s = time.perf_counter() - start
    xla = _common.xla_memory(compiled)
    result = {
        "row": args.worker,
        "graph": run.task.describe(),
        "config_epochs": config.train.epochs,
        "compile_s": compile_s,
        "xla": xla,
    }
    if xla is not None and xla["total_bytes"] > args.memory_limit_gib * _common.GIB:
        result["skipped"] = (
            f"XLA plans {xla['total_bytes'] / _common.GIB:.1f} GiB > {args.memory_limit_gib} GiB"
        )
        return result
    seconds = []
    for epoch in range(args.warmup + args.epochs):
        start = time.perf_counter()
        state, metrics = compiled(state, graph, jax.random.fold_in(key, epoch))
        jax.block_until_ready((state, metrics))
        if epoch >= args.warmup:
            seconds.append(time.perf_counter() - start)
    result.update(
        seconds_per_epoch=statistics.median(seconds),
        all_seconds=seconds,
        loss=float(metrics["loss"]),
        peak_rss_bytes=_common.peak_rss_bytes(),
    )
    return result


def plot(results, path: pathlib.Path, args) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ran = [r for r in results if "seconds_per_epoch" in r]
    names = [r["row"] for r in ran]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.8))
    epochs = ran[0]["config_epochs"]
    axes[0].bar(names, [epochs * r["seconds_per_epoch"] for r in ran], color="C0")
    axes[0].set_ylabel(f"training time for {epochs} epochs (s, extrapolated)")
    axes[1].bar(names, [r["peak_rss_bytes"] / _common.GIB for r in ran], color="C1", label="RSS")
    axes[1].plot(names, [r["xla"]["total_bytes"] / _common.GIB for r in ran], "kD", label="XLA")
    axes[1].set_ylabel("peak memory (GiB)")
    axes[1].legend(fontsize=8)
    for ax in axes:
        ax.grid(True, axis="y", alpha=0.3)
    _common.finish_figure(
        fig, path, f"GRACE vs ESCo-GRACE, random graph of {args.dataset}'s size, CPU"
    )


def main() -> None:
    args = parse_args()
    if args.worker:
        print(json.dumps(worker(args)), flush=True)
        return
    env = _common.environment(("jax", "jaxlib"))
    _common.print_environment(env)
    flags = [
        f"--dataset={args.dataset}",
        f"--epochs={args.epochs}",
        f"--warmup={args.warmup}",
        f"--memory-limit-gib={args.memory_limit_gib}",
    ]
    print(
        f"{'row':<6} {'s/epoch':>8} {'run s':>9} {'paper s':>8} | {'RSS GiB':>8} "
        f"{'XLA GiB':>8} {'paper GB':>8}   (run s: s/epoch x the config's epochs; paper: "
        "ESCo Table 2, Pubmed)"
    )
    results = []
    for row in args.rows:
        r = _common.run_worker(__file__, [*flags, f"--worker={row}"], row)
        results.append(r)
        xla = r["xla"]["total_bytes"] / _common.GIB if r.get("xla") else float("nan")
        paper_s, paper_gb = PAPER[row] if args.dataset == "pubmed" else (float("nan"),) * 2
        if "skipped" in r:
            print(f"{row:<6} skipped: {r['skipped']}")
            continue
        print(
            f"{row:<6} {r['seconds_per_epoch']:8.3f} "
            f"{r['config_epochs'] * r['seconds_per_epoch']:9.0f} "
            f"{paper_s:8.1f} | {r['peak_rss_bytes'] / _common.GIB:8.2f} {xla:8.2f} "
            f"{paper_gb:8.1f}",
            flush=True,
        )
    print(f"graph: {results[0]['graph']}")
    record = {"env": env, "results": results, "paper": PAPER}
    _common.save_record(args, "grace_scale_benchmark", record, lambda p: plot(results, p, args))


if __name__ == "__main__":
    main()
