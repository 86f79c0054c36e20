"""Benchmark: one DACL training step of the 12-layer MLP, jaxcl against the same step in PyTorch.

jaxcl's side is the trainer's own step: ``jaxcl.methods.DACL`` built from
``jaxcl.training.base_config('fashion_mnist', 'dacl')`` (12 x (Linear -> BN -> ReLU) of width
W, head 2 x (Linear -> BN -> ReLU) of W + (Linear -> BN) to 128), the default step
(``make_default_train_step``) jitted with ``donate_argnums=0``, LARS from the method's
``optimizer`` (``config.optim``) on the warm-up + cosine schedule. PyTorch's side is written
here: the same network (bias-free ``nn.Linear``, ``BatchNorm1d(momentum=0.1)``), DACL's linear
Mixup-noise (two views, every row mixed with another row of the batch, ``lam ~ U(alpha, 1)``),
both views through the model as one batch of 2N, SimCLR's NT-Xent over the 2N views, and a
LARS that is ``optax.lars`` with jaxcl's masks (weight decay and trust ratio on kernels
only), in float32 with
``torch.set_num_threads(os.cpu_count())`` (``--torch-threads``). With ``--torch-compile`` (on
by default, off in ``--quick``) the PyTorch step is also timed under ``torch.compile`` (model
and loss compiled, optimizer eager); the target is judged against the faster PyTorch variant.

Before timing, the PyTorch side loads jaxcl's initial weights and the two views jaxcl's step
draws and makes one update; the script reports the difference of the two losses, and how far
each side's new weights lie from the same update computed in float64 by PyTorch (and from
each other): the two sides compute the same function, up to float32 rounding (which a
12-layer network with batch norm magnifies in some layers' gradients).

Each side runs in its own subprocess (so neither framework's thread pool disturbs the
other, and each peak RSS is its own): warm-up steps, then ``--steps`` timed steps, each
waited for; examples/s = batch / median step time.

Target (issue): jaxcl's step is at least as fast as PyTorch's, at batch 4096 on the same
machine.

Time on a quiet machine: on cores shared with other jobs PyTorch's OpenMP threads wait for
each other at every operation (seen here: a GIN epoch 25x slower with 2 threads than with 1
on 2 busy cores), which says nothing about either library. ``--torch-threads`` sets PyTorch's
thread count (default: all cores); jaxcl uses XLA's default (all cores).

Usage (from the repository root; ``pip install -e '.[bench]'`` for torch and PyG):

  python experiments/benchmarks/train_step_benchmark.py                  # W = 1024 and 256
  python experiments/benchmarks/train_step_benchmark.py --widths 1024 --steps 20
  python experiments/benchmarks/train_step_benchmark.py --quick          # seconds

Writes train_step_benchmark[_quick].json and .png to --out (default
experiments/benchmarks/results).
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import pathlib
import statistics
import tempfile
import time

import _common  # experiments/benchmarks/_common.py: the script's folder is on sys.path
from _common import GIB

DEFAULT_OUT = pathlib.Path(__file__).resolve().parent / "results"
NUM_FEATURES = 784  # Fashion-MNIST
DEPTH, HEAD_DEPTH, EMBED_DIM = 12, 3, 128
ALPHA, TEMPERATURE = 0.9, 0.5
LR, WEIGHT_DECAY, MOMENTUM, TRUST_COEFFICIENT = 0.1, 1e-6, 0.9, 0.001
# The paper-scale schedule's length (1000 epochs of Fashion-MNIST at batch 4096); the step
# whose weights are compared is the end of warm-up, where the learning rate is LR.
STEPS_PER_EPOCH, EPOCHS, WARMUP_EPOCHS = 15, 1000, 10


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--widths", type=int, nargs="+", default=[1024, 256])
    parser.add_argument("--batch", type=int, default=4096)
    parser.add_argument("--steps", type=int, default=10, help="timed steps per side")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps after compiling")
    parser.add_argument(
        "--torch-compile",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="also time the PyTorch step under torch.compile (default: on, off with --quick)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT)
    _common.add_worker_flags(parser)
    parser.add_argument("--quick", action="store_true", help="W=256, batch 1024, 3 steps")
    parser.add_argument("--width", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.widths, args.batch, args.steps, args.warmup = [256], 1024, 3, 1
    if args.torch_compile is None:
        args.torch_compile = not args.quick
    return args


def schedule_at(step: int) -> float:
    """jaxcl's warm-up + cosine schedule (``optim.warmup_cosine``) in plain Python."""
    total, warmup = STEPS_PER_EPOCH * EPOCHS, STEPS_PER_EPOCH * WARMUP_EPOCHS
    if step < warmup:
        return LR * step / warmup
    progress = min(step - warmup, total - warmup) / (total - warmup)
    return LR * 0.5 * (1.0 + math.cos(math.pi * progress))


def summarize(seconds: list[float], batch: int) -> dict:
    median = statistics.median(seconds)
    return {
        "median_s": median,
        "min_s": min(seconds),
        "all_s": seconds,
        "examples_per_s": batch / median,
    }


# --------------------------------------------------------------------------------------------
# jaxcl


def jax_worker(args) -> dict:
    import dataclasses

    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax
    from flax import nnx

    from jaxcl import methods, mixers, models, optim, training

    rss_after_imports = _common.peak_rss_bytes()
    config = training.base_config("fashion_mnist", "dacl", optimizer="lars")
    config.method.update(alpha=ALPHA, temperature=TEMPERATURE)
    config.model.encoder_depth, config.model.encoder_width = DEPTH, args.width
    config.model.head_depth, config.model.head_width = HEAD_DEPTH, args.width
    config.model.embed_dim = EMBED_DIM
    config.optim.lr, config.optim.weight_decay = LR, WEIGHT_DECAY
    config.optim.momentum, config.optim.trust_coefficient = MOMENTUM, TRUST_COEFFICIENT
    config.train.batch_size = args.batch
    training.validate(config)
    # What the trainer does first with train.reuse_host_memory on, before JAX's CPU backend
    # exists (off in base_config(); --host-memory default to compare).
    reused = args.host_memory == "reuse" and training.reuse_host_memory()

    method = methods.DACL(config)
    spec = methods.DataSpec("tabular", NUM_FEATURES, 10)
    model = models.set_compute_dtype(method.build(spec, nnx.Rngs(args.seed)), "float32")
    graphdef, params, model_state = nnx.split(model, nnx.Param, ...)
    schedule = optim.warmup_cosine(
        peak=LR,
        total_steps=STEPS_PER_EPOCH * EPOCHS,
        warmup_steps=STEPS_PER_EPOCH * WARMUP_EPOCHS,
    )
    tx = method.optimizer(schedule)  # LARS of config.optim, as the trainer builds it
    # Start at the end of warm-up, so that the compared update has the peak learning rate.
    # optax's schedule counts its own steps: its counter starts there too.
    check_step = STEPS_PER_EPOCH * WARMUP_EPOCHS
    state = training.TrainState.create(params, model_state, tx)
    state = dataclasses.replace(
        state,
        step=jnp.asarray(check_step, jnp.int32),
        opt_state=optax.tree_utils.tree_set(state.opt_state, count=jnp.asarray(check_step)),
    )
    ctx = training.StepContext(method, graphdef, tx, schedule, config)
    train_step = jax.jit(training.make_default_train_step(ctx), donate_argnums=0)
    rng = np.random.default_rng(args.seed)
    x = rng.random((args.batch, NUM_FEATURES), dtype=np.float32)  # pixel intensities in [0, 1)
    batch = methods.Batch(x=jnp.asarray(x), y=jnp.zeros((args.batch,), jnp.int32))
    key = jax.random.key(args.seed)

    # The views DACL.loss draws at this step (its documented use of the key), for PyTorch.
    k1, k2 = jax.random.split(jax.random.fold_in(key, check_step))
    x1 = mixers.linear_mixup(k1, batch.x, alpha=ALPHA)
    x2 = mixers.linear_mixup(k2, batch.x, alpha=ALPHA)

    flat = _common.flat_state
    before = {**flat(state.params), **flat(state.model_state)}

    start = time.perf_counter()
    compiled = train_step.lower(state, batch, key).compile()
    compile_s = time.perf_counter() - start
    xla = _common.xla_memory(compiled)
    xla_bytes = None if xla is None else xla["total_bytes"]

    state, metrics = compiled(state, batch, key)
    after = flat(state.params)
    np.savez(args.exchange / "jax.npz", x1=np.asarray(x1), x2=np.asarray(x2), **before)
    np.savez(args.exchange / "jax_after.npz", **after)
    check = {"loss": float(metrics["loss"]), "lr": float(metrics["lr"]), "step": check_step}

    state, metrics, seconds = _common.time_steps(compiled, state, batch, key, args)
    return _common.jax_report(
        reused=reused,
        rss_after_imports=rss_after_imports,
        check=check,
        compile_s=compile_s,
        xla_bytes=xla_bytes,
        final_loss=float(metrics["loss"]),
        **summarize(seconds, args.batch),
    )


# --------------------------------------------------------------------------------------------
# PyTorch


def torch_worker(args) -> dict:
    import numpy as np
    import torch
    import torch.nn.functional as F
    from torch import nn

    reused, rss_after_imports = _common.torch_worker_setup(args)

    class MLP(nn.Module):
        """``Linear(no bias) -> BatchNorm1d -> ReLU`` per layer; no ReLU after the last
        one when ``final_activation`` is False (the head)."""

        def __init__(self, sizes, final_activation=True):
            super().__init__()
            pairs = list(zip(sizes[:-1], sizes[1:], strict=True))
            self.linears = nn.ModuleList(nn.Linear(a, b, bias=False) for a, b in pairs)
            self.norms = nn.ModuleList(nn.BatchNorm1d(b, momentum=0.1) for _, b in pairs)
            self.final_activation = final_activation

        def forward(self, x):
            last = len(self.linears) - 1
            for i, (linear, norm) in enumerate(zip(self.linears, self.norms, strict=True)):
                x = norm(linear(x))
                if i < last or self.final_activation:
                    x = F.relu(x)
            return x

    class Model(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.encoder = MLP([NUM_FEATURES] + [width] * DEPTH)
            self.head = MLP(
                [width] * HEAD_DEPTH + [EMBED_DIM], final_activation=False
            )  # width -> width -> width -> 128

        def forward(self, x):
            return self.head(self.encoder(x))

    from _torch_parts import LARS, nt_xent

    def linear_mixup(x, alpha):
        """DACL's linear Mixup-noise: each row mixed with another row of the batch."""
        n = x.shape[0]
        partners = (torch.arange(n) + torch.randint(1, n, (n,))) % n
        lam = torch.empty(n, 1, dtype=x.dtype).uniform_(alpha, 1.0)
        return torch.lerp(x[partners], x, lam)  # lam * x + (1 - lam) * x[partners]

    torch.manual_seed(args.seed)
    model = Model(args.width)
    jx = dict(np.load(args.exchange / "jax.npz"))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("weight") and ".linears." in name:
                p.copy_(torch.from_numpy(jx[name.replace("weight", "kernel")].T))
            elif name.endswith("weight"):
                p.copy_(torch.from_numpy(jx[name.replace("weight", "scale")]))
            else:
                p.copy_(torch.from_numpy(jx[name]))
        for name, b in model.named_buffers():
            if name.endswith("running_mean"):
                b.copy_(torch.from_numpy(jx[name.replace("running_mean", "mean")]))
            elif name.endswith("running_var"):
                b.copy_(torch.from_numpy(jx[name.replace("running_var", "var")]))
    model.train()

    def make_lars(model):
        kernels = [p for n, p in model.named_parameters() if ".linears." in n]
        others = [p for n, p in model.named_parameters() if ".linears." not in n]
        return LARS(
            [{"params": kernels, "adapt": True}, {"params": others, "adapt": False}],
            momentum=MOMENTUM,
            weight_decay=WEIGHT_DECAY,
            trust_coefficient=TRUST_COEFFICIENT,
        )

    opt = make_lars(model)
    x = torch.from_numpy(
        np.random.default_rng(args.seed).random((args.batch, NUM_FEATURES), np.float32)
    )

    def loss_of(x1, x2):
        """Both views through the model as one batch of 2N (batch norm sees all 2N rows)."""
        z1, z2 = model(torch.cat([x1, x2])).chunk(2)
        return nt_xent(z1, z2, TEMPERATURE)

    def make_step(loss_fn):
        def update(x1, x2, lr):
            loss = loss_fn(x1, x2)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step(lr)
            return loss.detach()

        def train_step(x, lr):
            with torch.no_grad():
                x1, x2 = linear_mixup(x, ALPHA), linear_mixup(x, ALPHA)
            return update(x1, x2, lr)

        return update, train_step

    update, train_step = make_step(loss_of)

    # One update on jaxcl's views and weights: PyTorch's loss and new weights against jaxcl's,
    # and both against the same update in float64 (how far float32 rounding alone moves it).
    check_step = json.loads((args.exchange / "jax_check.json").read_text())
    x1, x2 = torch.from_numpy(jx["x1"]), torch.from_numpy(jx["x2"])
    model64 = copy.deepcopy(model).double()
    z1, z2 = model64(torch.cat([x1, x2]).double()).chunk(2)
    loss64 = nt_xent(z1, z2, TEMPERATURE)
    loss64.backward()
    make_lars(model64).step(check_step["lr"])
    loss = update(x1, x2, check_step["lr"])
    after = dict(np.load(args.exchange / "jax_after.npz"))
    exact = dict(model64.named_parameters())
    # Per tensor, the largest deviation relative to the largest entry of the exact update.
    worst = {"jaxcl": ("", 0.0), "pytorch": ("", 0.0), "jaxcl_vs_pytorch": ("", 0.0)}
    for name, p in model.named_parameters():
        key = name.replace("weight", "kernel" if ".linears." in name else "scale")
        jax_new, old = after[key], jx[key]
        if ".linears." in name:  # flax kernels are [in, out], torch weights [out, in]
            jax_new, old = jax_new.T, old.T
        new64 = exact[name].detach().numpy()
        scale = max(float(np.abs(new64 - old).max()), 1e-30)
        torch_new = p.detach().numpy()
        for side, a, b in (
            ("jaxcl", jax_new, new64),
            ("pytorch", torch_new, new64),
            ("jaxcl_vs_pytorch", jax_new, torch_new),
        ):
            relative = float(np.abs(a - b).max()) / scale
            worst[side] = max(worst[side], (name, relative), key=lambda w: w[1])
    check = {
        "loss": float(loss),
        "loss_float64": float(loss64),
        "loss_abs_diff": abs(float(loss) - check_step["loss"]),
        **{f"update_error_{side}": w[1] for side, w in worst.items()},
        **{f"update_error_{side}_tensor": w[0] for side, w in worst.items()},
    }

    def time_steps(step_fn):
        for i in range(args.warmup):
            step_fn(x, schedule_at(check_step["step"] + 1 + i))
        seconds = []
        for i in range(args.steps):
            lr = schedule_at(check_step["step"] + 1 + args.warmup + i)
            start = time.perf_counter()
            loss = step_fn(x, lr)
            seconds.append(time.perf_counter() - start)
        return {"final_loss": float(loss), **summarize(seconds, args.batch)}

    result = {"check": check, "eager": time_steps(train_step)}
    if args.torch_compile:
        # Model + loss compiled (forward and, through AOTAutograd, backward); the optimizer
        # stays eager: its learning rate changes every step.
        _, compiled_step = make_step(torch.compile(loss_of))
        start = time.perf_counter()
        compiled_step(x, schedule_at(check_step["step"]))
        result["compile_s"] = time.perf_counter() - start
        result["compiled"] = time_steps(compiled_step)
    return _common.torch_report(reused=reused, rss_after_imports=rss_after_imports, **result)


# --------------------------------------------------------------------------------------------
# Driver


def run_worker(kind: str, width: int, args, exchange: pathlib.Path) -> dict:
    cmd = [
        f"--worker={kind}",
        f"--width={width}",
        f"--batch={args.batch}",
        f"--steps={args.steps}",
        f"--warmup={args.warmup}",
        f"--seed={args.seed}",
        f"--exchange={exchange}",
        f"--torch-threads={args.torch_threads}",
        f"--host-memory={args.host_memory}",
        "--torch-compile" if args.torch_compile else "--no-torch-compile",
    ]
    return _common.run_worker(__file__, cmd, f"{kind} (W={width})")


def pytorch_variants(r: dict) -> list[tuple[str, dict]]:
    out = [("pytorch eager", r["torch"]["eager"])]
    if "compiled" in r["torch"]:
        out.append(("pytorch compile", r["torch"]["compiled"]))
    return out


def plot(results: list[dict], path: pathlib.Path, env: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    names = ["jaxcl"] + [n for n, _ in pytorch_variants(results[0])]
    bar = 0.8 / len(names)
    for i, name in enumerate(names):
        values = []
        for r in results:
            timings = dict([("jaxcl", r["jax"]), *pytorch_variants(r)])
            values.append(timings[name]["examples_per_s"] if name in timings else 0.0)
        xs = [j + (i - (len(names) - 1) / 2) * bar for j in range(len(results))]
        ax.bar(xs, values, bar, label=name)
    ax.set_xticks(range(len(results)), [f"W={r['width']}" for r in results])
    ax.set_ylabel("examples / s (batch / median step)")
    ax.set_title(
        f"DACL step, 12-layer MLP, batch {results[0]['batch']}\n"
        f"{env['cpu_model']} ({env['cpu_count']} cores), jax {env['jax']}, torch {env['torch']}",
        fontsize=9,
    )
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    args = parse_args()
    if args.worker:
        if args.worker == "jax":
            result = jax_worker(args)
            (args.exchange / "jax_check.json").write_text(json.dumps(result["check"]))
        else:
            result = torch_worker(args)
        print(json.dumps(result), flush=True)
        return

    env = _common.environment(("jax", "jaxlib", "flax", "optax", "torch"))
    _common.print_environment(env)
    print(
        f"# DACL step: MLP {DEPTH} x W + head {HEAD_DEPTH} layers -> {EMBED_DIM}, batch "
        f"{args.batch} (2 x {args.batch} rows through the model), LARS, float32; median of "
        f"{args.steps} steps after {args.warmup} warm-up"
    )
    header = (
        f"{'W':>5} | {'jaxcl ex/s':>11} {'ms':>8} | {'torch eager ex/s':>16} {'ms':>8} | "
        f"{'torch compile ex/s':>18} {'ms':>8} | {'jaxcl/best':>10} | {'|dloss|':>8}"
    )
    print(header)
    print("-" * len(header))
    results = []
    for width in args.widths:
        with tempfile.TemporaryDirectory() as tmp:
            exchange = pathlib.Path(tmp)
            jax_r = run_worker("jax", width, args, exchange)
            torch_r = run_worker("torch", width, args, exchange)
        r = {"width": width, "batch": args.batch, "jax": jax_r, "torch": torch_r}
        best = max(t["examples_per_s"] for _, t in pytorch_variants(r))
        r["speedup_vs_best_pytorch"] = jax_r["examples_per_s"] / best
        r["speedup_vs_pytorch_eager"] = jax_r["examples_per_s"] / torch_r["eager"]["examples_per_s"]
        results.append(r)
        eager = torch_r["eager"]
        compiled = torch_r.get("compiled")
        comp = (
            f"{compiled['examples_per_s']:18.0f} {compiled['median_s'] * 1e3:8.1f}"
            if compiled
            else f"{'-':>18} {'-':>8}"
        )
        print(
            f"{width:>5} | {jax_r['examples_per_s']:11.0f} {jax_r['median_s'] * 1e3:8.1f} | "
            f"{eager['examples_per_s']:16.0f} {eager['median_s'] * 1e3:8.1f} | {comp} | "
            f"{r['speedup_vs_best_pytorch']:10.2f} | {torch_r['check']['loss_abs_diff']:8.1e}",
            flush=True,
        )

    env["jax_device"] = results[0]["jax"]["device"]
    env["torch_device"] = results[0]["torch"]["device"]
    env["torch_threads"] = results[0]["torch"]["threads"]
    env["host_memory"] = args.host_memory
    print(
        f"# host memory: {args.host_memory} (freed memory kept for reuse: jaxcl "
        f"{results[0]['jax']['host_memory_reused']}, PyTorch "
        f"{results[0]['torch']['host_memory_reused']})"
    )
    print(
        f"\n# jaxcl on {env['jax_device']}; PyTorch on {env['torch_device']} with "
        f"{env['torch_threads']} threads"
    )
    for r in results:
        j, t = r["jax"], r["torch"]
        c = t["check"]
        print(
            f"W={r['width']}: same model: loss jaxcl {j['check']['loss']:.6f} vs PyTorch "
            f"{c['loss']:.6f} (|diff| {c['loss_abs_diff']:.1e}; float64 {c['loss_float64']:.6f}). "
            "One LARS update from the same weights and views, worst tensor's deviation from the "
            f"float64 update, relative to its size: jaxcl {c['update_error_jaxcl']:.1e} "
            f"({c['update_error_jaxcl_tensor']}), PyTorch {c['update_error_pytorch']:.1e} "
            f"({c['update_error_pytorch_tensor']}); jaxcl vs PyTorch "
            f"{c['update_error_jaxcl_vs_pytorch']:.1e}."
        )
        print(
            f"W={r['width']}: jaxcl compile {j['compile_s']:.1f} s, XLA buffers "
            f"{(j['xla_bytes'] or 0) / GIB:.2f} GiB; peak RSS jaxcl "
            f"{j['peak_rss_bytes'] / GIB:.2f} GiB, PyTorch {t['peak_rss_bytes'] / GIB:.2f} GiB"
            + (f"; torch.compile {t['compile_s']:.1f} s" if "compile_s" in t else "")
        )

    targets = []
    for r in results:
        ok = r["speedup_vs_best_pytorch"] >= 1.0
        best_name = max(pytorch_variants(r), key=lambda nv: nv[1]["examples_per_s"])[0]
        targets.append(
            {
                "target": f"W={r['width']}, batch {r['batch']}: jaxcl >= PyTorch examples/s",
                "status": "PASS" if ok else "FAIL",
                "detail": f"{r['speedup_vs_best_pytorch']:.2f}x the best PyTorch ({best_name}); "
                f"{r['speedup_vs_pytorch_eager']:.2f}x PyTorch eager",
            }
        )
    if args.batch != 4096:
        for t in targets:
            t["status"] = "SKIP"
            t["detail"] += " (the target is at batch 4096)"
    print()
    for t in targets:
        print(f"[{t['status']}] {t['target']}: {t['detail']}")

    record = {
        "env": env,
        "setup": {
            "num_features": NUM_FEATURES,
            "depth": DEPTH,
            "head_depth": HEAD_DEPTH,
            "embed_dim": EMBED_DIM,
            "alpha": ALPHA,
            "temperature": TEMPERATURE,
            "lars": {
                "lr": LR,
                "weight_decay": WEIGHT_DECAY,
                "momentum": MOMENTUM,
                "trust_coefficient": TRUST_COEFFICIENT,
            },
        },
        "results": results,
        "targets": targets,
    }
    _common.save_record(
        args,
        "train_step_benchmark",
        record,
        lambda path: plot(results, path, env),
        settings=_common.host_memory_settings(args),
    )


if __name__ == "__main__":
    main()
