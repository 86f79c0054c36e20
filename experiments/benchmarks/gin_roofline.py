"""Benchmark: the floor under a DACL-GIN epoch on this machine, set by its matrix products and
Adam's updates alone.

``gin_benchmark.py`` times DACL's GIN pretraining on IMDB-BINARY in jaxcl and in PyTorch
Geometric; the issue asks jaxcl for 1.3x PyG. This script asks how fast *any*
implementation of that epoch could be here. Every implementation that computes the same
float32 gradients has to run the same matrix products: each Linear of the GIN (7 of 512 x
512 per layer stack: two per layer, the first layer's 1 x 512 excepted) on every real node,
each of the head's 3 Linears (2048 x 2048) on both views of every real graph, forward,
input gradient and weight gradient; and every step has to update those 14.4 M parameters
with Adam. Two orders of the same computation: DACL's (the views mixed before the head, as
DACL's code and PyG's side of ``gin_benchmark.py`` run it) and jaxcl's (mixed after the
head's first Linear, which then runs on one row per graph instead of two:
``DACLGraph.loss``; the same values in exact arithmetic). The script

1. counts those products per epoch from the data (real nodes and graphs: no padding), in
   both orders, and checks jaxcl's count against XLA's own flop count of jaxcl's compiled
   gradient on one padded batch (``cost_analysis``, with the padded rows in the count; what
   XLA counts beyond the products is the rest of the step's arithmetic);
2. times each product's three forms (``X @ W``, ``dY @ W.T``, ``X.T @ dY``) at the epoch's
   mean batch shape in each order, in JAX (jit, XLA:CPU's own GEMM) and in PyTorch (``torch.mm``,
   oneDNN / MKL), and one Adam update of the Linears' parameters (optax, state donated;
   ``torch.optim.Adam`` multi-tensor and fused, the faster), each library in its own
   process, the fastest of ``--repeats`` calls (a floor takes what the machine can do; the
   median moved by up to 2x on one product between runs);
3. adds up, product by product, the faster library's time over the epoch, and the faster
   Adam update per step: the **floor** of each order. Batch norm, aggregation, the loss and
   the data pipeline are left out, so no implementation that runs these products and
   updates at the best rates measured here can be faster than the floor (only one that
   computes fewer or cheaper products: lower precision, or reordering the algebra further);
4. reads the epoch times of a ``gin_benchmark.py`` record made on the same CPU (``--record``;
   a record older than jaxcl's order is flagged) and reports the largest speed-up over PyG
   that the lower floor, jaxcl's, leaves, against the issue's 1.3x.

Run it on quiet cores, right after ``gin_benchmark.py`` (its record is the default).

Usage (from the repository root; ``pip install -e '.[bench]'`` for torch):

  python experiments/benchmarks/gin_roofline.py
  python experiments/benchmarks/gin_roofline.py --repeats 30 \
      --record experiments/benchmarks/results/gin_benchmark.json

Writes gin_roofline.json and .png to --out (default experiments/benchmarks/results).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import time

import _common  # experiments/benchmarks/_common.py: the script's folder is on sys.path
from gin_benchmark import TARGET  # the speed-up over PyG, one value for both scripts

HERE = pathlib.Path(__file__).resolve().parent
# The commit from which on DACLGraph.loss mixes after the head's first Linear (jaxcl's order).
JAXCL_ORDER_COMMIT = "13bc3b2"
DEFAULT_OUT = HERE / "results"
DATASET = "imdb_binary"
FORMS = ("forward", "input_grad", "weight_grad")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data-dir",
        type=pathlib.Path,
        default=_common.DEFAULT_DATA,
        help="the folder with tu_gin/",
    )
    parser.add_argument(
        "--record",
        type=pathlib.Path,
        default=DEFAULT_OUT / "gin_benchmark.json",
        help="a gin_benchmark.py record made on this CPU (its jaxcl and PyG epoch times)",
    )
    parser.add_argument("--repeats", type=int, default=30, help="timed calls per product")
    parser.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT)
    parser.add_argument("--torch-threads", type=int, default=os.cpu_count())
    parser.add_argument("--worker", choices=["check", "jax", "torch"], help=argparse.SUPPRESS)
    parser.add_argument("--shapes", help=argparse.SUPPRESS)  # JSON, for the workers
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error(f"--repeats must be at least 1, got {args.repeats}")
    return args


# --------------------------------------------------------------------------------------------
# The products


def linears(model: dict, num_features: int) -> list[dict]:
    """DACL-GIN's Linear layers that the float32 gradient needs: ``(name, rows, K, N)`` with
    ``rows`` ``'nodes'`` (the GIN's) or ``'views'`` (the head's: two rows per graph, one for
    the first Linear in jaxcl's order; see :func:`rows_of`).

    The GIN's first Linear (``num_features`` -> width) is listed too; its input gradient is
    not needed (the input is data)."""
    width, depth = model["encoder_width"], model["encoder_depth"]
    out = []
    for layer in range(depth):
        fan_in = num_features if layer == 0 else width
        out.append({"name": f"gin{layer}.a", "rows": "nodes", "k": fan_in, "n": width})
        out.append({"name": f"gin{layer}.b", "rows": "nodes", "k": width, "n": width})
    sizes = [width * depth] + [model["head_width"]] * (model["head_depth"] - 1)
    sizes.append(model["embed_dim"])
    for i, (k, n) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
        out.append({"name": f"head{i}", "rows": "views", "k": k, "n": n})
    return out


def forms_of(linear: dict) -> tuple[str, ...]:
    """The products a Linear's gradient step runs (no input gradient for the data's)."""
    return ("forward", "weight_grad") if linear["name"] == "gin0.a" else FORMS


# The two orders: DACL's code (and PyG's side of gin_benchmark.py) mixes the graph embeddings
# and runs the whole head on both views; jaxcl's DACLGraph.loss mixes after the head's first
# Linear, which then runs on one row per graph.
ORDERS = ("dacl", "jaxcl")


def rows_of(lin: dict, nodes, graphs, order: str):
    """The rows a Linear runs on in a batch of ``nodes`` nodes and ``graphs`` graphs."""
    if lin["rows"] == "nodes":
        return nodes
    return graphs if (order == "jaxcl" and lin["name"] == "head0") else 2 * graphs


def product_flops(layers: list[dict], nodes, graphs, order: str) -> dict:
    """Flops of every product, ``2 * rows * K * N`` each, summed by part."""
    parts = {"gin": 0.0, "head": 0.0}
    for lin in layers:
        rows = rows_of(lin, nodes, graphs, order)
        part = "gin" if lin["rows"] == "nodes" else "head"
        parts[part] += len(forms_of(lin)) * 2.0 * rows * lin["k"] * lin["n"]
    return parts


def distinct_shapes(layers: list[dict], nodes: int, graphs: int) -> list[list[int]]:
    """The distinct ``[rows, K, N]`` to time (one per Linear shape and rows, both orders)."""
    shapes = {
        (rows_of(lin, nodes, graphs, order), lin["k"], lin["n"])
        for lin in layers
        for order in ORDERS
    }
    return sorted([list(s) for s in shapes])


# --------------------------------------------------------------------------------------------
# Workers: the three forms of each shape, timed in one library


def time_calls(call, repeats: int) -> float:
    """The fastest of ``repeats`` calls of ``call()`` (which waits for its result), in seconds,
    after two warm-up calls."""
    call()
    call()
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - start)
    return min(seconds)


def jax_worker(args) -> dict:
    import jax
    import jax.numpy as jnp

    out = {}
    key = jax.random.key(0)
    shapes = json.loads(args.shapes)
    for rows, k, n in shapes["products"]:
        kx, kw, ky = jax.random.split(jax.random.fold_in(key, rows * k * n), 3)
        x = jax.random.normal(kx, (rows, k), jnp.float32)
        w = jax.random.normal(kw, (k, n), jnp.float32)
        dy = jax.random.normal(ky, (rows, n), jnp.float32)
        fns = {
            "forward": (jax.jit(lambda x, w: x @ w), (x, w)),
            "input_grad": (jax.jit(lambda dy, w: dy @ w.T), (dy, w)),
            "weight_grad": (jax.jit(lambda x, dy: x.T @ dy), (x, dy)),
        }
        out[f"{rows}x{k}x{n}"] = {
            form: time_calls(lambda f=f, a=a: f(*a).block_until_ready(), args.repeats)
            for form, (f, a) in fns.items()
        }
    out["adam"] = jax_adam_seconds(shapes["params"], args.repeats)
    return {"library": f"jax {jax.__version__}", "seconds": out}


def jax_adam_seconds(params: list[list[int]], repeats: int) -> float:
    """One optax Adam update of the Linears' kernels and biases, state donated as in the
    trainer's step."""
    import functools

    import jax
    import jax.numpy as jnp
    import optax

    tree = [(jnp.zeros((k, n)), jnp.zeros((n,))) for k, n in params]
    grads = jax.tree.map(lambda p: jnp.full_like(p, 1e-3), tree)
    opt = optax.adam(1e-3)

    @functools.partial(jax.jit, donate_argnums=(0, 1))
    def update(p, s, g):
        updates, s = opt.update(g, s, p)
        return optax.apply_updates(p, updates), s

    carry = [tree, opt.init(tree)]

    def call():
        carry[:] = update(*carry, grads)
        jax.block_until_ready(carry)

    return time_calls(call, repeats)


def torch_worker(args) -> dict:
    import torch

    torch.set_num_threads(args.torch_threads)
    gen = torch.Generator().manual_seed(0)
    out = {}
    with torch.no_grad():
        shapes = json.loads(args.shapes)
        for rows, k, n in shapes["products"]:
            x = torch.randn(rows, k, generator=gen)
            w = torch.randn(k, n, generator=gen)
            dy = torch.randn(rows, n, generator=gen)
            fns = {
                "forward": lambda x=x, w=w: torch.mm(x, w),
                "input_grad": lambda dy=dy, w=w: torch.mm(dy, w.t()),
                "weight_grad": lambda x=x, dy=dy: torch.mm(x.t(), dy),
            }
            out[f"{rows}x{k}x{n}"] = {form: time_calls(f, args.repeats) for form, f in fns.items()}
    # torch.optim.Adam's multi-tensor and fused implementations; the faster counts.
    params = [torch.zeros(*shape) for k, n in shapes["params"] for shape in ((k, n), (n,))]
    for p in params:
        p.requires_grad_(True)
        p.grad = torch.full_like(p, 1e-3)
    adam = {}
    for variant in ("foreach", "fused"):
        opt = torch.optim.Adam(params, lr=1e-3, **{variant: True})
        adam[variant] = time_calls(opt.step, args.repeats)
    out["adam"] = min(adam.values())
    return {
        "library": f"torch {torch.__version__}",
        "threads": torch.get_num_threads(),
        "adam_variants": adam,
        "seconds": out,
    }


def flop_check(args) -> dict:
    """XLA's flop count of jaxcl's DACL-GIN gradient on one padded batch, beside the products'
    count at that batch's padded rows."""
    import jax
    import numpy as np
    from flax import nnx

    from jaxcl import graphs
    from jaxcl.configs import dacl_graph

    config = dacl_graph.make("dacl_graph", DATASET)
    config.data.data_dir = str(args.data_dir)
    run, state, _, _ = _common.trainer_parts(config)
    method = run.method
    batcher, ds = run.task.train_batcher, run.task.ds
    first = np.arange(config.train.batch_size)
    budget = batcher.budget_for(first)
    batch = graphs.batch_graphs([ds.graphs[i] for i in first], budget)
    graphdef, key = run.graphdef, jax.random.key(0)

    def loss(params, model_state, batch):
        model = nnx.merge(graphdef, params, model_state, copy=True)
        return method.loss(model, batch, key, {})[0]

    grad = jax.jit(jax.value_and_grad(loss))
    compiled = grad.lower(state.params, state.model_state, batch).compile()
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    padded_nodes, padded_graphs = int(budget[0]), int(budget[2])
    layers = linears(config.model.to_dict(), run.task.spec.num_features)
    # Padding rows included; the head's first Linear on each graph row, the rest of the head
    # on both views of each (jaxcl's order, the one compiled here).
    counted = product_flops(layers, padded_nodes, padded_graphs, "jaxcl")
    num_nodes = [g.num_nodes for g in ds.graphs]
    return {
        "model": config.model.to_dict(),
        "num_features": run.task.spec.num_features,
        "num_graphs": len(ds),
        "num_nodes": int(sum(num_nodes)),
        "batch_size": config.train.batch_size,
        "steps_per_epoch": run.task.steps_per_epoch,
        "check_batch": {
            "real_nodes": int(sum(num_nodes[i] for i in first)),
            "padded_nodes": padded_nodes,
            "padded_graphs": padded_graphs,
            "xla_flops": float(cost["flops"]),
            "product_flops": counted["gin"] + counted["head"],
        },
    }


# --------------------------------------------------------------------------------------------
# The floor


def floor(layers: list[dict], timings: dict, nodes: int, graphs: int, steps: int) -> dict:
    """Seconds per epoch, in each order, of every product at the faster library's time for its
    form and shape (``timings``: library -> ``'RxKxN'`` -> form -> seconds at the mean batch),
    and of each step's Adam update of the Linears' parameters at the faster library's time
    (``timings[library]['adam']``), by part."""
    out = {}
    adam = min(t["adam"] for t in timings.values())
    for order in ORDERS:
        parts = {"gin": 0.0, "head": 0.0}
        best = {}
        for lin in layers:
            shape = f"{rows_of(lin, nodes, graphs, order)}x{lin['k']}x{lin['n']}"
            for form in forms_of(lin):
                by_library = {lib: t[shape][form] for lib, t in timings.items()}
                lib = min(by_library, key=by_library.get)
                best[f"{lin['name']}.{form}"] = {"library": lib, "seconds": by_library[lib]}
                parts["gin" if lin["rows"] == "nodes" else "head"] += steps * by_library[lib]
        parts["adam"] = steps * adam
        out[order] = {"seconds": sum(parts.values()), "parts": parts, "products": best}
    return out


def plot(report: dict, path: pathlib.Path, env: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    f, r = report["floor"], report["record"]
    fig, ax = plt.subplots(figsize=(7, 4.4))
    labels = ["floor, DACL's order\n(PyG's side)", "floor, jaxcl's order", "jaxcl", "PyG"]
    for y, parts in enumerate((f["dacl"]["parts"], f["jaxcl"]["parts"])):
        left = 0.0
        for part, color, label in (
            ("gin", "C2", "GIN products"),
            ("head", "C4", "head products"),
            ("adam", "C7", "Adam updates"),
        ):
            ax.barh(y, parts[part], left=left, color=color, label=None if y else label)
            left += parts[part]
    ax.barh(2, r["jaxcl_epoch_s"], color="C0")
    ax.barh(3, r["pyg_epoch_s"], color="C1")
    target = r["pyg_epoch_s"] / TARGET
    ax.axvline(target, color="k", ls="--", lw=1, label=f"PyG / {TARGET} (the issue's target)")
    ax.set_yticks(range(4), labels)
    ax.invert_yaxis()
    ax.set_xlabel("seconds per epoch (1000 graphs)")
    seconds = (
        f["dacl"]["seconds"],
        f["jaxcl"]["seconds"],
        r["jaxcl_epoch_s"],
        r["pyg_epoch_s"],
    )
    for y, s in enumerate(seconds):
        ax.text(s, y, f" {s:.2f} s", va="center", fontsize=8)
    ax.set_xlim(0, 1.15 * max(seconds))
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, fontsize=8)
    ax.grid(True, axis="x", alpha=0.3)
    _common.finish_figure(
        fig,
        path,
        f"DACL-GIN epoch on IMDB-BINARY, {env['cpu_model']} ({env['cpu_count']} cores)\n"
        f"the floors leave at most {report['max_speedup_over_pyg']:.2f}x over PyG; "
        f"jax {env['jax']}, torch {env['torch']}",
    )


def main() -> None:
    start = time.perf_counter()
    args = parse_args()
    if args.worker:
        workers = {"check": flop_check, "jax": jax_worker, "torch": torch_worker}
        result = workers[args.worker](args)
        print(json.dumps(result), flush=True)
        return
    if not args.record.is_file():
        raise SystemExit(
            f"--record {args.record}: no such file; run gin_benchmark.py on this CPU first"
        )
    record = json.loads(args.record.read_text())
    env = _common.environment(("jax", "jaxlib", "torch"))
    made = record["env"]
    # Records older than the CPU signature say only the model name.
    cpu = ("cpu_model", "cpu_signature") if "cpu_signature" in made else ("cpu_model",)
    if any(made[k] != env[k] for k in cpu) or not all(
        str(made.get(side, "")).startswith("cpu") for side in ("jax_device", "torch_device")
    ):
        raise SystemExit(
            f"--record {args.record} was made on {' '.join(made[k] for k in cpu)!r} (jaxcl on "
            f"{made.get('jax_device')!r}, PyG on {made.get('torch_device')!r}); this machine "
            f"is {' '.join(env[k] for k in cpu)!r}: run gin_benchmark.py here first, both "
            "sides on the CPU"
        )
    _common.print_environment(env)
    setup = record["setup"]
    layers = linears(setup["model"], setup["num_features"])
    # The data's counts and XLA's flop count of jaxcl's gradient, in a process of their own.
    flags = [f"--data-dir={args.data_dir}", f"--repeats={args.repeats}"]
    probe = _common.run_worker(__file__, [*flags, "--worker=check"], "check")
    steps, num_graphs = probe["steps_per_epoch"], probe["num_graphs"]
    fields = ("model", "num_graphs", "num_features", "batch_size", "steps_per_epoch")
    differ = [f for f in fields if probe[f] != setup[f]]
    if differ:
        raise SystemExit(
            f"--record {args.record}: its {', '.join(differ)} differ from the DACL Table 4 "
            f"config's ({', '.join(f'{f}={probe[f]!r}' for f in differ)}): run "
            "gin_benchmark.py with its defaults"
        )
    if not _common.is_ancestor(JAXCL_ORDER_COMMIT, made["commit"]):
        print(
            f"# note: the record's commit {made['commit']} does not descend from "
            f"{JAXCL_ORDER_COMMIT} (jaxcl's order): its jaxcl epoch ran DACL's order"
        )
    nodes = round(probe["num_nodes"] / steps)
    graphs = round(num_graphs / steps)
    products = distinct_shapes(layers, nodes, graphs)
    params = [[lin["k"], lin["n"]] for lin in layers]
    shapes = json.dumps({"products": products, "params": params})
    print(
        f"# {num_graphs} graphs, {probe['num_nodes']} nodes, {steps} steps per epoch: products "
        f"timed at the mean batch ({nodes} node rows, {graphs} graphs), fastest of "
        f"{args.repeats} calls"
    )
    timings = {}
    for kind in ("jax", "torch"):
        extra = [f"--torch-threads={args.torch_threads}"] if kind == "torch" else []
        r = _common.run_worker(
            __file__, [*flags, *extra, f"--worker={kind}", f"--shapes={shapes}"], kind
        )
        timings[r["library"]] = r["seconds"]
        if kind == "torch":
            env["torch_threads"] = r["threads"]
    fl = floor(layers, timings, nodes, graphs, steps)
    flops = {o: product_flops(layers, probe["num_nodes"], num_graphs, o) for o in ORDERS}
    check = probe["check_batch"]
    jax_s, pyg_s = record["jaxcl"]["median_epoch_s"], record["pyg"]["median_epoch_s"]
    report = {
        "products_per_epoch_flops": flops,
        "check_batch": check,
        "timings": timings,
        "floor": fl,
        "record": {
            "path": str(args.record),
            "date": record["env"]["date"],
            "commit": record["env"]["commit"],
            "jaxcl_epoch_s": jax_s,
            "pyg_epoch_s": pyg_s,
            "speedup": pyg_s / jax_s,
        },
        "max_speedup_over_pyg_dacl_order": pyg_s / fl["dacl"]["seconds"],
        # jaxcl's order: the lower floor.
        "max_speedup_over_pyg": pyg_s / fl["jaxcl"]["seconds"],
    }

    print(
        f"\nXLA's flop count of jaxcl's gradient on the first batch ({check['real_nodes']} "
        f"real nodes padded to {check['padded_nodes']}, {check['padded_graphs']} graph rows): "
        f"{check['xla_flops'] / 1e9:.2f} GFLOP; the products at those rows "
        f"{check['product_flops'] / 1e9:.2f} GFLOP "
        f"({check['product_flops'] / check['xla_flops']:.1%} of XLA's)"
    )
    print(f"\n{'product':<18} {'rows x K x N':>16} | " + " ".join(f"{lib:>22}" for lib in timings))
    for shape in products:
        name = "x".join(map(str, shape))
        for form in FORMS:
            cells = " ".join(f"{t[name][form] * 1e3:19.2f} ms" for t in timings.values())
            rate = 2 * shape[0] * shape[1] * shape[2] / min(t[name][form] for t in timings.values())
            print(f"{form:<18} {name:>16} | {cells}   best {rate / 1e9:6.1f} GFLOP/s")
    adam = " ".join(f"{lib} {t['adam'] * 1e3:.2f} ms" for lib, t in timings.items())
    print(f"{'Adam update':<18} {sum(k * n + n for k, n in params):>16,} | {adam}")
    print()
    for order, title in (("dacl", "DACL's order"), ("jaxcl", "jaxcl's order")):
        f, p = flops[order], fl[order]["parts"]
        print(
            f"per epoch, {title}: products {(f['gin'] + f['head']) / 1e9:.1f} GFLOP (GIN "
            f"{f['gin'] / 1e9:.1f}, head {f['head'] / 1e9:.1f}); floor "
            f"{fl[order]['seconds']:.3f} s (GIN products {p['gin']:.3f}, head products "
            f"{p['head']:.3f}, Adam {p['adam']:.3f})"
        )
    print(
        f"record {args.record.name} ({made['date']}, commit {made['commit']}): jaxcl "
        f"{jax_s:.3f} s per epoch (jaxcl's floor {fl['jaxcl']['seconds'] / jax_s:.0%} of it), "
        f"PyG {pyg_s:.3f} s (DACL's floor {fl['dacl']['seconds'] / pyg_s:.0%} of it); jaxcl "
        f"{pyg_s / jax_s:.2f}x PyG"
    )
    best = report["max_speedup_over_pyg"]
    print(
        f"\nthe lower floor leaves at most {best:.2f}x over PyG on this CPU (DACL's order: "
        f"{report['max_speedup_over_pyg_dacl_order']:.2f}x); the issue asks {TARGET}x: "
        + (
            "reachable in principle"
            if best >= TARGET
            else "out of reach of any implementation "
            "that runs these products and Adam updates in float32 at the rates measured here"
        )
    )
    report["wall_s"] = time.perf_counter() - start
    print(f"({report['wall_s']:.0f} s)")
    saved = {"env": env, **report}
    _common.save_record(args, "gin_roofline", saved, lambda path: plot(report, path, env))


if __name__ == "__main__":
    main()
