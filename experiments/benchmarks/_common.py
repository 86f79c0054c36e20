"""What the jaxcl-against-PyTorch benchmark scripts share: worker processes and their set-up
and report, memory, the machine's description, and the same-model check of float32 results
against float64.

Each benchmark runs jaxcl and PyTorch in separate subprocesses of its own script (``--worker``)
so that neither library's threads, allocator or imports affect the other's timings.
"""

from __future__ import annotations

import datetime
import json
import os
import pathlib
import platform
import resource
import subprocess
import sys

GIB = 1 << 30

# Progress lines reach a log file as they are printed (a redirected stdout is block-buffered:
# a long run's log stayed empty, and a killed run's lines were lost).
if hasattr(sys.stdout, "reconfigure"):
    sys.stdout.reconfigure(line_buffering=True)

# The folder holding the graph data sets (tu_gin/, planetoid/; config.data.data_dir):
# $JAXCL_DATA_DIR as for the trainer, else the shared data folder beside the repository.
DEFAULT_DATA = pathlib.Path(
    os.environ.get("JAXCL_DATA_DIR")
    or pathlib.Path(__file__).resolve().parents[3] / "shared" / "data"
)


def peak_rss_bytes() -> int:
    """This process's peak resident memory so far.

    Linux's ``VmHWM`` (of this process's own memory map, so a worker started by a larger
    parent reports its own peak: ``getrusage``'s ``ru_maxrss`` keeps the parent's across
    ``fork`` + ``exec``), else ``getrusage`` (Linux reports KiB).
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def add_host_memory_flag(parser) -> None:
    """``--host-memory``: both workers keep freed memory for reuse (default) or not."""
    parser.add_argument(
        "--host-memory",
        choices=["reuse", "default"],
        default="reuse",
        help="reuse (default; what jaxcl's trainer does with config.train.reuse_host_memory, "
        "on in the GRACE and DACL-graph configs): glibc keeps freed memory for reuse, on both "
        "sides, and jaxcl dispatches on the calling thread; default: the allocator's own "
        "settings on both sides",
    )


def add_worker_flags(parser) -> None:
    """The flags every jaxcl-vs-PyTorch script takes: ``--host-memory``, ``--torch-threads``,
    and the hidden ``--worker`` / ``--exchange`` of its subprocesses."""
    import argparse

    add_host_memory_flag(parser)
    parser.add_argument(
        "--torch-threads",
        type=int,
        default=os.cpu_count(),
        help="torch.set_num_threads for the PyTorch side (default: all cores)",
    )
    parser.add_argument("--worker", choices=["jax", "torch"], help=argparse.SUPPRESS)
    parser.add_argument("--exchange", type=pathlib.Path, help=argparse.SUPPRESS)


def torch_worker_setup(args) -> tuple[bool, int]:
    """A PyTorch worker's first lines: its thread count, the host-memory setting of jaxcl's
    side (PyTorch computes on the calling thread, so glibc's settings govern its blocks), and
    the RSS after imports. Returns ``(host memory reused, rss after imports)``."""
    import torch

    from jaxcl import _hostmem  # glibc settings only: no JAX in this process

    torch.set_num_threads(args.torch_threads)
    reused = args.host_memory == "reuse" and _hostmem.keep_freed_memory()
    return bool(reused), peak_rss_bytes()


def torch_device(name: str | None):
    """A PyTorch worker's device (``name``, else cuda where PyTorch sees one, else cpu) and a
    function that waits for its queued work (a GPU runs asynchronously to the host)."""
    import torch

    device = torch.device(name or ("cuda" if torch.cuda.is_available() else "cpu"))

    def wait():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    return device, wait


def jax_gpu_fields() -> dict:
    """On a GPU, the precision of float32 matmuls in JAX's timed steps (``default``: TF32
    there); nothing on the CPU."""
    import jax

    if jax.devices()[0].platform == "cpu":
        return {}
    precision = getattr(jax.config, "jax_default_matmul_precision", None)
    return {"matmul_precision": precision or "default"}


def flat_state(tree, prefix: str = "") -> dict:
    """An ``nnx.State`` (or any pytree) as ``{'encoder.linears.0.kernel': array}`` copies."""
    import jax
    import numpy as np
    from flax import nnx

    if isinstance(tree, nnx.State):
        tree = nnx.to_pure_dict(tree)
    return {
        # A copy: a donated state's buffers may be reused, and np.asarray may share them.
        prefix + jax.tree_util.keystr(path, simple=True, separator="."): np.array(leaf, copy=True)
        for path, leaf in jax.tree_util.tree_leaves_with_path(tree)
    }


def xla_memory(compiled) -> dict | None:
    """A compiled step's memory as XLA plans it (donated arguments alias the outputs and are
    counted once), or None where the backend does not say."""
    mem = compiled.memory_analysis()
    if mem is None:
        return None
    return {
        "argument_bytes": mem.argument_size_in_bytes,
        "output_bytes": mem.output_size_in_bytes,
        "alias_bytes": mem.alias_size_in_bytes,
        "temp_bytes": mem.temp_size_in_bytes,
        "total_bytes": mem.argument_size_in_bytes
        + mem.output_size_in_bytes
        - mem.alias_size_in_bytes
        + mem.temp_size_in_bytes,
    }


def time_steps(compiled, state, batch, key, args):
    """``args.warmup`` untimed calls of a jitted step ``compiled(state, batch, key) -> (state,
    metrics)``, then ``args.steps`` timed ones, each waited for. Returns ``(state, metrics,
    seconds per timed step)``."""
    import time

    import jax

    for _ in range(args.warmup):
        state, metrics = compiled(state, batch, key)
    jax.block_until_ready(state)
    seconds = []
    for _ in range(args.steps):
        start = time.perf_counter()
        state, metrics = compiled(state, batch, key)
        jax.block_until_ready((state, metrics))
        seconds.append(time.perf_counter() - start)
    return state, metrics, seconds


def trainer_parts(config):
    """The trainer's own run (``training.Run``), initial state (placed as the trainer's jitted
    init places it: a state placed later would compile the step twice), jitted step and mesh
    for ``config`` on one device: ``(run, state, train_step, mesh)``. Sets
    ``config.mesh.data = 1`` and validates the config."""
    import jax

    from jaxcl import methods, training

    config.mesh.data = 1
    training.validate(config)
    method = methods.get(config.method.name)(config)
    mesh = training.make_mesh(1)
    with jax.set_mesh(mesh):
        run = training.Run.build(config, method, mesh)
        state = jax.jit(run.init_state, out_shardings=run.shardings)()
        return run, state, run.train_step(), mesh


def epoch_summary(seconds: list[float], num_graphs: int) -> dict:
    """Median, minimum and all epoch times, and graphs/s at the median."""
    import statistics

    median = statistics.median(seconds)
    return {
        "median_epoch_s": median,
        "min_epoch_s": min(seconds),
        "all_epoch_s": seconds,
        "graphs_per_s": num_graphs / median,
    }


def time_graph_epochs(
    task,
    train_step,
    state,
    key,
    *,
    warmup: int,
    epochs: int,
    batch_of,
    num_graphs: int,
    max_in_flight: int = 2,
):
    """jaxcl's side of a graph-pretraining benchmark: ``warmup`` untimed epochs of the graph
    task's batches, then one step on every padding budget a timed epoch uses that none did
    yet (so no compilation falls into the timed epochs), then ``epochs`` timed epochs.

    Steps run as in ``jaxcl.training``'s loop: each host batch put on the device
    (``task.place``), at most ``max_in_flight`` steps in flight. ``batch_of(indices,
    budget)`` builds the host batch of those graph indices padded to ``budget``. Returns
    ``(state, last metrics, report fields)``: the warm-up's seconds and compilations, the
    compilations during the timed epochs (0 when all is well) and the epoch times
    (:func:`epoch_summary` over ``num_graphs`` graphs per epoch).
    """
    import time

    import jax

    compiles = {"count": 0, "seconds": 0.0}

    def on_event(name, seconds, **kwargs):
        if name == "/jax/core/compile/backend_compile_duration":
            compiles["count"] += 1
            compiles["seconds"] += seconds

    jax.monitoring.register_event_duration_secs_listener(on_event)

    def run(state, batches):
        pending = []
        for batch in batches:
            state, metrics = train_step(state, task.place(batch), key)
            pending.append(metrics)
            if len(pending) > max_in_flight:
                jax.block_until_ready(pending.pop(0))
        jax.block_until_ready((state, pending))
        return state, pending[-1] if pending else None

    batcher = task.train_batcher
    start = time.perf_counter()
    used = set()
    for epoch in range(warmup):
        state, _ = run(state, task.batches(epoch))
        used |= {batcher.budget_for(i) for i in batcher.batch_indices(epoch)}
    timed = range(warmup, warmup + epochs)
    extra = {}
    for epoch in timed:
        for indices in batcher.batch_indices(epoch):
            budget = batcher.budget_for(indices)
            if budget not in used and budget not in extra:
                extra[budget] = batch_of(indices, budget)
    state, _ = run(state, extra.values())
    warmup_fields = {
        "seconds": time.perf_counter() - start,
        "compilations": compiles["count"],
        "compile_seconds": compiles["seconds"],
        "budgets_used": len(used | set(extra)),
        "budgets_compiled_ahead": len(extra),
    }
    compiles.update(count=0, seconds=0.0)
    seconds = []
    metrics = None
    for epoch in timed:
        start = time.perf_counter()
        state, metrics = run(state, task.batches(epoch))
        seconds.append(time.perf_counter() - start)
    fields = {"warmup": warmup_fields, "compilations_during_timing": compiles["count"]}
    return state, metrics, fields | epoch_summary(seconds, num_graphs)


def jax_report(*, reused: bool, rss_after_imports: int, **fields) -> dict:
    """A jaxcl worker's result: the device, the host-memory setting, its measurements and its
    memory."""
    import jax

    device = jax.devices()[0]
    stats = device.memory_stats() if device.platform != "cpu" else None
    if stats and "peak_bytes_in_use" in stats:  # the device allocator's peak (GPU), unless
        fields.setdefault("peak_device_bytes", stats["peak_bytes_in_use"])  # the worker's own
    return {
        "device": f"{device.platform}: {device.device_kind} x {jax.device_count()}",
        "host_memory_reused": bool(reused),
        **fields,
        "rss_after_imports_bytes": rss_after_imports,
        "peak_rss_bytes": peak_rss_bytes(),
    }


def torch_report(*, reused: bool, rss_after_imports: int, device: str = "cpu", **fields) -> dict:
    """A PyTorch worker's result: its device and threads, the host-memory setting, its
    measurements and its memory (on a GPU also the peak of PyTorch's device allocator)."""
    import torch

    if device != "cpu":
        fields["peak_device_bytes"] = torch.cuda.max_memory_allocated()
        device = f"{device}: {torch.cuda.get_device_name()}"
    return {
        "device": device,
        "threads": torch.get_num_threads(),
        "host_memory_reused": bool(reused),
        **fields,
        "rss_after_imports_bytes": rss_after_imports,
        "peak_rss_bytes": peak_rss_bytes(),
    }


def serve_worker(args, jax_worker, torch_worker) -> bool:
    """In a worker subprocess (``--worker``), runs its side and prints its result as one JSON
    line; returns whether this process was a worker."""
    if not args.worker:
        return False
    result = jax_worker(args) if args.worker == "jax" else torch_worker(args)
    print(json.dumps(result), flush=True)
    return True


def print_environment(env: dict) -> None:
    """The first line of a benchmark's report: versions, CPU, load, date."""
    versions = ", ".join(
        f"{label} {env[name]}"
        for name, label in (("jax", "jax"), ("torch", "torch"), ("torch_geometric", "PyG"))
        if name in env
    )
    print(
        f"# {versions}, {env['cpu_model']}"
        + (f" ({env['cpu_signature']})" if env.get("cpu_signature") else "")
        + f", {env['cpu_count']} cpus, load average "
        f"{env['load_average_at_start']}, {env['date']}, commit {env.get('commit', 'unknown')}"
    )


def run_pair(run_one, args) -> tuple[dict, dict, dict]:
    """Runs the jaxcl worker, then the PyTorch worker (``run_one(kind, args, exchange)``),
    passing files through a temporary exchange folder; returns ``(jaxcl result, the setup
    jaxcl wrote for PyTorch, PyTorch result)``."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        exchange = pathlib.Path(tmp)
        jax_result = run_one("jax", args, exchange)
        setup = json.loads((exchange / "setup.json").read_text())
        torch_result = run_one("torch", args, exchange)
    return jax_result, setup, torch_result


def run_worker(script: str, flags: list[str], label: str) -> dict:
    """Runs ``python script *flags`` and returns the last JSON line it printed.

    Raises RuntimeError with the last lines of its output when it fails or prints no JSON.
    """
    proc = subprocess.run(
        [sys.executable, script, *flags], capture_output=True, text=True, check=False
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-5:])
        raise RuntimeError(f"{label} worker failed with exit {proc.returncode}: {tail}")
    return json.loads(lines[-1])


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, else what ``platform`` knows."""
    try:
        with open("/proc/cpuinfo") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
        if names:
            return names[0]
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_signature() -> str:
    """``'family F model M'`` from /proc/cpuinfo (x86), else ``''``: tells apart CPU
    generations that share a model name (``'AMD EPYC'`` is a Zen 3 as well as a Zen 5)."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in ("cpu family", "model") and key not in fields:
                    fields[key] = value.strip()
    except OSError:
        return ""
    if len(fields) < 2:
        return ""
    return f"family {fields['cpu family']} model {fields['model']}"


def git_commit() -> str:
    """The checkout's commit (short), with ``-dirty`` when tracked files other than result
    files (``results/`` folders) have uncommitted changes; ``'unknown'`` outside a git
    checkout. ``$JAXCL_BENCH_COMMIT``, where set, is taken as it is (a copy of the checkout
    without its ``.git``, as sent to a GPU machine)."""
    here = pathlib.Path(__file__).resolve().parent

    def git(*argv):
        return subprocess.run(
            ["git", *argv], cwd=here, capture_output=True, text=True, check=True
        ).stdout.strip()

    if os.environ.get("JAXCL_BENCH_COMMIT"):  # a copy of the tree without .git (a GPU host)
        return os.environ["JAXCL_BENCH_COMMIT"]
    try:
        commit = git("rev-parse", "--short", "HEAD")
        # The benchmarks' own result files are tracked and rewritten by every run: not code.
        results = ":(exclude,glob)**/results/**"
        dirty = git("status", "--porcelain", "--untracked-files=no", "--", ":/", results)
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit + ("-dirty" if dirty else "")


def is_ancestor(ancestor: str, commit: str) -> bool:
    """Whether ``commit`` (a record's, ``-dirty`` allowed) is ``ancestor`` or descends from it
    in this checkout; False where git cannot say (no checkout, an unknown commit)."""
    here = pathlib.Path(__file__).resolve().parent
    argv = ["git", "merge-base", "--is-ancestor", ancestor, commit.removesuffix("-dirty")]
    try:
        subprocess.run(argv, cwd=here, capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return False
    return True


def environment(packages: tuple[str, ...]) -> dict:
    """Date, commit, package versions, CPU model and count, thread settings and load at the
    start."""
    from importlib import metadata

    env = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "commit": git_commit(),
    }
    missing = []
    for name in packages:
        try:
            env[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            missing.append(name)
    if missing:
        raise SystemExit(
            f"{pathlib.Path(sys.argv[0]).name}: needs {', '.join(missing)}, not installed here: "
            "pip install -e '.[bench]' (from the repository root) installs the benchmarks' "
            "PyTorch side"
        )
    env.update(
        {
            "cpu_model": cpu_model(),
            "cpu_signature": cpu_signature(),
            "cpu_count": os.cpu_count(),
            "python": platform.python_version(),
            "xla_flags": os.environ.get("XLA_FLAGS", ""),
            "omp_num_threads": os.environ.get("OMP_NUM_THREADS", ""),
            "load_average_at_start": os.getloadavg(),
        }
    )
    return env


def deviations(jaxcl: dict, pytorch: dict, exact: dict) -> dict:
    """How far jaxcl's and PyTorch's float32 results lie from PyTorch's float64 ones (the same
    computation without float32 rounding), and from each other.

    Each argument holds ``loss`` (a float), ``embeddings`` (an array) and ``grads`` (name ->
    array, PyTorch's layout). Embeddings: the largest absolute deviation over the mean
    standard deviation of the exact embeddings over rows (their spread, not their size).
    Gradients: the l2 norm of the deviation over all parameters, relative to the exact
    gradient's.
    """
    import numpy as np

    spread = float(exact["embeddings"].std(axis=0).mean())
    norm = sum(float(np.sum(g.astype(np.float64) ** 2)) for g in exact["grads"].values()) ** 0.5
    out = {f"loss_{k}": v["loss"] for k, v in (("jaxcl", jaxcl), ("pytorch", pytorch))}
    out["loss_float64"] = exact["loss"]
    for label, a, b in (
        ("jaxcl", jaxcl, exact),
        ("pytorch", pytorch, exact),
        ("jaxcl_vs_pytorch", jaxcl, pytorch),
    ):
        diff = sum(
            float(np.sum((a["grads"][k].astype(np.float64) - b["grads"][k]) ** 2))
            for k in exact["grads"]
        )
        out[f"loss_deviation_{label}"] = abs(a["loss"] - b["loss"])
        out[f"embeddings_deviation_{label}"] = float(
            np.abs(a["embeddings"].astype(np.float64) - b["embeddings"]).max() / spread
        )
        out[f"grads_deviation_{label}"] = diff**0.5 / max(norm, 1e-30)
    return out


def describe_check(c: dict, setting: str, rows: str) -> str:
    """One sentence on :func:`deviations`' result ``c``."""
    return (
        f"Same model ({setting}): loss jaxcl {c['loss_jaxcl']:.6f}, PyG {c['loss_pytorch']:.6f}, "
        f"float64 {c['loss_float64']:.6f}. Deviation from the float64 result, jaxcl / PyG "
        f"float32 (jaxcl vs PyG float32): {rows} embeddings "
        f"{c['embeddings_deviation_jaxcl']:.1e} / {c['embeddings_deviation_pytorch']:.1e} "
        f"({c['embeddings_deviation_jaxcl_vs_pytorch']:.1e}) of their spread, gradients "
        f"{c['grads_deviation_jaxcl']:.1e} / {c['grads_deviation_pytorch']:.1e} "
        f"({c['grads_deviation_jaxcl_vs_pytorch']:.1e}), relative l2."
    )


def save_record(args, name: str, record: dict, draw, *, settings: tuple[str, ...] = ()) -> None:
    """Write ``record`` and the script's arguments to ``args.out/STEM.json``, ``draw`` its plot
    to ``args.out/STEM.png``, and say so.

    ``STEM`` is ``name``, then ``_quick`` under ``--quick``, then ``_<setting>`` for each of
    ``settings`` (the non-default settings of the run, e.g. ``host_default``), so that a run
    with other settings does not overwrite the default run's figures. The machine's load
    average at the end goes into ``record['env']`` where there is one.
    """
    stem = name + ("_quick" if getattr(args, "quick", False) else "")
    stem += "".join(f"_{s}" for s in settings)
    if "env" in record:
        record["env"]["load_average_at_end"] = os.getloadavg()
    arguments = {k: str(v) if isinstance(v, pathlib.Path) else v for k, v in vars(args).items()}
    record = (
        {"env": record["env"], "args": arguments, **record}
        if "env" in record
        else {"args": arguments, **record}
    )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{stem}.json").write_text(json.dumps(record, indent=2))
    draw(args.out / f"{stem}.png")
    print(f"\nwrote {args.out / (stem + '.json')} and {args.out / (stem + '.png')}")


def host_memory_settings(args) -> tuple[str, ...]:
    """``('host_<setting>',)`` unless ``--host-memory`` is the default (``reuse``)."""
    return () if args.host_memory == "reuse" else (f"host_{args.host_memory}",)


def finish_figure(fig, path: pathlib.Path, title: str) -> None:
    """A figure's title (small, it carries the setup), layout, PNG at ``path``; closed."""
    import matplotlib.pyplot as plt

    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
