"""Benchmark: DACL pretraining of GIN on IMDB-BINARY, graphs/s, jaxcl against PyTorch Geometric.

jaxcl's side is what the trainer runs: ``jaxcl.methods.get('dacl_graph')`` with the DACL
Table 4 config (``jaxcl/configs/dacl_graph.py``: GIN 4 x 512, graph embedding 2048, head
3 x (Linear -> ReLU) of 2048, Mixup-noise on the graph embedding with ``alpha = 0.9``,
NT-Xent with ``tau = 1``, Adam lr 1e-3, batch 128), built by the trainer's own pieces
(``training.Run``): its graph task (``load_gin`` with the config's node features, a
constant 1 per node as InfoGraph's code feeds IMDB, or one-hot degrees with
``--node-features degree``; ``GraphBatcher`` padding to a few budgets; one device), its
initial state and its jitted step (``donate_argnums=0``), at most two steps in flight as
in the trainer's loop. PyTorch
Geometric's side is written here: the InfoGraph ``Encoder`` (``GINConv`` over Linear ->
ReLU -> Linear, ReLU, ``BatchNorm1d``, ``global_add_pool`` of every layer, concatenated),
the same head, mixup and loss, and ``torch_geometric.loader.DataLoader`` (batch 128,
shuffled) over the same graphs and node features. PyTorch mixes the graph embeddings and
runs the head on both views, as DACL's code; jaxcl's ``DACLGraph.loss`` mixes after the
head's first Linear: the same values, with that Linear on half the rows
(``gin_roofline.py`` prices both orders).

graphs/s = graphs per epoch / median epoch time, over ``--epochs`` full epochs after the
warm-up, the data pipeline included on both sides (batching and padding on the host, as a
user runs it). jaxcl compiles once per padding budget: the warm-up runs one epoch and then
one step on every budget the timed epochs will use (their batch order is known in
advance), so no compilation falls in a timed epoch; the compilations are counted and
reported (and any during timing would be too).

Before timing, PyTorch Geometric's model loads jaxcl's initial weights and both compute
the graph embeddings, loss and gradients on the first 128 graphs without mixing
(``alpha = 1``). The script reports how far each float32 result lies from PyTorch's float64
one and from the other side's: same model, same loss, up to float32 rounding (which is large
here: with constant node features, batch norm magnifies it).

Each side runs in its own subprocess. Target (issue): jaxcl at least 1.3x PyG's graphs/s.

Time on a quiet machine: on cores shared with other jobs PyTorch's OpenMP threads wait for
each other at every operation (seen here: a GIN epoch 25x slower with 2 threads than with 1
on 2 busy cores), which says nothing about either library. ``--torch-threads`` sets PyTorch's
thread count (default: all cores); jaxcl uses XLA's default (all cores).

On a GPU: jaxcl runs on JAX's default device; ``--torch-device`` puts PyTorch's model and
every batch on ``cuda`` (the default where PyTorch sees a GPU) or ``cpu``. Every timed epoch
ends by waiting for the device on both sides (``jax.block_until_ready``,
``torch.cuda.synchronize``), and both report their device allocator's peak memory.

Usage (from the repository root; ``pip install -e '.[bench]'`` for torch and PyG):

  python experiments/benchmarks/gin_benchmark.py            # 10 timed epochs per side
  python experiments/benchmarks/gin_benchmark.py --quick    # the config's quick variant

Writes gin_benchmark[_quick][_host_default][_gpu].json and .png to --out (default
experiments/benchmarks/results).
"""

from __future__ import annotations

import argparse
import copy
import json
import pathlib
import time

import _common  # experiments/benchmarks/_common.py: the script's folder is on sys.path
from _common import GIB

TARGET = 1.3  # the speed-up over PyG (graphs/s)

DEFAULT_OUT = pathlib.Path(__file__).resolve().parent / "results"
DATASET = "imdb_binary"
MAX_IN_FLIGHT = 2  # as jaxcl.training's loop


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data-dir",
        type=pathlib.Path,
        default=_common.DEFAULT_DATA,
        help="the folder with tu_gin/",
    )
    parser.add_argument(
        "--node-features",
        choices=["degree", "constant"],
        help="IMDB-BINARY's node features (default: the config's, constant as InfoGraph's code)",
    )
    parser.add_argument(
        "--padding-anchors",
        type=lambda text: tuple(float(x) for x in text.split(",")),
        help="jaxcl's padding ladder, e.g. 1,3 (default: the config's data.padding_anchors)",
    )
    parser.add_argument("--epochs", type=int, default=10, help="timed epochs per side")
    parser.add_argument("--warmup", type=int, default=1, help="untimed epochs first")
    parser.add_argument(
        "--torch-device",
        choices=["cpu", "cuda"],
        help="PyTorch's device (default: cuda where PyTorch sees a GPU, else cpu); jaxcl runs "
        "on JAX's default device",
    )
    parser.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT)
    _common.add_worker_flags(parser)
    parser.add_argument(
        "--quick", action="store_true", help="the quick config (GIN 2 x 32), 2 timed epochs"
    )
    args = parser.parse_args()
    if args.quick:
        args.epochs, args.warmup = 2, 1
    return args


# --------------------------------------------------------------------------------------------
# jaxcl


def jax_worker(args) -> dict:
    import jax
    import numpy as np
    from flax import nnx

    from jaxcl import graphs, methods, training
    from jaxcl.configs import dacl_graph

    rss_after_imports = _common.peak_rss_bytes()
    config = dacl_graph.make("dacl_graph", DATASET + (",quick" if args.quick else ""))
    config.data.data_dir = str(args.data_dir)
    if args.node_features:
        config.data.node_features = args.node_features
    if args.padding_anchors:
        config.data.padding_anchors = args.padding_anchors
    config.train.epochs = args.warmup + args.epochs + 1  # the schedule's horizon (constant)
    config.mesh.data = 1
    training.validate(config)
    # As the trainer does first for this config (train.reuse_host_memory), before JAX's CPU
    # backend exists.
    reused = args.host_memory == "reuse" and training.reuse_host_memory()
    cls = methods.get(config.method.name)
    method = cls(config)
    mesh = training.make_mesh(1)
    with jax.set_mesh(mesh):
        # The trainer's own pieces: its graph task (padding ladder, batcher), its initial
        # state (on the device, as the trainer's jitted init puts it: a state placed later
        # would compile the step twice) and its jitted step.
        run = training.Run.build(config, method, mesh)
        task = run.task
        state = jax.jit(run.init_state, out_shardings=run.shardings)()
        train_step = run.train_step()
    batcher, ds = task.train_batcher, task.ds
    graphdef, params, model_state = run.graphdef, state.params, state.model_state
    key = jax.random.key(config.seed)

    # Same model: embeddings, loss and gradients on the first batch without mixing.
    plain_config = config.copy_and_resolve_references()
    plain_config.method.alpha = 1.0
    plain = cls(plain_config)
    first = np.arange(config.train.batch_size)
    check_batch = graphs.batch_graphs([ds.graphs[i] for i in first], batcher.budget_for(first))

    def plain_loss(params, model_state, batch):
        model = nnx.merge(graphdef, params, model_state, copy=True)
        return plain.loss(model, batch, key, {})[0]

    @jax.jit
    def embed(params, model_state, batch):
        return nnx.merge(graphdef, params, model_state, copy=True).encoder(batch)

    flat = _common.flat_state
    # In full float32, as PyTorch's check (its default): on a GPU JAX's default precision
    # multiplies float32 matrices in TF32 (the timed steps do; on the CPU nothing changes).
    with jax.default_matmul_precision("highest"):
        loss, grads = jax.jit(jax.value_and_grad(plain_loss))(params, model_state, check_batch)
        embeddings = np.asarray(embed(params, model_state, check_batch))[: len(first)]
    # The graphs as jaxcl reads them go to PyTorch too: the same node features and edges.
    np.savez(
        args.exchange / "jax.npz",
        node_features=np.concatenate([g.node_features for g in ds.graphs]),
        senders=np.concatenate([g.senders for g in ds.graphs]),
        receivers=np.concatenate([g.receivers for g in ds.graphs]),
        num_nodes=np.array([g.num_nodes for g in ds.graphs]),
        num_edges=np.array([g.num_edges for g in ds.graphs]),
        embeddings=embeddings,
        loss=np.asarray(loss),
        **flat(params),
        **flat(model_state),
        **flat(grads, "grad:"),
    )
    setup = {
        "num_graphs": len(ds),
        "num_features": task.spec.num_features,
        "node_features": config.data.node_features,
        "batch_size": config.train.batch_size,
        "steps_per_epoch": task.steps_per_epoch,
        "method": config.method.to_dict(),
        "model": config.model.to_dict(),
        "optim": config.optim.to_dict(),
        "budgets": [list(b) for b in batcher.budgets],
        "padding_anchors": list(config.data.padding_anchors),
    }
    (args.exchange / "setup.json").write_text(json.dumps(setup))
    state, metrics, timing = _common.time_graph_epochs(
        task,
        train_step,
        state,
        key,
        warmup=args.warmup,
        epochs=args.epochs,
        batch_of=lambda indices, budget: graphs.batch_graphs(
            [ds.graphs[i] for i in indices], budget
        ),
        num_graphs=len(ds),
        max_in_flight=MAX_IN_FLIGHT,
    )
    gpu = _common.jax_gpu_fields()  # on a GPU: the timed matmuls' precision
    return _common.jax_report(
        reused=reused,
        rss_after_imports=rss_after_imports,
        **gpu,
        final_loss=float(metrics["loss"]),
        **timing,
    )


# --------------------------------------------------------------------------------------------
# PyTorch Geometric


def torch_worker(args) -> dict:
    import numpy as np
    import torch
    import torch.nn.functional as F
    import torch_geometric
    from torch import nn
    from torch_geometric.data import Batch, Data
    from torch_geometric.loader import DataLoader
    from torch_geometric.nn import GINConv, global_add_pool

    reused, rss_after_imports = _common.torch_worker_setup(args)
    from _torch_parts import nt_xent  # after the worker has set up torch

    device, wait = _common.torch_device(args.torch_device)
    device_name, cuda = device.type, device.type == "cuda"

    setup = json.loads((args.exchange / "setup.json").read_text())
    hp, m, opt = setup["method"], setup["model"], setup["optim"]
    if opt["name"] != "adam" or opt["weight_decay"] or opt["schedule"] != "constant":
        raise SystemExit(f"the PyG side implements constant-lr Adam without decay, not {opt}")

    # IMDB-BINARY as jaxcl's reader gives it (one-hot degree features, both directions of
    # every edge), passed as NumPy arrays: this process imports neither jax nor jaxcl.
    jx = dict(np.load(args.exchange / "jax.npz"))  # read every array once
    x_all, num_nodes, num_edges = jx["node_features"], jx["num_nodes"], jx["num_edges"]
    edges_all = np.stack([jx["senders"], jx["receivers"]]).astype(np.int64)
    node_end, edge_end = np.cumsum(num_nodes), np.cumsum(num_edges)
    dataset = [
        # Copies: a slice would keep the whole array alive in every graph.
        Data(
            x=torch.from_numpy(x_all[n1 - n : n1].copy()),
            edge_index=torch.from_numpy(edges_all[:, e1 - e : e1].copy()),
        )
        for n, n1, e, e1 in zip(num_nodes, node_end, num_edges, edge_end, strict=True)
    ]

    class Encoder(nn.Module):
        """InfoGraph's GIN ``Encoder``: per layer ``BN(ReLU(GINConv(MLP)))``, graph embedding
        = the sum-pooled states of every layer, concatenated."""

        def __init__(self, num_features, dim, num_gc_layers):
            super().__init__()
            self.convs = nn.ModuleList()
            self.bns = nn.ModuleList()
            for i in range(num_gc_layers):
                mlp = nn.Sequential(
                    nn.Linear(dim if i else num_features, dim), nn.ReLU(), nn.Linear(dim, dim)
                )
                self.convs.append(GINConv(mlp))
                self.bns.append(nn.BatchNorm1d(dim))

        def forward(self, x, edge_index, batch):
            xs = []
            for conv, bn in zip(self.convs, self.bns, strict=True):
                x = bn(F.relu(conv(x, edge_index)))
                xs.append(x)
            return torch.cat([global_add_pool(x, batch) for x in xs], 1)

    class Head(nn.Module):
        """DACL's graph head (``Projhead``): ``depth`` x (Linear -> [BN] -> ReLU)."""

        def __init__(self, in_features, width, depth, out_features, batch_norm):
            super().__init__()
            sizes = [in_features] + [width] * (depth - 1) + [out_features]
            pairs = list(zip(sizes[:-1], sizes[1:], strict=True))
            self.linears = nn.ModuleList(nn.Linear(a, b) for a, b in pairs)
            self.norms = nn.ModuleList(nn.BatchNorm1d(b) for _, b in pairs) if batch_norm else None

        def forward(self, x):
            for i, linear in enumerate(self.linears):
                x = linear(x)
                if self.norms is not None:
                    x = self.norms[i](x)
                x = F.relu(x)
            return x

    def linear_mixup(h, alpha):
        """DACL's linear Mixup-noise: each graph's embedding mixed with another graph's."""
        n = h.shape[0]
        with torch.no_grad():
            partners = (
                torch.arange(n, device=h.device) + torch.randint(1, n, (n,), device=h.device)
            ) % n
            lam = torch.empty(n, 1, dtype=h.dtype, device=h.device).uniform_(alpha, 1.0)
        return torch.lerp(h[partners], h, lam)  # lam * h + (1 - lam) * h[partners]

    torch.manual_seed(0)
    encoder = Encoder(setup["num_features"], m["encoder_width"], m["encoder_depth"])
    head = Head(
        m["encoder_width"] * m["encoder_depth"],
        m["head_width"],
        m["head_depth"],
        m["embed_dim"],
        hp["head_batch_norm"],
    )
    model = nn.ModuleDict({"encoder": encoder, "head": head})

    linear_leaf = {"weight": "kernel", "bias": "bias"}
    norm_leaf = {"weight": "scale", "bias": "bias", "running_mean": "mean", "running_var": "var"}

    def jax_name(name):
        """This model's parameter or batch-norm statistic -> (jaxcl's name, transpose)."""
        parts = name.split(".")
        if parts[:2] == ["encoder", "convs"]:  # encoder.convs.i.nn.{0,2}.{weight,bias}
            linear = {"0": "linear1", "2": "linear2"}[parts[4]]
            leaf = linear_leaf[parts[5]]
            return f"encoder.gin.layers.{parts[2]}.{linear}.{leaf}", leaf == "kernel"
        if parts[:2] == ["encoder", "bns"]:  # encoder.bns.i.leaf
            return f"encoder.gin.layers.{parts[2]}.norm.{norm_leaf[parts[3]]}", False
        if parts[:2] == ["head", "linears"]:  # head.linears.i.{weight,bias}
            leaf = linear_leaf[parts[3]]
            return f"head.linears.{parts[2]}.{leaf}", leaf == "kernel"
        return f"head.norms.{parts[2]}.{norm_leaf[parts[3]]}", False  # head.norms.i.leaf

    with torch.no_grad():
        statistics_ = [
            (n, b) for n, b in model.named_buffers() if n.endswith(("running_mean", "running_var"))
        ]
        for name, t in [*model.named_parameters(), *statistics_]:
            key, transpose = jax_name(name)
            t.copy_(torch.from_numpy(jx[key].T if transpose else jx[key]))
    model.train()

    def dacl_loss(model, batch, alpha):
        h = model["encoder"](batch.x, batch.edge_index, batch.batch)
        views = torch.cat([linear_mixup(h, alpha), linear_mixup(h, alpha)])
        z1, z2 = model["head"](views).chunk(2)
        return nt_xent(z1, z2, hp["temperature"]), h

    def plain(model, batch):
        """Graph embeddings, loss and gradients without mixing (alpha = 1)."""
        model.zero_grad(set_to_none=True)
        loss, h = dacl_loss(model, batch, 1.0)
        loss.backward()
        grads = {n: p.grad.cpu().numpy().copy() for n, p in model.named_parameters()}
        model.zero_grad(set_to_none=True)
        return {"loss": float(loss), "embeddings": h.detach().cpu().numpy(), "grads": grads}

    check_batch = Batch.from_data_list(dataset[: setup["batch_size"]])
    jaxcl = {"loss": float(jx["loss"]), "embeddings": jx["embeddings"], "grads": {}}
    for name, _ in model.named_parameters():
        key, transpose = jax_name(name)
        jaxcl["grads"][name] = jx["grad:" + key].T if transpose else jx["grad:" + key]
    batch64 = check_batch.clone()
    batch64.x = batch64.x.double()
    # A copy for float64, on the CPU (the model is still there): the batch-norm statistics
    # of the timed model stay jaxcl's.
    exact = plain(copy.deepcopy(model).double(), batch64)
    model.to(device)
    check = _common.deviations(jaxcl, plain(model, check_batch.to(device)), exact)

    if cuda:  # the timed steps' float32 matmuls in TF32, as JAX's default precision on a GPU
        torch.set_float32_matmul_precision("high")
    optimizer = torch.optim.Adam(model.parameters(), lr=opt["lr"])
    loader = DataLoader(dataset, batch_size=setup["batch_size"], shuffle=True)

    def run_epoch():
        for batch in loader:
            batch = batch.to(device, non_blocking=True)
            optimizer.zero_grad(set_to_none=True)
            loss, _ = dacl_loss(model, batch, hp["alpha"])
            loss.backward()
            optimizer.step()
        wait()
        return float(loss)

    for _ in range(args.warmup):
        run_epoch()
    seconds = []
    for _ in range(args.epochs):
        wait()
        start = time.perf_counter()
        final_loss = run_epoch()
        seconds.append(time.perf_counter() - start)
    return _common.torch_report(
        reused=reused,
        rss_after_imports=rss_after_imports,
        device=device_name,
        # On a GPU, the precision of the timed float32 matmuls ("high": TF32, as JAX's).
        **({"matmul_precision": torch.get_float32_matmul_precision()} if cuda else {}),
        torch_geometric=torch_geometric.__version__,
        check=check,
        final_loss=final_loss,
        **_common.epoch_summary(seconds, len(dataset)),
    )


# --------------------------------------------------------------------------------------------
# Driver


def run_worker(kind: str, args, exchange: pathlib.Path) -> dict:
    cmd = (
        [
            f"--worker={kind}",
            f"--data-dir={args.data_dir}",
            f"--epochs={args.epochs}",
            f"--warmup={args.warmup}",
            f"--exchange={exchange}",
        ]
        + ([f"--node-features={args.node_features}"] if args.node_features else [])
        + ([f"--torch-device={args.torch_device}"] if args.torch_device else [])
        + (
            ["--padding-anchors=" + ",".join(map(str, args.padding_anchors))]
            if args.padding_anchors
            else []
        )
        + [
            f"--torch-threads={args.torch_threads}",
            f"--host-memory={args.host_memory}",
        ]
        + (["--quick"] if args.quick else [])
    )
    return _common.run_worker(__file__, cmd, kind)


def plot(jax_r: dict, torch_r: dict, setup: dict, path: pathlib.Path, env: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4.2))
    names = ["jaxcl", "PyG"]
    ax.bar(names, [jax_r["graphs_per_s"], torch_r["graphs_per_s"]], color=["C0", "C1"])
    for name, r in zip(names, (jax_r, torch_r), strict=True):
        per_epoch = [setup["num_graphs"] / s for s in r["all_epoch_s"]]
        ax.plot([name] * len(per_epoch), per_epoch, "k.", alpha=0.5)
    m = setup["model"]
    ax.set_ylabel("graphs / s (median epoch; dots: each epoch)")
    # The devices where either side is not on the CPU (a line of their own: GPU names are long).
    machine = f"{env['cpu_model']} ({env['cpu_count']} cores), "
    if not (env["jax_device"].startswith("cpu") and env["torch_device"] == "cpu"):
        machine = f"jaxcl on {env['jax_device']}, PyG on {env['torch_device']}\n"
    ax.set_title(
        f"DACL on IMDB-BINARY, GIN {m['encoder_depth']} x {m['encoder_width']}, batch "
        f"{setup['batch_size']}\n{machine}jax {env['jax']}, torch {env['torch']}, PyG "
        f"{env['torch_geometric']}",
        fontsize=9,
    )
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    args = parse_args()
    if _common.serve_worker(args, jax_worker, torch_worker):
        return

    env = _common.environment(
        ("jax", "jaxlib", "flax", "optax", "jraph", "torch", "torch_geometric")
    )
    _common.print_environment(env)
    jax_r, setup, torch_r = _common.run_pair(run_worker, args)
    env["jax_device"], env["torch_device"] = jax_r["device"], torch_r["device"]
    env["host_memory"] = args.host_memory
    print(
        f"# host memory: {args.host_memory} (freed memory kept for reuse: jaxcl "
        f"{jax_r['host_memory_reused']}, PyG {torch_r['host_memory_reused']})"
    )
    env["torch_threads"] = torch_r["threads"]
    m = setup["model"]
    print(
        f"# jaxcl on {env['jax_device']}; PyG on {env['torch_device']} with "
        f"{env['torch_threads']} threads"
    )
    precisions = [  # the sides on a GPU
        f"{name} {r['matmul_precision']} ({default})"
        for name, r, default in (
            ("jaxcl", jax_r, "JAX's default: TF32 on an Ampere or newer GPU"),
            ("PyG", torch_r, "set to TF32 as JAX's; PyTorch's default is full float32"),
        )
        if "matmul_precision" in r
    ]
    if precisions:
        print(
            f"# float32 matmul precision of the timed steps on the GPU: {', '.join(precisions)}; "
            "the same-model check runs both sides in full float32"
        )
    print(
        f"# DACL (dacl_graph) on IMDB-BINARY: {setup['num_graphs']} graphs, "
        f"{setup['num_features']} node features ({setup['node_features']}), GIN "
        f"{m['encoder_depth']} x {m['encoder_width']}, head {m['head_depth']} x "
        f"{m['head_width']} -> {m['embed_dim']}, batch {setup['batch_size']} "
        f"({setup['steps_per_epoch']} steps per epoch); median of {args.epochs} epochs after "
        f"{args.warmup} warm-up"
    )
    speedup = jax_r["graphs_per_s"] / torch_r["graphs_per_s"]
    # On a GPU also the device allocator's peak (jaxcl: XLA's, PyG: PyTorch's caching one).
    on_device = any("peak_device_bytes" in r for r in (jax_r, torch_r))
    header = f"{'':<6} | {'graphs/s':>9} {'s/epoch':>8} {'min s':>7} | {'peak RSS GiB':>12}"
    header += f" {'peak device GiB':>15}" if on_device else ""
    print(header)
    print("-" * len(header))
    for name, r in (("jaxcl", jax_r), ("PyG", torch_r)):
        line = (
            f"{name:<6} | {r['graphs_per_s']:9.1f} {r['median_epoch_s']:8.3f} "
            f"{r['min_epoch_s']:7.3f} | {r['peak_rss_bytes'] / GIB:12.2f}"
        )
        if on_device:
            peak = r.get("peak_device_bytes")
            line += f" {peak / GIB:15.2f}" if peak is not None else f" {'-':>15}"
        print(line)
    w = jax_r["warmup"]
    print(
        f"\njaxcl: {len(setup['budgets'])} padding budgets (anchors "
        f"{tuple(setup['padding_anchors'])} std), {w['budgets_used']} used by the "
        f"warm-up and timed epochs ({w['budgets_compiled_ahead']} compiled ahead); "
        f"{w['compilations']} compilations ({w['compile_seconds']:.1f} s) in a warm-up of "
        f"{w['seconds']:.1f} s, "
        f"{jax_r['compilations_during_timing']} during the timed epochs."
    )
    print(
        _common.describe_check(
            torch_r["check"],
            f"initial weights, the first {setup['batch_size']} graphs, no mixing",
            "graph",
        )
    )
    target = {
        "target": f"jaxcl >= {TARGET:g}x PyG graphs/s",
        "status": "PASS" if speedup >= TARGET else "FAIL",
        "detail": f"{speedup:.2f}x ({jax_r['graphs_per_s']:.1f} vs "
        f"{torch_r['graphs_per_s']:.1f} graphs/s)",
    }
    if jax_r["compilations_during_timing"]:
        target["detail"] += f"; {jax_r['compilations_during_timing']} compilations in timed epochs"
    print(f"\n[{target['status']}] {target['target']}: {target['detail']}")

    record = {
        "env": env,
        "setup": setup,
        "jaxcl": jax_r,
        "pyg": torch_r,
        "speedup": speedup,
        "check": torch_r["check"],
        "targets": [target],
    }
    _common.save_record(
        args,
        "gin_benchmark",
        record,
        lambda path: plot(jax_r, torch_r, setup, path, env),
        settings=_common.host_memory_settings(args)
        # A GPU run does not overwrite the CPU figures.
        + (("gpu",) if not env["jax_device"].startswith("cpu") else ()),
    )


if __name__ == "__main__":
    main()
