"""Benchmark: m-Mix's graph-level pretraining on IMDB-BINARY, graphs/s, jaxcl against PyG.

Rows ``mvgrl`` and ``mp`` of ``jaxcl/configs/mmix_graph.py`` on IMDB-BINARY (1,000 graphs,
uncapped one-hot degrees: 136 features). Both: per view a GCN (PReLU after each layer), one
over the normalised adjacency ``D^-1/2 (A + I) D^-1/2``, one over the exact PPR diffusion
(``alpha = 0.2``) as edge weights, not normalised again.

* ``mvgrl``: 4 layers x 512; node embeddings the last layer's, graph embeddings the per-layer
  node sums concatenated; node and graph heads (3 x (Linear -> ReLU) + a linear shortcut)
  shared by the views; InfoGraph's local-global Jensen-Shannon bound, nodes of each view
  against the other view's graphs, both ways. Adam 1e-3, batch 64.
* ``mp`` (mp-mix-wp + diversity): 1 layer x 512; the adjacency view's nodes mixed with their
  neighbours (softmax over the node and its neighbours of cos(z_i p_m, z_j p_n)), then ``g``
  (Linear -> PReLU -> Linear); Eq. 9: the graph term (cosine contrast, ``tau = 1``, of the
  node sums of the mixed branch against the diffusion view's) + the mean over graphs of the
  node objective within each graph + the diversity loss ``-mean ||q - k||^2``. Adam 3e-4,
  batch 256.

jaxcl's side is what the trainer runs: ``training.Run`` with the row's config (its graph task:
both views precomputed as one edge set carrying both weights, ``GraphBatcher`` padding to the
config's ladder, one device), its initial state and jitted step (``donate_argnums=0``), at
most two steps in flight. PyTorch Geometric's side is written here: ``GCNConv``
(``normalize=True`` over the graph's edges, ``normalize=False`` over the diffusion's support
with jaxcl's PPR weights as ``edge_weight``), ``nn.PReLU``, ``global_add_pool``, the same
heads, mixing (``utils.softmax`` over the edges plus self loops), losses (``to_dense_batch``
for the node objective: padded to the batch's largest graph, where jaxcl pads every graph to
the data set's, 136 nodes) and Adam, with a shuffled ``DataLoader`` over the same graphs
(``edge_index``, ``diff_index``, ``diff_weight``).

graphs/s = 1,000 / median epoch time over ``--epochs`` epochs after ``--warmup``, host
batching included. jaxcl's warm-up also steps once on every padding budget the timed epochs
use, so none compiles in them (compilations are counted).

Same model, before timing: PyG's model loads jaxcl's initial weights; both compute the loss,
every gradient and the graph embeddings (the evaluation's features) on the first batch in
float32, against PyTorch in float64. Neither loss draws anything random (no corruption;
mp-mix's weights are deterministic), so the whole training loss is checked as it runs.

On busy shared cores PyTorch's OpenMP threads wait for each other (seen here: PyG 40x slower
with 2 threads than with 1): time on a quiet machine or pass ``--torch-threads 1``. On a GPU
``--torch-device`` (default cuda where seen) moves PyG's model and batches; both sides wait
for the device before reading clocks, PyG's timed steps use TF32 (JAX's default) and both
report the device allocator's peak.

Usage (from the repository root; ``pip install -e '.[bench]'`` for torch and PyG):

  python experiments/benchmarks/mmix_graph_benchmark.py            # both rows, 5 epochs
  python experiments/benchmarks/mmix_graph_benchmark.py --rows mp --epochs 3
  python experiments/benchmarks/mmix_graph_benchmark.py --quick    # the quick configs

Writes mmix_graph_benchmark[_quick][_<row>][_host_default][_gpu].json and .png to --out
(default experiments/benchmarks/results). Target (issue #15): jaxcl at least 1.3x PyG.
"""

from __future__ import annotations

import argparse
import copy
import json
import pathlib
import time

import _common  # experiments/benchmarks/_common.py: the script's folder is on sys.path
from _common import GIB

DEFAULT_OUT = pathlib.Path(__file__).resolve().parent / "results"
DATASET = "imdb_binary"
ROWS = ("mvgrl", "mp")
MAX_IN_FLIGHT = 2  # as jaxcl.training's loop
TARGET = 1.3


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default=",".join(ROWS), help="comma-separated: mvgrl, mp")
    parser.add_argument(
        "--data-dir",
        type=pathlib.Path,
        default=_common.DEFAULT_DATA,
        help="the folder with tu_gin/",
    )
    parser.add_argument("--epochs", type=int, default=5, help="timed epochs per side")
    parser.add_argument("--warmup", type=int, default=1, help="untimed epochs first")
    parser.add_argument("--torch-device", choices=["cpu", "cuda"], help="default: cuda if seen")
    parser.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT)
    parser.add_argument("--quick", action="store_true", help="the quick configs, 2 epochs")
    _common.add_worker_flags(parser)
    args = parser.parse_args()
    args.rows = tuple(r for r in args.rows.split(",") if r)
    if not args.rows or set(args.rows) - set(ROWS):
        parser.error(f"--rows: a comma-separated selection of {', '.join(ROWS)}")
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
    from jaxcl.configs import mmix_graph

    rss_after_imports = _common.peak_rss_bytes()
    (row,) = args.rows
    config = mmix_graph.make(row, DATASET + (",quick" if args.quick else ""))
    config.data.data_dir = str(args.data_dir)
    config.train.epochs = args.warmup + args.epochs + 1  # the schedule's horizon (constant)
    training.validate(config)
    reused = args.host_memory == "reuse" and training.reuse_host_memory()
    method = methods.get(config.method.name)(config)
    mesh = training.make_mesh(1)
    with jax.set_mesh(mesh):
        run = training.Run.build(config, method, mesh)  # computes the two views (PPR)
        task = run.task
        state = jax.jit(run.init_state, out_shardings=run.shardings)()
        train_step = run.train_step()
    batcher, graphdef = task.train_batcher, run.graphdef
    params, model_state = state.params, state.model_state
    key = jax.random.key(config.seed)
    # The two-view graphs as the task batches them (the same function, recomputed here):
    # for PyTorch and for the batches compiled ahead.
    views, weights = method.graph_views(task.ds)

    def batch_of(indices, budget):
        return graphs.batch_graphs(
            [views.graphs[i] for i in indices], budget, edge_weights=[weights[i] for i in indices]
        )

    # Same model: loss, gradients and graph features on the first batch (nothing random).
    first = np.arange(config.train.batch_size)
    check_batch = batch_of(first, batcher.budget_for(first))

    def loss_fn(params, batch):
        model = nnx.merge(graphdef, params, model_state, copy=True)
        return method.loss(model, batch, key, {})[0]

    @jax.jit
    def features(params, batch):
        return method.features(nnx.merge(graphdef, params, model_state, copy=True), batch)

    flat = _common.flat_state
    with jax.default_matmul_precision("highest"):  # full float32, as PyTorch's check
        loss, grads = jax.jit(jax.value_and_grad(loss_fn))(params, check_batch)
        embeddings = np.asarray(features(params, check_batch))[: len(first)]
    np.savez(
        args.exchange / "jax.npz",
        node_features=np.concatenate([g.node_features for g in views.graphs]),
        senders=np.concatenate([g.senders for g in views.graphs]),
        receivers=np.concatenate([g.receivers for g in views.graphs]),
        weights=np.concatenate(weights),  # [E, 2]: diffusion weight, 1 for an own edge
        num_nodes=np.array([g.num_nodes for g in views.graphs]),
        num_edges=np.array([g.num_edges for g in views.graphs]),
        embeddings=embeddings,
        loss=np.asarray(loss),
        **flat(params),
        **flat(grads, "grad:"),
    )
    setup = {
        "row": row,
        "num_graphs": len(task.ds),
        "num_features": task.spec.num_features,
        "mean_nodes": float(np.mean([g.num_nodes for g in views.graphs])),
        "max_nodes": int(method.max_nodes),
        "edges": int(sum(g.num_edges for g in task.ds.graphs)),
        "diffusion_edges": int(sum(g.num_edges for g in views.graphs)),
        "batch_size": config.train.batch_size,
        "steps_per_epoch": task.steps_per_epoch,
        "method": config.method.to_dict(),
        "model": config.model.to_dict(),
        "optim": config.optim.to_dict(),
        "budgets": [list(b) for b in batcher.budgets],
    }
    (args.exchange / "setup.json").write_text(json.dumps(setup))
    state, metrics, timing = _common.time_graph_epochs(
        task,
        train_step,
        state,
        key,
        warmup=args.warmup,
        epochs=args.epochs,
        batch_of=batch_of,
        num_graphs=len(task.ds),
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
    import math

    import numpy as np
    import torch
    import torch.nn.functional as F
    import torch_geometric
    from torch import nn
    from torch_geometric import utils as pyg
    from torch_geometric.data import Batch, Data
    from torch_geometric.loader import DataLoader
    from torch_geometric.nn import GCNConv, global_add_pool

    reused, rss_after_imports = _common.torch_worker_setup(args)
    device, wait = _common.torch_device(args.torch_device)
    device_name, cuda = device.type, device.type == "cuda"

    setup = json.loads((args.exchange / "setup.json").read_text())
    hp, m, opt = setup["method"], setup["model"], setup["optim"]
    if opt["name"] != "adam" or opt["weight_decay"] or opt["schedule"] != "constant":
        raise SystemExit(f"the PyG side implements constant-lr Adam without decay, not {opt}")
    mp_row = hp["name"] == "mvgrl_graph_mmix"
    if mp_row and (hp["mixing"], hp["objective"]) != ("mp", "both"):
        raise SystemExit(f"the PyG side implements mp-mix with both objectives, not {hp}")

    # The two-view graphs as jaxcl batches them: own edges (column 1) -> edge_index, every
    # edge of the diffusion's support -> diff_index with its PPR weight (column 0).
    jx = dict(np.load(args.exchange / "jax.npz"))
    x_all, w_all = jx["node_features"], jx["weights"]
    edges_all = np.stack([jx["senders"], jx["receivers"]]).astype(np.int64)
    node_end, edge_end = np.cumsum(jx["num_nodes"]), np.cumsum(jx["num_edges"])
    dataset = []
    for n, n1, e, e1 in zip(jx["num_nodes"], node_end, jx["num_edges"], edge_end, strict=True):
        ei, w = edges_all[:, e1 - e : e1], w_all[e1 - e : e1]
        dataset.append(
            Data(
                x=torch.from_numpy(x_all[n1 - n : n1].copy()),
                edge_index=torch.from_numpy(ei[:, w[:, 1] > 0].copy()),
                diff_index=torch.from_numpy(ei.copy()),  # "index": offset when batched
                diff_weight=torch.from_numpy(w[:, 0].copy()),
            )
        )

    class Encoder(nn.Module):
        """jaxcl's ``LayerwiseGCN``: GCN layers with a PReLU each; the last layer's node
        embeddings and (given ``batch``) the per-layer node sums, concatenated."""

        def __init__(self, f, width, depth, normalize):
            super().__init__()
            sizes = [f] + [width] * depth
            self.convs = nn.ModuleList(
                GCNConv(a, b, normalize=normalize, add_self_loops=normalize)
                for a, b in zip(sizes[:-1], sizes[1:], strict=True)
            )
            self.acts = nn.ModuleList(nn.PReLU() for _ in range(depth))

        def forward(self, x, edge_index, edge_weight=None, batch=None, size=None):
            pooled = []
            for conv, act in zip(self.convs, self.acts, strict=True):
                x = act(conv(x, edge_index, edge_weight))
                if batch is not None:
                    pooled.append(global_add_pool(x, batch, size))
            return x, torch.cat(pooled, 1) if pooled else None

    class FeedForward(nn.Module):
        """3 x (Linear -> ReLU) plus a linear shortcut (InfoGraph's ``FF``)."""

        def __init__(self, f, width):
            super().__init__()
            self.linears = nn.ModuleList(nn.Linear(a, width) for a in (f, width, width))
            self.shortcut = nn.Linear(f, width)

        def forward(self, x):
            h = x
            for linear in self.linears:
                h = F.relu(linear(h))
            return h + self.shortcut(x)

    class MixHead(nn.Module):
        """m-Mix's ``g`` (Linear - PReLU - Linear, no bias) and mp-mix's ``p_m``, ``p_n``."""

        def __init__(self, width):
            super().__init__()
            self.g_in = nn.Linear(width, width, bias=False)
            self.g_act = nn.PReLU()
            self.g_out = nn.Linear(width, width, bias=False)
            self.p_m = nn.Parameter(torch.empty(width, width))  # jaxcl's [in, out] layout
            self.p_n = nn.Parameter(torch.empty(width, width))

        def g(self, z):
            return self.g_out(self.g_act(self.g_in(z)))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            f, w, d = setup["num_features"], m["encoder_width"], m["encoder_depth"]
            self.adjacency = Encoder(f, w, d, normalize=True)
            self.diffusion = Encoder(f, w, d, normalize=False)
            if mp_row:
                self.mix = MixHead(w)
            else:
                self.node_head, self.graph_head = FeedForward(w, w), FeedForward(w * d, w)

    def jsd(nodes, graphs_, batch):
        """InfoGraph's local-global Jensen-Shannon bound (``E_neg - E_pos``)."""
        scores = nodes @ graphs_.T
        pos = F.one_hot(batch, graphs_.shape[0]).to(scores.dtype)
        n, g = scores.shape
        e_pos = ((math.log(2.0) - F.softplus(-scores)) * pos).sum() / n
        e_neg = ((F.softplus(scores) - math.log(2.0)) * (1 - pos)).sum() / (n * (g - 1))
        return e_neg - e_pos

    def mp_mix(z, q, k, edge_index):
        """m-mix-wp: each node mixed with itself and its neighbours, softmax of cos(q_i, k_j)."""
        num = z.shape[0]
        loops, _ = pyg.add_self_loops(pyg.remove_self_loops(edge_index)[0], num_nodes=num)
        src, dst = loops
        w = pyg.softmax((q[dst] * k[src]).sum(1), dst, num_nodes=num)
        return pyg.scatter(w[:, None] * z[src], dst, 0, dim_size=num, reduce="sum")

    def graph_term(h_a, h_b, tau):
        a, b = F.normalize(h_a, dim=1), F.normalize(h_b, dim=1)
        eye = torch.eye(a.shape[0], dtype=torch.bool, device=a.device)
        same = (a @ a.T / tau).masked_fill(eye, float("-inf"))
        cross = a @ b.T / tau
        return (torch.logsumexp(torch.cat([same, cross], 1), 1) - cross.diagonal()).mean()

    def node_term(u, v, batch, num_graphs, tau):
        """The per-graph node objective (Eq. 7-8 within each graph), mean over graphs."""
        a, mask = pyg.to_dense_batch(F.normalize(u, dim=1), batch, batch_size=num_graphs)
        b, _ = pyg.to_dense_batch(F.normalize(v, dim=1), batch, batch_size=num_graphs)
        eye = torch.eye(a.shape[1], dtype=torch.bool, device=a.device)
        cols = mask[:, None, :]

        def anchor(x, y):
            within = (x @ x.mT / tau).masked_fill(~cols | eye, float("-inf"))
            across = (x @ y.mT / tau).masked_fill(~cols, float("-inf"))
            log_den = torch.logsumexp(torch.cat([within, across], 2), 2)
            return log_den - (x * y).sum(2) / tau

        per_node = (0.5 * (anchor(a, b) + anchor(b, a))).masked_fill(~mask, 0.0)
        return (per_node.sum(1) / mask.sum(1)).mean()

    def mvgrl_loss(model, b):
        size = b.num_graphs
        na, ga = model.adjacency(b.x, b.edge_index, None, b.batch, size)
        nb, gb = model.diffusion(b.x, b.diff_index, b.diff_weight, b.batch, size)
        nh, gh = model.node_head, model.graph_head
        loss = jsd(nh(na), gh(gb), b.batch) + jsd(nh(nb), gh(ga), b.batch)
        return loss, lambda: gh(ga) + gh(gb)  # the graph features, for the check only

    def mmix_loss(model, b):
        size, tau, mix = b.num_graphs, hp["temperature"], model.mix
        z_a, _ = model.adjacency(b.x, b.edge_index)
        z_b, _ = model.diffusion(b.x, b.diff_index, b.diff_weight)
        q, k = F.normalize(z_a @ mix.p_m, dim=1), F.normalize(z_a @ mix.p_n, dim=1)
        hard = mix.g(mp_mix(z_a, q, k, b.edge_index))
        pool = lambda h: global_add_pool(h, b.batch, size)  # noqa: E731
        loss = graph_term(pool(hard), pool(z_b), tau) + node_term(hard, z_b, b.batch, size, tau)
        loss = loss + hp["diversity"] * -((q - k) ** 2).sum(1).mean()
        return loss, lambda: pool(hard + z_b)

    loss_fn = mmix_loss if mp_row else mvgrl_loss
    torch.manual_seed(0)
    model = Model()

    def jax_name(name):
        """This model's parameter -> (jaxcl's name, transposed: a kernel of a Linear)."""
        parts = name.split(".")
        if parts[1] == "convs":  # {view}.convs.i.{lin.weight, bias}
            base = f"{parts[0]}.layers.{parts[2]}.layers.0."
            return (base + "linear.kernel", True) if parts[3] == "lin" else (base + "bias", False)
        if parts[1] == "acts":  # {view}.acts.i.weight
            return f"{parts[0]}.layers.{parts[2]}.prelu.negative_slope", False
        if parts[1] == "g_act":
            return "mix.g_act.negative_slope", False
        if parts[1] in ("p_m", "p_n"):
            return f"mix.{parts[1]}.kernel", False
        kernel = parts[-1] == "weight"  # a Linear's weight or bias
        return ".".join(parts[:-1] + ["kernel" if kernel else "bias"]), kernel

    def from_jax(name, prefix, shape):
        key, transpose = jax_name(name)
        value = jx[prefix + key]
        return (value.T if transpose else value).reshape(shape)

    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.from_numpy(from_jax(name, "", p.shape)))

    def first_batch(model, batch):
        """Loss, gradients and graph features of one batch."""
        model.zero_grad(set_to_none=True)
        loss, features = loss_fn(model, batch)
        features = features()
        loss.backward()
        grads = {n: p.grad.cpu().numpy().copy() for n, p in model.named_parameters()}
        model.zero_grad(set_to_none=True)
        return {"loss": loss.item(), "embeddings": features.detach().cpu().numpy(), "grads": grads}

    check_batch = Batch.from_data_list(dataset[: setup["batch_size"]])
    jaxcl = {"loss": float(jx["loss"]), "embeddings": jx["embeddings"], "grads": {}}
    for name, p in model.named_parameters():
        jaxcl["grads"][name] = from_jax(name, "grad:", tuple(p.shape))
    batch64 = check_batch.clone()
    batch64.x, batch64.diff_weight = batch64.x.double(), batch64.diff_weight.double()
    exact = first_batch(copy.deepcopy(model).double(), batch64)
    model.to(device)
    check = _common.deviations(jaxcl, first_batch(model, check_batch.to(device)), exact)

    if cuda:  # the timed steps' float32 matmuls in TF32, as JAX's default precision on a GPU
        torch.set_float32_matmul_precision("high")
    optimizer = torch.optim.Adam(model.parameters(), lr=opt["lr"])
    loader = DataLoader(dataset, batch_size=setup["batch_size"], shuffle=True)

    def run_epoch():
        for batch in loader:
            batch = batch.to(device, non_blocking=True)
            optimizer.zero_grad(set_to_none=True)
            loss, _ = loss_fn(model, batch)
            loss.backward()
            optimizer.step()
        wait()
        return loss.item()

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
        **({"matmul_precision": torch.get_float32_matmul_precision()} if cuda else {}),
        torch_geometric=torch_geometric.__version__,
        check=check,
        final_loss=final_loss,
        **_common.epoch_summary(seconds, len(dataset)),
    )


# --------------------------------------------------------------------------------------------
# Driver


def run_worker(kind: str, args, exchange: pathlib.Path) -> dict:
    cmd = [f"--worker={kind}", f"--exchange={exchange}", f"--data-dir={args.data_dir}"]
    cmd += f"--rows={args.row} --epochs={args.epochs} --warmup={args.warmup}".split()
    cmd += f"--torch-threads={args.torch_threads} --host-memory={args.host_memory}".split()
    cmd += [f"--torch-device={args.torch_device}"] if args.torch_device else []
    cmd += ["--quick"] if args.quick else []
    return _common.run_worker(__file__, cmd, f"{args.row} {kind}")


def describe(setup: dict) -> str:
    m, hp = setup["model"], setup["method"]
    what = "MVGRL" if setup["row"] == "mvgrl" else f"MVGRL + {hp['mixing']}-mix-wp"
    return (
        f"{setup['row']}: {what}, GCN {m['encoder_depth']} x {m['encoder_width']} per view, "
        f"batch {setup['batch_size']} ({setup['steps_per_epoch']} steps per epoch), Adam "
        f"{setup['optim']['lr']:g}"
    )


def plot(results: dict, path: pathlib.Path, env: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(4 * len(results) + 1, 4.2), squeeze=False)
    for ax, r in zip(axes[0], results.values(), strict=True):
        sides = {"jaxcl": r["jaxcl"], "PyG": r["pyg"]}
        ax.bar(list(sides), [s["graphs_per_s"] for s in sides.values()], color=["C0", "C1"])
        for name, s in sides.items():
            per_epoch = [r["setup"]["num_graphs"] / t for t in s["all_epoch_s"]]
            ax.plot([name] * len(per_epoch), per_epoch, "k.", alpha=0.5)
        title = describe(r["setup"]).replace(", batch", "\nbatch")
        ax.set_title(f"{title}\njaxcl {r['speedup']:.2f}x PyG", fontsize=8)
        ax.set_ylabel("graphs / s (median epoch; dots: each epoch)")
        ax.grid(True, axis="y", alpha=0.3)
    machine = f"{env['cpu_model']} ({env['cpu_count']} cores)"
    if not (env["jax_device"].startswith("cpu") and env["torch_device"] == "cpu"):
        machine = f"jaxcl on {env['jax_device']}, PyG on {env['torch_device']}"
    title = (
        f"m-Mix graph pretraining on IMDB-BINARY; {machine}\njax {env['jax']}, torch "
        f"{env['torch']}, PyG {env['torch_geometric']}"
    )
    _common.finish_figure(fig, path, title)


def main() -> None:
    args = parse_args()
    if _common.serve_worker(args, jax_worker, torch_worker):
        return

    env = _common.environment(
        ("jax", "jaxlib", "flax", "optax", "jraph", "torch", "torch_geometric")
    )
    _common.print_environment(env)
    results = {}
    for row in args.rows:
        args.row = row
        jax_r, setup, torch_r = _common.run_pair(run_worker, args)
        speedup = jax_r["graphs_per_s"] / torch_r["graphs_per_s"]
        results[row] = {"setup": setup, "jaxcl": jax_r, "pyg": torch_r, "speedup": speedup}
        env["jax_device"], env["torch_device"] = jax_r["device"], torch_r["device"]
        env["torch_threads"] = torch_r["threads"]
    del args.row
    env["host_memory"] = args.host_memory
    s = next(iter(results.values()))["setup"]
    print(
        f"# jaxcl on {env['jax_device']}; PyG on {env['torch_device']} with "
        f"{env['torch_threads']} threads; host memory {args.host_memory}\n# IMDB-BINARY: "
        f"{s['num_graphs']} graphs ({s['mean_nodes']:.1f} nodes on average, at most "
        f"{s['max_nodes']}), {s['num_features']} degree features, {s['edges']} edges, "
        f"{s['diffusion_edges']} diffusion entries; median of {args.epochs} epochs after "
        f"{args.warmup} warm-up"
    )
    for r in results.values():
        print(f"# {describe(r['setup'])}")
    precisions = {
        f"{name} {r[key]['matmul_precision']}"
        for r in results.values()
        for name, key in (("jaxcl", "jaxcl"), ("PyG", "pyg"))
        if "matmul_precision" in r[key]
    }
    if precisions:  # jaxcl: JAX's default (TF32 on Ampere or newer); PyG: set to TF32 as JAX's
        print(
            f"# timed float32 matmuls on the GPU: {', '.join(sorted(precisions))}; checks in "
            "full float32"
        )
    on_device = any("peak_device_bytes" in r[k] for r in results.values() for k in ("jaxcl", "pyg"))
    header = f"{'row':<6} {'side':<6} | {'graphs/s':>9} {'s/epoch':>8} {'min s':>7} | "
    header += f"{'peak RSS GiB':>12}" + (f" {'peak device GiB':>15}" if on_device else "")
    print("\n" + header + "\n" + "-" * len(header))
    for row, r in results.items():
        for name, key in (("jaxcl", "jaxcl"), ("PyG", "pyg")):
            x = r[key]
            line = (
                f"{row:<6} {name:<6} | {x['graphs_per_s']:9.1f} {x['median_epoch_s']:8.3f} "
                f"{x['min_epoch_s']:7.3f} | {x['peak_rss_bytes'] / GIB:12.2f}"
            )
            if on_device:
                peak = x.get("peak_device_bytes")
                line += f" {peak / GIB:15.2f}" if peak is not None else f" {'-':>15}"
            print(line)
    targets = []
    for row, r in results.items():
        w, setup = r["jaxcl"]["warmup"], r["setup"]
        print(
            f"\n{row}: jaxcl {len(setup['budgets'])} padding budgets, {w['budgets_used']} used "
            f"({w['budgets_compiled_ahead']} compiled ahead); {w['compilations']} "
            f"compilations ({w['compile_seconds']:.1f} s) in a warm-up of {w['seconds']:.1f} "
            f"s, {r['jaxcl']['compilations_during_timing']} during the timed epochs."
        )
        setting = f"{row}, initial weights, the first {setup['batch_size']} graphs"
        print(_common.describe_check(r["pyg"]["check"], setting, "graph"))
        target = {
            "target": f"{row}: jaxcl >= {TARGET}x PyG graphs/s",
            "status": "PASS" if r["speedup"] >= TARGET else "FAIL",
            "detail": f"{r['speedup']:.2f}x ({r['jaxcl']['graphs_per_s']:.1f} vs "
            f"{r['pyg']['graphs_per_s']:.1f} graphs/s)",
        }
        if r["jaxcl"]["compilations_during_timing"]:
            target["detail"] += "; compilations in the timed epochs"
        targets.append(target)
    print()
    for t in targets:
        print(f"[{t['status']}] {t['target']}: {t['detail']}")
    record = {"env": env, "rows": results, "targets": targets}
    settings = () if args.rows == ROWS else ("_".join(args.rows),)
    settings += _common.host_memory_settings(args)
    on_cpu = env["jax_device"].startswith("cpu") and env["torch_device"] == "cpu"
    settings += () if on_cpu else ("gpu",)
    _common.save_record(
        args, "mmix_graph_benchmark", record, lambda p: plot(results, p, env), settings=settings
    )


if __name__ == "__main__":
    main()
