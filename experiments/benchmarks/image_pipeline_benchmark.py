"""Benchmark: images/s the host image pipeline delivers, against what the SimCLR step consumes.

The pipeline is the trainer's own: ``jaxcl.data.open_images`` on a prepared tfds array_record
folder, then ``jaxcl.data.image_batches(source, batch_size=512, seed=0, epoch=0,
workers=w)`` (random-access reads, PNG decoding by tfds, stacking into ``uint8 [512, H, W,
C]``, in ``w`` grain worker processes or, for ``w = 0``, in threads of this process). For every
data set and worker count the script takes the first batch (its latency, worker start-up
included, is reported apart), then times the next ``--batches`` batches, drawn as fast as the
pipeline gives them: images/s = batch x batches / elapsed. The read-ahead filled while the
first batch was awaited (about one batch per worker) is counted in that time, which raises the
rate by a few per cent over 60 batches. The trainer pays the start-up once per run: one reader
(``image_batches(..., epochs=...)``) spans all its remaining epochs.

Data sets:

  1. Fashion-MNIST (28 x 28 x 1, the train split's 60,000 images), prepared offline from the
     Debian idx files (``jaxcl.data.prepare_fashion_mnist``) in --data-dir.
  2. A CIFAR-10-shaped set (32 x 32 x 3, 10 classes, --cifar-examples images), written once per
     run with ``jaxcl.data.write_tfds_images`` into a temporary folder (CIFAR itself is not
     available here). Its images are uniform uint8 noise, which PNG compresses worse than real
     photographs: the records are larger and decoding is somewhat slower than for real CIFAR-10,
     so its numbers are a lower bound for CIFAR-10.

tfds decodes PNG with OpenCV where it is installed, else with PIL (slower); the record's
``env.png_decoder`` says which ran. The files are read once before timing, so that the first
setting is not charged for disk reads the others are spared (training reads the same files
every epoch).

The step's consumption is the SimCLR training step's images/s at batch 512, read from
simclr_step_benchmark.json in --out (written by experiments/benchmarks/simclr_step_benchmark.py),
or given with --step-images-per-second. Each setting's ratio delivered / consumed must exceed 1:
then the step never waits on data. The trainer's default is ``config.data.workers`` of the
image task (2); the target is judged there.

The pipeline is measured alone. During training on a CPU-only machine the step computes on the
same cores as the pipeline's workers, so the delivered rate there is lower than measured here;
with an accelerator the step leaves the host's cores to the pipeline.

Usage (from the repository root, with jaxcl installed or on PYTHONPATH):

  python experiments/benchmarks/image_pipeline_benchmark.py              # full run, minutes
  python experiments/benchmarks/image_pipeline_benchmark.py --quick      # batch 64, seconds
  python experiments/benchmarks/image_pipeline_benchmark.py --workers 0 2 4 \\
      --step-images-per-second 1500

Writes image_pipeline_benchmark[_quick].json and .png to --out (default
experiments/benchmarks/results).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import pathlib
import tempfile
import time

# Light imports only at the top: grain's worker processes may import this script again.
import _common  # experiments/benchmarks/_common.py: the script's folder is on sys.path

# tfds warns once per process (here and in every grain worker, which imports this script again)
# that it decodes with PIL for want of OpenCV; the record says which decoder ran instead.
logging.getLogger("absl").addFilter(lambda r: "OpenCV is not installed" not in r.getMessage())

DEFAULT_OUT = pathlib.Path(__file__).resolve().parent / "results"
STEP_BENCHMARK = "simclr_step_benchmark.json"
STEP_BATCH = 512


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data-dir",
        type=pathlib.Path,
        default=pathlib.Path("~/tensorflow_datasets"),
        help="folder where Fashion-MNIST is prepared (prepared there from the Debian idx "
        "files if it is not yet; default ~/tensorflow_datasets)",
    )
    parser.add_argument("--batch-size", type=int, default=STEP_BATCH)
    parser.add_argument(
        "--batches", type=int, default=60, help="timed batches per setting, after the first"
    )
    parser.add_argument(
        "--workers", type=int, nargs="+", default=[0, 1, 2], help="grain worker processes"
    )
    parser.add_argument(
        "--cifar-examples",
        type=int,
        default=50000,
        help="images of the synthetic CIFAR-10-shaped set (CIFAR-10's train split: 50000)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--step-images-per-second",
        type=float,
        help="the step's consumption; default: read from --out/" + STEP_BENCHMARK,
    )
    parser.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--quick", action="store_true", help="batch 64, 10 batches, 2000 CIFAR-shaped images"
    )
    args = parser.parse_args()
    if args.quick:
        args.batch_size, args.batches, args.cifar_examples = 64, 10, 2000
    for name in ("batch_size", "batches", "cifar_examples"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be positive")
    if any(w < 0 for w in args.workers):
        parser.error("--workers must be >= 0")
    return args


# --------------------------------------------------------------------------------------------
# The step's consumption


def step_consumption(args) -> dict | None:
    """The SimCLR step's images/s at batch 512: ``--step-images-per-second``, else the fastest
    batch-512 record of the step benchmark's JSON (a record without a batch size counts when it
    is the only one). None when neither is there."""
    if args.step_images_per_second is not None:
        return {"images_per_s": args.step_images_per_second, "source": "--step-images-per-second"}
    path = args.out / STEP_BENCHMARK
    if not path.exists():
        print(
            f"# step benchmark not run yet ({path} does not exist; run "
            "experiments/benchmarks/simclr_step_benchmark.py or pass --step-images-per-second)"
        )
        return None
    record = json.loads(path.read_text())
    batch = record.get("setup", {}).get("batch")
    rate = record.get("jaxcl", {}).get("images_per_s")
    if batch != STEP_BATCH or not isinstance(rate, int | float):
        print(
            f"# {path} holds no jaxcl images/s at batch {STEP_BATCH} (setup.batch = {batch!r}); "
            "pass --step-images-per-second"
        )
        return None
    key = "jaxcl.images_per_s"
    env = record.get("env", {})
    device = record.get("device")
    return {
        "images_per_s": rate,
        "source": f"{path.name}: {key}",
        "device": device or env.get("jax_device"),
        "cpu_model": env.get("cpu_model"),
        "date": env.get("date"),
    }


# --------------------------------------------------------------------------------------------
# Data sets


def warm_page_cache(root: pathlib.Path) -> int:
    """Reads every file under ``root`` once; returns the bytes read."""
    total = 0
    for path in sorted(root.rglob("*")):
        if path.is_file():
            with open(path, "rb") as f:
                while chunk := f.read(1 << 24):
                    total += len(chunk)
    return total


def fashion_mnist(args):
    from jaxcl import data

    root = pathlib.Path(os.path.expanduser(os.fspath(args.data_dir)))
    data.prepare_fashion_mnist(root)
    warm_page_cache(root / "fashion_mnist")
    return data.open_images("fashion_mnist", "train", root)


def cifar_like(args, tmp: pathlib.Path):
    """A CIFAR-10-shaped set of uniform noise in ``tmp``; also returns its writing time."""
    import numpy as np

    from jaxcl import data

    rng = np.random.default_rng(args.seed)
    images = rng.integers(0, 256, (args.cifar_examples, 32, 32, 3), dtype=np.uint8)
    labels = rng.integers(0, 10, args.cifar_examples)
    start = time.perf_counter()
    data.write_tfds_images(tmp, "cifar_like", {"train": (images, labels)}, num_classes=10)
    write_s = time.perf_counter() - start
    warm_page_cache(tmp / "cifar_like")
    return data.open_images("cifar_like", "train", tmp), write_s


def folder_bytes(source) -> int | None:
    """The bytes of the split's array_record files, where tfds says where they are."""
    try:
        root = pathlib.Path(os.fspath(source.records.dataset_info.data_dir))
    except AttributeError:
        return None
    return sum(p.stat().st_size for p in root.glob(f"*-{source.split}.array_record*"))


# --------------------------------------------------------------------------------------------
# Timing


def time_delivery(source, *, workers: int, args) -> dict:
    """First-batch latency and images/s over the next ``args.batches`` batches."""
    from jaxcl import data

    start = time.perf_counter()
    batches = data.image_batches(
        source, batch_size=args.batch_size, seed=args.seed, epoch=0, workers=workers
    )
    try:
        images, _, _ = next(batches)
        first_s = time.perf_counter() - start
        shape = tuple(images.shape)
        start = time.perf_counter()
        for _ in range(args.batches):
            next(batches)
        elapsed = time.perf_counter() - start
    finally:
        batches.close()  # stops grain's threads or worker processes
    images_per_s = args.batch_size * args.batches / elapsed
    return {
        "workers": workers,
        "batch_shape": shape,
        "first_batch_s": first_s,
        "timed_batches": args.batches,
        "elapsed_s": elapsed,
        "ms_per_batch": elapsed / args.batches * 1e3,
        "images_per_s": images_per_s,
    }


# --------------------------------------------------------------------------------------------
# Report


def print_header(step):
    consumed = f"x step ({step['images_per_s']:.0f}/s)" if step else "x step"
    print(
        f"{'data set':<14} {'workers':>7} | {'first batch s':>13} | {'ms/batch':>9} "
        f"{'images/s':>10} | {consumed:>18}"
    )
    print("-" * 84)


def print_row(name: str, r: dict):
    ratio = f"{r['ratio_to_step']:18.2f}" if r.get("ratio_to_step") is not None else f"{'-':>18}"
    print(
        f"{name:<14} {r['workers']:>7} | {r['first_batch_s']:13.2f} | {r['ms_per_batch']:9.1f} "
        f"{r['images_per_s']:10.0f} | {ratio}",
        flush=True,
    )


def check_target(results: dict, step: dict | None, default_workers: int) -> dict:
    target = (
        f"the pipeline (workers={default_workers}, the image task's default) delivers more "
        "images/s than the SimCLR step consumes at batch 512, on every data set"
    )
    rows = {
        name: next((r for r in rs if r["workers"] == default_workers), None)
        for name, rs in results.items()
    }
    if step is None:
        return {"target": target, "status": "SKIP", "detail": "step benchmark not run yet"}
    if any(r is None for r in rows.values()):
        detail = f"workers={default_workers} not in --workers"
        return {"target": target, "status": "SKIP", "detail": detail}
    ratios = {name: r["ratio_to_step"] for name, r in rows.items()}
    status = "PASS" if min(ratios.values()) > 1 else "FAIL"
    detail = ", ".join(
        f"{name} {ratio:.2f}x the step's consumption" for name, ratio in ratios.items()
    )
    return {"target": target, "status": status, "detail": detail}


def plot(results: dict, step: dict | None, path: pathlib.Path, title: str):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    names = list(results)
    workers = sorted({r["workers"] for rs in results.values() for r in rs})
    width = 0.8 / len(workers)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for i, w in enumerate(workers):
        values = [
            next((r["images_per_s"] for r in results[n] if r["workers"] == w), 0) for n in names
        ]
        x = np.arange(len(names)) + (i - (len(workers) - 1) / 2) * width
        bars = ax.bar(x, values, width, label=f"{w} workers" if w else "0 workers (threads)")
        ax.bar_label(bars, fmt="%.0f", fontsize=8)
    if step is not None:
        ax.axhline(step["images_per_s"], color="k", linestyle="--", label="SimCLR step consumes")
    ax.set_xticks(np.arange(len(names)), names)
    ax.set_ylabel("images/s delivered")
    ax.set_title(title, fontsize=9)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def png_decoder() -> str:
    """What tfds decodes PNG with: OpenCV where it is installed, else PIL (slower)."""
    import importlib.util

    return "opencv" if importlib.util.find_spec("cv2") else "PIL"


def main() -> None:
    args = parse_args()
    env = _common.environment(("jax", "jaxlib", "grain", "tensorflow-datasets", "array-record"))
    env["png_decoder"] = png_decoder()
    _common.print_environment(env)
    from jaxcl import training

    default_workers = training.base_config("fashion_mnist_images", "simclr").data.workers
    step = step_consumption(args)
    if step is not None:
        print(f"# step consumption: {step['images_per_s']:.0f} images/s ({step['source']})")
        if step.get("cpu_model") and step["cpu_model"] != env["cpu_model"]:
            print(f"# note: the step was timed on another CPU ({step['cpu_model']})")
    print(
        f"# image_batches at batch {args.batch_size}: first batch (worker start-up included), "
        f"then {args.batches} batches timed; tfds decodes PNG with {env['png_decoder']}"
    )

    results, sets = {}, {}
    with tempfile.TemporaryDirectory(prefix="jaxcl_image_pipeline_") as tmp:
        sources = [("fashion_mnist", lambda: fashion_mnist(args))]
        sources.append(("cifar_like", lambda: cifar_like(args, pathlib.Path(tmp))))
        header_printed = False
        for name, open_source in sources:
            opened = open_source()
            source, write_s = opened if isinstance(opened, tuple) else (opened, None)
            needed = args.batches + 1
            available = len(source) // args.batch_size
            if needed > available:
                raise SystemExit(
                    f"{name}: {needed} batches of {args.batch_size} needed, the split has "
                    f"{available}; lower --batches"
                )
            sets[name] = {
                "examples": len(source),
                "image_shape": list(source.image_shape),
                "record_bytes": folder_bytes(source),
                "write_s": write_s,
            }
            if write_s is not None:
                print(f"# {name}: {len(source)} noise images written in {write_s:.1f} s")
            if not header_printed:
                print_header(step)
                header_printed = True
            results[name] = []
            for w in args.workers:
                r = time_delivery(source, workers=w, args=args)
                r["ratio_to_step"] = (
                    None if step is None else r["images_per_s"] / step["images_per_s"]
                )
                results[name].append(r)
                print_row(name, r)

    target = check_target(results, step, default_workers)
    print(f"\n[{target['status']}] {target['target']}: {target['detail']}")
    if args.batch_size != STEP_BATCH and step is not None:
        print(f"# note: the pipeline ran at batch {args.batch_size}, the step at {STEP_BATCH}")
    record = {
        "env": env,
        "batch_size": args.batch_size,
        "default_workers": default_workers,
        "step": step,
        "data_sets": sets,
        "results": results,
        "target": target,
    }
    title = (
        f"image_batches at batch {args.batch_size}, {env['cpu_model']} "
        f"({env['cpu_count']} cpus), grain {env['grain']}"
    )
    _common.save_record(
        args,
        "image_pipeline_benchmark",
        record,
        lambda path: plot(results, step, path, title),
    )


if __name__ == "__main__":
    main()
