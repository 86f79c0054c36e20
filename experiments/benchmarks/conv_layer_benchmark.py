"""Benchmark: ResNet-18's convolutions one by one on the CPU, jaxcl (XLA:CPU) against PyTorch.

``simclr_step_benchmark.py`` times the whole SimCLR step; this script asks where the step's
time can go. It takes every distinct convolution of ResNet-18 with the CIFAR stem on 32x32
images (the stem, the 3x3 convolutions of each stage, the stride-2 3x3 convolution and the
1x1 shortcut that open stages 2-4) at a batch of ``--batch`` views, and times each of the three
computations a training step makes of it: the forward pass, the input gradient and the kernel
gradient, in float32.

jaxcl's side is what the trainer runs: :func:`jaxcl.models.conv_general_dilated` (ResNet's
convolution) with XLA:CPU's Eigen convolutions (:func:`jaxcl.training.eigen_cpu_convolutions`,
the trainer's default), each computation jitted on its own (the gradients through
``jax.vjp``, whose unused forward output XLA removes). PyTorch's side is ``F.conv2d`` and
``torch.ops.aten.convolution_backward`` with only the input or only the weight gradient
requested (oneDNN on x86), in the channels-first layout a PyTorch model uses by default.
Both sides first compute the same values: PyTorch's forward output and gradients on the
arrays jaxcl drew (relative max difference reported).

Each op: ``--steps`` timed calls after one untimed call, the median. GFLOP/s count
``2 * batch * H_out * W_out * C_in * C_out * k * k`` per computation. The summary weighs each
layer by how often ResNet-18 has it and gives both sides' convolution time per view (forward +
both gradients), hence the images/s a SimCLR step (two views per image) could reach if it did
nothing but its convolutions.

Each side runs in its own subprocess (so neither thread pool disturbs the other), both with
freed host memory kept for reuse (``--host-memory reuse``, the default, as the trainer's
``train.reuse_host_memory`` and the other benchmarks; otherwise every call maps fresh pages
for its output, which at batch 256 costs both sides more than some of the convolutions).
Time it on a quiet machine.

    python experiments/benchmarks/conv_layer_benchmark.py            # batch 256, 5 steps
    python experiments/benchmarks/conv_layer_benchmark.py --quick    # batch 8, 2 steps
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import _common  # noqa: E402

DEFAULT_OUT = pathlib.Path(__file__).resolve().parent / "results"
OPS = ("forward", "input_grad", "kernel_grad")
# ResNet-18, CIFAR stem, 32x32 inputs: (name, H_in, C_in, C_out, stride, kernel, count).
LAYERS = (
    ("stem 3->64", 32, 3, 64, 1, 3, 1),
    ("s1 3x3 64", 32, 64, 64, 1, 3, 4),
    ("s2 3x3 64->128 /2", 32, 64, 128, 2, 3, 1),
    ("s2 1x1 64->128 /2", 32, 64, 128, 2, 1, 1),
    ("s2 3x3 128", 16, 128, 128, 1, 3, 3),
    ("s3 3x3 128->256 /2", 16, 128, 256, 2, 3, 1),
    ("s3 1x1 128->256 /2", 16, 128, 256, 2, 1, 1),
    ("s3 3x3 256", 8, 256, 256, 1, 3, 3),
    ("s4 3x3 256->512 /2", 8, 256, 512, 2, 3, 1),
    ("s4 1x1 256->512 /2", 8, 256, 512, 2, 1, 1),
    ("s4 3x3 512", 4, 512, 512, 1, 3, 3),
)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=256, help="views per convolution")
    parser.add_argument("--steps", type=int, default=5, help="timed calls per op")
    parser.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT)
    parser.add_argument("--quick", action="store_true", help="batch 8, 2 steps")
    _common.add_worker_flags(parser)
    args = parser.parse_args()
    if args.quick:
        args.batch, args.steps = 8, 2
    for name in ("batch", "steps"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} = {getattr(args, name)}: expected >= 1")
    return args


def out_size(h: int, stride: int) -> int:
    """Output side of a SAME (3x3: padding 1) or 1x1 convolution of stride ``stride``."""
    return -(-h // stride)


def gflop(batch: int, layer) -> float:
    _, h, cin, cout, stride, k, _ = layer
    return 2 * batch * out_size(h, stride) ** 2 * cin * cout * k * k / 1e9


def median_ms(fn, steps: int) -> float:
    fn()  # untimed: compilation and first-touch
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    times.sort()
    return 1e3 * times[len(times) // 2]


def jax_worker(args) -> dict:
    from jaxcl import training

    eigen = training.eigen_cpu_convolutions()  # as the trainer, before JAX's backend exists
    reused = args.host_memory == "reuse" and training.reuse_host_memory()
    import jax
    import numpy as np

    from jaxcl.models import conv_general_dilated

    rng = np.random.default_rng(0)
    results = []
    for i, layer in enumerate(LAYERS):
        name, h, cin, cout, stride, k, _ = layer
        ho = out_size(h, stride)
        x = rng.standard_normal((args.batch, h, h, cin), np.float32)
        w = (rng.standard_normal((k, k, cin, cout)) / np.sqrt(k * k * cin)).astype(np.float32)
        g = rng.standard_normal((args.batch, ho, ho, cout), np.float32)
        np.savez(args.exchange / f"in_{i}.npz", x=x, w=w, g=g)
        padding = ((k // 2, k // 2),) * 2

        def conv(x, w, stride=stride, padding=padding):
            return conv_general_dilated(
                x, w, (stride, stride), padding, dimension_numbers=("NHWC", "HWIO", "NHWC")
            )

        fns = {
            "forward": jax.jit(conv),
            "input_grad": jax.jit(lambda x, w, g, conv=conv: jax.vjp(conv, x, w)[1](g)[0]),
            "kernel_grad": jax.jit(lambda x, w, g, conv=conv: jax.vjp(conv, x, w)[1](g)[1]),
        }
        xd, wd, gd = map(jax.device_put, (x, w, g))
        row = {"layer": name}
        values = {}
        for op, fn in fns.items():
            operands = (xd, wd) if op == "forward" else (xd, wd, gd)
            values[op] = np.asarray(fn(*operands))
            row[f"{op}_ms"] = median_ms(
                lambda fn=fn, operands=operands: fn(*operands).block_until_ready(), args.steps
            )
        np.savez(args.exchange / f"jax_{i}.npz", **values)
        results.append(row)
        print(f"jaxcl {name}: " + ", ".join(f"{op} {row[op + '_ms']:.1f} ms" for op in OPS))
    return {
        "eigen_convolutions": bool(eigen),
        "host_memory_reused": bool(reused),
        "layers": results,
    }


def torch_worker(args) -> dict:
    import numpy as np
    import torch
    import torch.nn.functional as F

    reused, _ = _common.torch_worker_setup(args)  # threads, glibc's settings as jaxcl's
    results = []
    for i, layer in enumerate(LAYERS):
        name, _, _, _, stride, k, _ = layer
        arrays = np.load(args.exchange / f"in_{i}.npz")
        x = torch.from_numpy(arrays["x"].transpose(0, 3, 1, 2).copy())
        w = torch.from_numpy(arrays["w"].transpose(3, 2, 0, 1).copy())
        g = torch.from_numpy(arrays["g"].transpose(0, 3, 1, 2).copy())
        pad = k // 2

        def backward(mask, x=x, w=w, g=g, stride=stride, pad=pad):
            grads = torch.ops.aten.convolution_backward(
                g, x, w, None, [stride] * 2, [pad] * 2, [1] * 2, False, [0] * 2, 1, mask
            )
            return grads[0] if mask[0] else grads[1]

        fns = {
            "forward": lambda x=x, w=w, stride=stride, pad=pad: F.conv2d(x, w, None, stride, pad),
            "input_grad": lambda backward=backward: backward([True, False, False]),
            "kernel_grad": lambda backward=backward: backward([False, True, False]),
        }
        row = {"layer": name}
        values = {}
        with torch.no_grad():
            for op, fn in fns.items():
                value = fn().numpy()
                # back to jaxcl's layouts: NCHW -> NHWC, OIHW -> HWIO
                values[op] = value.transpose(2, 3, 1, 0) if op == "kernel_grad" else (
                    value.transpose(0, 2, 3, 1)
                )  # fmt: skip
                row[f"{op}_ms"] = median_ms(fn, args.steps)
        np.savez(args.exchange / f"torch_{i}.npz", **values)
        results.append(row)
        print(f"PyTorch {name}: " + ", ".join(f"{op} {row[op + '_ms']:.1f} ms" for op in OPS))
    return {"torch_threads": args.torch_threads, "host_memory_reused": reused, "layers": results}


def run_one(kind: str, args, exchange: pathlib.Path) -> dict:
    flags = [
        "--worker", kind, "--exchange", str(exchange), "--batch", str(args.batch),
        "--steps", str(args.steps), "--torch-threads", str(args.torch_threads),
        "--host-memory", args.host_memory,
    ]  # fmt: skip
    return _common.run_worker(__file__, flags, kind)


def same_values(exchange: pathlib.Path) -> list[dict]:
    """Per layer and op: max |jaxcl - PyTorch| over max |PyTorch|."""
    import numpy as np

    out = []
    for i in range(len(LAYERS)):
        ours, theirs = np.load(exchange / f"jax_{i}.npz"), np.load(exchange / f"torch_{i}.npz")
        out.append(
            {
                op: float(np.abs(ours[op] - theirs[op]).max() / np.abs(theirs[op]).max())
                for op in OPS
            }
        )
    return out


def summarize(args, jax_r: dict, torch_r: dict, checks: list[dict]) -> dict:
    rows = []
    totals = {"jaxcl": dict.fromkeys(OPS, 0.0), "pytorch": dict.fromkeys(OPS, 0.0)}
    for layer, ours, theirs, check in zip(
        LAYERS, jax_r["layers"], torch_r["layers"], checks, strict=True
    ):
        count = layer[-1]
        work = gflop(args.batch, layer)
        row = {"layer": layer[0], "count": count, "gflop": work, "max_rel_diff": check}
        for side, r in (("jaxcl", ours), ("pytorch", theirs)):
            for op in OPS:
                ms = r[f"{op}_ms"]
                row[f"{side}_{op}_ms"] = ms
                row[f"{side}_{op}_gflops"] = work / (ms / 1e3)
                totals[side][op] += count * ms
        rows.append(row)
    summary = {}
    for side, t in totals.items():
        per_view_ms = sum(t.values()) / args.batch
        summary[side] = {
            **{f"{op}_ms": v for op, v in t.items()},
            "total_ms": sum(t.values()),
            "ms_per_view": per_view_ms,
            # a SimCLR step makes every computation for two views of each image
            "simclr_images_per_s_bound": 1e3 / (2 * per_view_ms),
        }
    summary["jaxcl_over_pytorch_time"] = (
        summary["jaxcl"]["total_ms"] / summary["pytorch"]["total_ms"]
    )
    return {"layers": rows, "resnet18": summary}


def plot(record: dict, batch: int, path: pathlib.Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    rows = record["layers"]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.8), sharey=True)
    y = np.arange(len(rows))
    for ax, op in zip(axes, OPS, strict=True):
        ax.barh(y - 0.2, [r[f"jaxcl_{op}_gflops"] for r in rows], 0.4, label="jaxcl (XLA:CPU)")
        ax.barh(y + 0.2, [r[f"pytorch_{op}_gflops"] for r in rows], 0.4, label="PyTorch")
        ax.set_yticks(y, [r["layer"] for r in rows], fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("GFLOP/s")
        ax.set_title(op.replace("_", " "), fontsize=10)
    axes[0].legend(fontsize=8)
    s = record["resnet18"]
    env = record["env"]
    title = (
        f"ResNet-18 (CIFAR stem) convolutions, float32, batch {batch} views; "
        f"{env['cpu_model']}, {env['cpu_count']} cpus, commit {env['commit']}\n"
        f"all of ResNet-18's convolutions, forward + both gradients: jaxcl "
        f"{s['jaxcl']['total_ms']:.0f} ms, PyTorch {s['pytorch']['total_ms']:.0f} ms "
        f"({s['jaxcl_over_pytorch_time']:.2f}x the time)"
    )
    _common.finish_figure(fig, path, title)


def main() -> None:
    args = parse_args()
    if _common.serve_worker(args, jax_worker, torch_worker):
        return
    env = _common.environment(("jax", "jaxlib", "torch"))
    _common.print_environment(env)
    with tempfile.TemporaryDirectory() as tmp:
        exchange = pathlib.Path(tmp)
        jax_r = run_one("jax", args, exchange)
        torch_r = run_one("torch", args, exchange)
        checks = same_values(exchange)
    record = {"env": env, "jaxcl": jax_r, "pytorch": torch_r}
    record.update(summarize(args, jax_r, torch_r, checks))
    worst = max(max(c.values()) for c in checks)
    print(f"\nSame values: largest relative difference {worst:.1e} (max |diff| / max |PyTorch|)")
    print(f"{'layer':22s} {'x':>2s} " + " ".join(f"{op:>22s}" for op in OPS))
    for r in record["layers"]:
        cells = " ".join(
            f"{r[f'jaxcl_{op}_ms']:8.1f} /{r[f'pytorch_{op}_ms']:8.1f} ms  " for op in OPS
        )
        print(f"{r['layer']:22s} {r['count']:2d} {cells}")
    s = record["resnet18"]
    for side in ("jaxcl", "pytorch"):
        t = s[side]
        print(
            f"{side}: all convolutions {t['total_ms']:.0f} ms per {args.batch} views "
            f"(forward {t['forward_ms']:.0f}, input grad {t['input_grad_ms']:.0f}, kernel grad "
            f"{t['kernel_grad_ms']:.0f}); a SimCLR step of nothing but these: "
            f"{t['simclr_images_per_s_bound']:.1f} images/s"
        )
    print(f"jaxcl takes {s['jaxcl_over_pytorch_time']:.2f}x PyTorch's time for them")
    if worst > 1e-4:
        raise SystemExit(f"jaxcl and PyTorch disagree: relative difference {worst:.1e}")
    _common.save_record(
        args,
        "conv_layer_benchmark",
        record,
        lambda p: plot(record, args.batch, p),
        settings=_common.host_memory_settings(args),
    )


if __name__ == "__main__":
    main()
