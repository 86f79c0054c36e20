"""Benchmark: GRACE on Cora, time per epoch and peak memory, jaxcl against PyTorch Geometric.

jaxcl's side is the trainer's own step (``training.Run.train_step()``: the default step
jitted with ``donate_argnums=0``) of ``jaxcl.methods.get('grace')`` on the full Cora graph,
from the trainer's node task (``load_planetoid`` with row-normalised features,
``graphs.node_graph``, placed on the device once). On CPU that task holds the graph in
GRACE's sparse layout (``sparse_layout='auto'``; ``--sparse-layout off`` for the dense one):
Cora's 1.3%-nonzero features as a ``graphs.SparseMatrix``, so the first GCN layer's product
and its gradient read only the nonzeros, and propagation as sparse products over the
edges' pattern; the model and its numbers are the same. PyTorch Geometric's side is GRACE as in
its official code (CRIPAC-DIG/GRACE ``model.py``, ``train.py``), written here: two
``GCNConv`` layers (``2 d_e`` then ``d_e``) with one shared activation (``nn.PReLU()`` or
ReLU), projection ``fc2(ELU(fc1(z)))``, views by ``dropout_edge`` (``dropout_adj``'s
replacement in PyG 2.x, the same draw) and ``drop_feature``, ``semi_loss`` in both
directions, ``torch.optim.Adam`` with L2 weight decay, one full-graph step per epoch.

Hyperparameters on both sides are the project's GRACE Cora row
(``jaxcl/configs/grace_node.py``, ESCo's Table 4): d_e = d_p = 512, p_e = 0.2 / 0.3,
p_f = 0.3 / 0.3, tau = 0.5, Adam lr 1e-4, weight decay 1e-5, and ReLU (GRACE's
``config.yaml`` for Cora; ``--activation prelu`` for PReLU).

Before timing, PyTorch Geometric's model loads jaxcl's initial weights and both compute,
without augmentation (p = 0), the node embeddings, the loss and its gradients. The script
reports how far each float32 result lies from PyTorch's float64 one and from the other
side's (same model, same loss, up to float32 rounding).

Each side runs in its own subprocess: its peak resident memory (``VmHWM``) is its own;
the RSS right after the imports is reported too (``import jaxcl.training`` loads no
TensorFlow), and for jaxcl XLA's buffer sizes of the compiled step
(arguments + outputs not aliased to them + temporaries). Time per epoch is the median over
``--epochs`` epochs after ``--warmup`` epochs (and, for jaxcl, after compiling), each epoch
waited for.

Host memory (``--host-memory``): by default both workers keep freed memory for reuse, as
jaxcl's trainer does with GRACE's configs (``train.reuse_host_memory``: glibc's
``M_MMAP_MAX = 0`` and ``M_TRIM_THRESHOLD`` at its maximum, and, on jaxcl's side, JAX's CPU
computations dispatched on the calling thread); without it XLA:CPU maps and page-faults its
245 MiB of temporaries afresh every step. ``--host-memory default`` leaves glibc's settings
on both sides.

Target (issue): jaxcl at least 2x faster per epoch than PyTorch Geometric.

Time on a quiet machine: on cores shared with other jobs PyTorch's OpenMP threads wait for
each other at every operation (seen here: a GIN epoch 25x slower with 2 threads than with 1
on 2 busy cores), which says nothing about either library. ``--torch-threads`` sets PyTorch's
thread count (default: all cores); jaxcl uses XLA's default (all cores).

Usage (from the repository root; ``pip install -e '.[bench]'`` for torch and PyG):

  python experiments/benchmarks/grace_benchmark.py            # 50 timed epochs per side
  python experiments/benchmarks/grace_benchmark.py --quick    # 3 timed epochs per side

  python experiments/benchmarks/grace_benchmark.py --sparse-layout off   # jaxcl dense
  python experiments/benchmarks/grace_benchmark.py --host-memory default # glibc as is

Writes grace_benchmark[_quick][_layout_on|off][_host_default].json and .png to --out (default
experiments/benchmarks/results).
"""

from __future__ import annotations

import argparse
import copy
import json
import pathlib
import statistics
import time

import _common  # experiments/benchmarks/_common.py: the script's folder is on sys.path
from _common import GIB

DEFAULT_OUT = pathlib.Path(__file__).resolve().parent / "results"
TARGET_SPEEDUP = 2.0


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data-dir",
        type=pathlib.Path,
        default=_common.DEFAULT_DATA,
        help="the folder with planetoid/",
    )
    parser.add_argument("--epochs", type=int, default=50, help="timed epochs per side")
    parser.add_argument("--warmup", type=int, default=3, help="untimed epochs first")
    parser.add_argument(
        "--activation",
        choices=["prelu", "relu"],
        help="the encoder's activation (default: the config's, ReLU for Cora as GRACE's)",
    )
    parser.add_argument(
        "--sparse-layout",
        choices=["auto", "on", "off"],
        default="auto",
        help="jaxcl's GRACE sparse_layout (default auto: sparse features and propagation on CPU)",
    )
    _common.add_worker_flags(parser)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT)
    parser.add_argument("--quick", action="store_true", help="3 timed epochs, 1 warm-up")
    args = parser.parse_args()
    if args.quick:
        args.epochs, args.warmup = 3, 1
    return args


def summarize(seconds: list[float]) -> dict:
    return {"median_s": statistics.median(seconds), "min_s": min(seconds), "all_s": seconds}


# --------------------------------------------------------------------------------------------
# jaxcl


def jax_worker(args) -> dict:
    import jax
    import numpy as np
    from flax import nnx

    from jaxcl import methods, training
    from jaxcl.configs import grace_node

    rss_after_imports = _common.peak_rss_bytes()

    def make_config(**overrides):
        c = grace_node.make("cora")  # ESCo Table 4: the project's GRACE Cora row
        c.data.data_dir = str(args.data_dir)
        if args.activation:
            c.method.activation = args.activation
        c.method.sparse_layout = args.sparse_layout
        c.method.update(overrides)
        c.train.epochs = args.warmup + args.epochs  # the schedule's horizon (constant here)
        c.mesh.data = 1
        training.validate(c)
        return c

    config = make_config()
    # As the trainer does first for this config (train.reuse_host_memory), before JAX's CPU
    # backend exists.
    reused = args.host_memory == "reuse" and training.reuse_host_memory()
    cls = methods.get(config.method.name)
    method = cls(config)
    mesh = training.make_mesh(1)
    with jax.set_mesh(mesh):
        # The trainer's own pieces: its node task (Cora read, the graph built and placed on
        # the device once), its initial state and its jitted step.
        run = training.Run.build(config, method, mesh)
        task = run.task
        ds, graph = task.ds, task.place(next(iter(task.batches(0))))
        state = jax.jit(run.init_state, out_shardings=run.shardings)()
        train_step = run.train_step()
    sparse = isinstance(graph, methods.GRACEInputs)
    graphdef, params, model_state = run.graphdef, state.params, state.model_state
    o = config.optim
    if (o.name, o.schedule, o.warmup_epochs) != ("adam_l2", "constant", 0.0):
        raise SystemExit(f"the PyG side implements torch's Adam at a constant lr, not {o}")
    key = jax.random.key(args.seed)

    # Same model: on the initial weights, without augmentation, the node embeddings, the loss
    # and its gradients, for PyTorch to compare.
    plain = cls(make_config(p_e1=0.0, p_e2=0.0, p_f1=0.0, p_f2=0.0))

    def plain_loss(params, model_state, graph):
        model = nnx.merge(graphdef, params, model_state, copy=True)
        return plain.loss(model, graph, key, {})[0]

    @jax.jit
    def embed(params, model_state, graph):
        return method.features(nnx.merge(graphdef, params, model_state, copy=True), graph)

    flat = _common.flat_state
    loss, grads = jax.jit(jax.value_and_grad(plain_loss))(params, model_state, graph)
    # The graph as jaxcl reads it goes to PyTorch too: the same features and edges.
    np.savez(
        args.exchange / "jax.npz",
        x=np.asarray(ds.node_features),
        edge_index=np.stack([ds.senders, ds.receivers]).astype(np.int64),
        embeddings=np.asarray(embed(params, model_state, graph)),
        loss=np.asarray(loss),
        **flat(params),
        **flat(grads, "grad:"),
    )
    hp, m = config.method, config.model
    setup = {
        "num_hidden": m.encoder_width,  # d_e: the encoder's output, its first layer 2 d_e wide
        "num_proj_hidden": m.head_width,  # d_p
        "activation": hp.activation,
        "p_e1": hp.p_e1,
        "p_e2": hp.p_e2,
        "p_f1": hp.p_f1,
        "p_f2": hp.p_f2,
        "tau": hp.temperature,
        "lr": config.optim.lr,
        "weight_decay": config.optim.weight_decay,
    }
    if (m.encoder_depth, m.head_depth, m.embed_dim, hp.name) != (2, 2, m.encoder_width, "grace"):
        raise SystemExit(f"the PyG side implements GRACE's 2-layer GCN and head, not {m}, {hp}")
    (args.exchange / "setup.json").write_text(json.dumps(setup))

    start = time.perf_counter()
    compiled = train_step.lower(state, graph, key).compile()
    compile_s = time.perf_counter() - start
    xla = _common.xla_memory(compiled)
    seconds, losses = [], []
    for epoch in range(args.warmup + args.epochs):
        start = time.perf_counter()
        state, metrics = compiled(state, graph, key)
        loss = float(metrics["loss"])  # waits for the step, as GRACE's loss.item()
        jax.block_until_ready(state)
        if epoch >= args.warmup:
            seconds.append(time.perf_counter() - start)
        losses.append(loss)
    return _common.jax_report(
        reused=reused,
        rss_after_imports=rss_after_imports,
        graph={"nodes": ds.num_nodes, "edges": ds.num_edges, "features": ds.num_features},
        layout="sparse" if sparse else "dense",
        compile_s=compile_s,
        xla=xla,
        losses=losses,
        **summarize(seconds),
    )


# --------------------------------------------------------------------------------------------
# PyTorch Geometric


def torch_worker(args) -> dict:
    import numpy as np
    import torch
    import torch.nn.functional as F
    import torch_geometric
    from torch import nn
    from torch_geometric.nn import GCNConv
    from torch_geometric.utils import dropout_edge

    reused, rss_after_imports = _common.torch_worker_setup(args)

    # Cora as jaxcl's reader gives it (row-normalised features, 10,556 directed edges), passed
    # as NumPy arrays: this process imports neither jax nor jaxcl's JAX code.
    jx = dict(np.load(args.exchange / "jax.npz"))
    hp = json.loads((args.exchange / "setup.json").read_text())
    x = torch.from_numpy(jx["x"])
    edge_index = torch.from_numpy(jx["edge_index"])

    class Encoder(nn.Module):
        """GRACE's ``Encoder`` with ``k = 2``: GCNConv(in, 2d), GCNConv(2d, d), activation
        after each (one ``nn.PReLU()`` shared, as ``train.py`` builds it)."""

        def __init__(self, in_channels, out_channels, activation):
            super().__init__()
            self.conv = nn.ModuleList(
                [GCNConv(in_channels, 2 * out_channels), GCNConv(2 * out_channels, out_channels)]
            )
            self.activation = nn.PReLU() if activation == "prelu" else nn.ReLU()

        def forward(self, x, edge_index):
            for conv in self.conv:
                x = self.activation(conv(x, edge_index))
            return x

    class Model(nn.Module):
        """GRACE's ``Model``: encoder, projection ``fc2(ELU(fc1(z)))`` and ``semi_loss``."""

        def __init__(self, encoder, num_hidden, num_proj_hidden, tau):
            super().__init__()
            self.encoder = encoder
            self.tau = tau
            self.fc1 = nn.Linear(num_hidden, num_proj_hidden)
            self.fc2 = nn.Linear(num_proj_hidden, num_hidden)

        def forward(self, x, edge_index):
            return self.encoder(x, edge_index)

        def projection(self, z):
            return self.fc2(F.elu(self.fc1(z)))

        def semi_loss(self, z1, z2):
            # GRACE's formula; each view is normalised once instead of in every ``sim``.
            refl_sim = torch.exp(z1 @ z1.T / self.tau)
            between_sim = torch.exp(z1 @ z2.T / self.tau)
            return -torch.log(
                between_sim.diag() / (refl_sim.sum(1) + between_sim.sum(1) - refl_sim.diag())
            )

        def loss(self, z1, z2):
            h1 = F.normalize(self.projection(z1))
            h2 = F.normalize(self.projection(z2))
            return (0.5 * (self.semi_loss(h1, h2) + self.semi_loss(h2, h1))).mean()

    def drop_feature(x, drop_prob):
        """GRACE's ``drop_feature``: zero each column with probability ``drop_prob``."""
        drop_mask = torch.empty((x.size(1),), dtype=torch.float32).uniform_(0, 1) < drop_prob
        x = x.clone()
        x[:, drop_mask] = 0
        return x

    torch.manual_seed(args.seed)
    encoder = Encoder(x.shape[1], hp["num_hidden"], hp["activation"])
    model = Model(encoder, hp["num_hidden"], hp["num_proj_hidden"], hp["tau"])
    names = {
        "fc1.weight": ("head.layers.0.kernel", True),
        "fc1.bias": ("head.layers.0.bias", False),
        "fc2.weight": ("head.layers.1.kernel", True),
        "fc2.bias": ("head.layers.1.bias", False),
    }
    for i in range(2):
        names[f"encoder.conv.{i}.lin.weight"] = (f"encoder.layers.{i}.linear.kernel", True)
        names[f"encoder.conv.{i}.bias"] = (f"encoder.layers.{i}.bias", False)
    if hp["activation"] == "prelu":
        names["encoder.activation.weight"] = ("encoder.prelu.negative_slope", False)
    with torch.no_grad():
        for name, p in model.named_parameters():
            value, transpose = jx[names[name][0]], names[name][1]
            p.copy_(torch.from_numpy(value.T if transpose else value.reshape(p.shape)))
    model.train()

    def plain(model, x):
        """Embeddings, loss and gradients without augmentation."""
        model.zero_grad(set_to_none=True)
        loss = model.loss(model(x, edge_index), model(x, edge_index))
        loss.backward()
        with torch.no_grad():
            embeddings = model(x, edge_index).numpy()
        grads = {n: p.grad.numpy().copy() for n, p in model.named_parameters()}
        model.zero_grad(set_to_none=True)
        return {"loss": float(loss), "embeddings": embeddings, "grads": grads}

    jaxcl = {"loss": float(jx["loss"]), "embeddings": jx["embeddings"], "grads": {}}
    for name, p in model.named_parameters():
        g = jx["grad:" + names[name][0]]
        jaxcl["grads"][name] = g.T if names[name][1] else g.reshape(p.shape)
    exact = plain(copy.deepcopy(model).double(), x.double())
    check = _common.deviations(jaxcl, plain(model, x), exact)

    optimizer = torch.optim.Adam(model.parameters(), lr=hp["lr"], weight_decay=hp["weight_decay"])

    def train():
        """GRACE's ``train``: one full-graph step."""
        model.train()
        optimizer.zero_grad()
        edge_index_1 = dropout_edge(edge_index, p=hp["p_e1"])[0]
        edge_index_2 = dropout_edge(edge_index, p=hp["p_e2"])[0]
        x_1 = drop_feature(x, hp["p_f1"])
        x_2 = drop_feature(x, hp["p_f2"])
        z1 = model(x_1, edge_index_1)
        z2 = model(x_2, edge_index_2)
        loss = model.loss(z1, z2)
        loss.backward()
        optimizer.step()
        return loss.item()

    seconds, losses = [], []
    for epoch in range(args.warmup + args.epochs):
        start = time.perf_counter()
        losses.append(train())
        if epoch >= args.warmup:
            seconds.append(time.perf_counter() - start)
    return _common.torch_report(
        reused=reused,
        rss_after_imports=rss_after_imports,
        torch_geometric=torch_geometric.__version__,
        check=check,
        losses=losses,
        **summarize(seconds),
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
        ]
        + ([f"--activation={args.activation}"] if args.activation else [])
        + [
            f"--sparse-layout={args.sparse_layout}",
            f"--host-memory={args.host_memory}",
            f"--seed={args.seed}",
            f"--exchange={exchange}",
            f"--torch-threads={args.torch_threads}",
        ]
    )
    return _common.run_worker(__file__, cmd, kind)


def plot(jax_r: dict, torch_r: dict, setup: dict, path: pathlib.Path, env: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(10, 4.2))
    names = ["jaxcl", "PyG"]
    ax_t.bar(names, [jax_r["median_s"] * 1e3, torch_r["median_s"] * 1e3], color=["C0", "C1"])
    ax_t.set_ylabel("ms per epoch (median)")
    ax_t.set_title("time per epoch")
    peak = [jax_r["peak_rss_bytes"] / GIB, torch_r["peak_rss_bytes"] / GIB]
    base = [
        jax_r["rss_after_imports_bytes"] / GIB,
        torch_r["rss_after_imports_bytes"] / GIB,
    ]
    ax_m.bar(names, base, color="lightgray", label="RSS after imports")
    ax_m.bar(
        names,
        [p - b for p, b in zip(peak, base, strict=True)],
        bottom=base,
        color=["C0", "C1"],
        label="peak RSS above that",
    )
    ax_m.set_ylabel("GiB")
    ax_m.set_title("peak resident memory")
    ax_m.legend(fontsize=8)
    for ax in (ax_t, ax_m):
        ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle(
        f"GRACE on Cora (d = {setup['num_hidden']}, {setup['activation']}), {env['cpu_model']} "
        f"({env['cpu_count']} cores), jax {env['jax']}, torch {env['torch']}, PyG "
        f"{env['torch_geometric']}",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    args = parse_args()
    if _common.serve_worker(args, jax_worker, torch_worker):
        return

    env = _common.environment(("jax", "jaxlib", "flax", "optax", "torch", "torch_geometric"))
    _common.print_environment(env)
    jax_r, setup, torch_r = _common.run_pair(run_worker, args)
    print(
        f"# GRACE on Cora ({jax_r['graph']['nodes']} nodes, {jax_r['graph']['edges']} directed "
        f"edges, {jax_r['graph']['features']} features), ESCo Table 4 hyperparameters "
        f"(jaxcl/configs/grace_node.py): {setup}; median of {args.epochs} epochs after "
        f"{args.warmup} warm-up"
    )
    env["jax_device"], env["torch_device"] = jax_r["device"], torch_r["device"]
    env["torch_threads"] = torch_r["threads"]
    print(
        f"# jaxcl on {env['jax_device']} ({jax_r['layout']} layout); PyG on "
        f"{env['torch_device']} with {env['torch_threads']} threads (dense features, as GRACE)"
    )
    env["host_memory"] = args.host_memory
    print(
        f"# host memory: {args.host_memory} (freed memory kept for reuse: jaxcl "
        f"{jax_r['host_memory_reused']}, PyG {torch_r['host_memory_reused']})"
    )
    speedup = torch_r["median_s"] / jax_r["median_s"]

    header = (
        f"{'':<6} | {'ms/epoch':>9} {'min ms':>8} | {'peak RSS GiB':>12} {'after imports':>13} "
        f"{'XLA GiB':>8}"
    )
    print(header)
    print("-" * len(header))
    for name, r in (("jaxcl", jax_r), ("PyG", torch_r)):
        xla = f"{r['xla']['total_bytes'] / GIB:8.3f}" if r.get("xla") else f"{'-':>8}"
        print(
            f"{name:<6} | {r['median_s'] * 1e3:9.1f} {r['min_s'] * 1e3:8.1f} | "
            f"{r['peak_rss_bytes'] / GIB:12.2f} {r['rss_after_imports_bytes'] / GIB:13.2f} {xla}"
        )
    print(
        f"\njaxcl is {speedup:.2f}x PyG's speed per epoch (jaxcl compile "
        f"{jax_r['compile_s']:.1f} s, not timed). Loss after the last epoch: jaxcl "
        f"{jax_r['losses'][-1]:.4f}, PyG {torch_r['losses'][-1]:.4f}."
    )
    print(_common.describe_check(torch_r["check"], "initial weights, no augmentation", "node"))
    target = {
        "target": f"jaxcl >= {TARGET_SPEEDUP:g}x faster per epoch than PyG",
        "status": "PASS" if speedup >= TARGET_SPEEDUP else "FAIL",
        "detail": f"{speedup:.2f}x ({jax_r['median_s'] * 1e3:.1f} ms vs "
        f"{torch_r['median_s'] * 1e3:.1f} ms per epoch)",
    }
    print(f"\n[{target['status']}] {target['target']}: {target['detail']}")

    record = {
        "env": env,
        "hyperparameters": setup,
        "jaxcl": jax_r,
        "pyg": torch_r,
        "speedup": speedup,
        "check": torch_r["check"],
        "targets": [target],
    }
    layout = () if args.sparse_layout == "auto" else (f"layout_{args.sparse_layout}",)
    _common.save_record(
        args,
        "grace_benchmark",
        record,
        lambda path: plot(jax_r, torch_r, setup, path, env),
        settings=layout + _common.host_memory_settings(args),
    )


if __name__ == "__main__":
    main()
