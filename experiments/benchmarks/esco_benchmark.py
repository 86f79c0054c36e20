"""ESCo (rff, sorf, positive) against exact InfoNCE: time and peak memory from N = 1e3 to 1e6.

Each point is forward + backward (``jax.value_and_grad`` with respect to both views) of the
loss on N pairs of d = 128 embeddings with D = 1024 random features, run in a fresh
subprocess so that its peak resident memory (``VmHWM``) is its own. On a GPU (any device but
the CPU) the worker also reports the device allocator's peak (``memory_stats()``'s
``peak_bytes_in_use``, and its ``bytes_limit``), which is then the memory the table and the
targets mean; the parent process never initialises the device itself (a small subprocess
reads the device's description). XLA's buffer assignment for the compiled program
(arguments + outputs + temporaries) is reported next to it. InfoNCE is run while XLA says it
fits in ``--memory-limit-gib`` (and, on a GPU, in the device's ``bytes_limit``); past that the
table says how much it would need. ``infonce_blockwise`` is the same exact loss with memory
linear in N (``infonce(block_size=1024)``, Inf-CL's tiling); its time is quadratic, so a point
whose time, extrapolated as N^2 from the previous one, would pass ``--time-limit-s`` is
skipped with that estimate.

``--communication`` compiles the data-parallel forward + backward step on 8 (fake) devices
instead (``shard_map`` over rows, the loss's ``axis_name='data'``) and reports the bytes its
collectives operate on, read from the compiled HLO (:func:`jaxcl.training.collective_bytes`):
ESCo's random-feature methods all-reduce D-vectors, exact InfoNCE all-gathers the embeddings.

Targets (issue #2): ESCo runs N = 1e6 within 6 GiB peak memory on CPU (on a GPU: of device
memory), and its time grows linearly, t(1e6) / t(1e5) <= 12.

    python experiments/benchmarks/esco_benchmark.py            # full sweep (~10 min, 2 cores)
    python experiments/benchmarks/esco_benchmark.py --quick    # seconds
    python experiments/benchmarks/esco_benchmark.py --accuracy # error of the kernel term vs tau
    python experiments/benchmarks/esco_benchmark.py --communication  # bytes, 8 fake devices
    python experiments/benchmarks/esco_benchmark.py --ns 10000,100000,1000000 --time-limit-s 60
                                                    # on a GPU: esco_benchmark_gpu.json

Writes ``esco_benchmark[_quick][_<platform>].json`` and ``.png`` (``esco_accuracy[_<platform>]
.json``, ``esco_communication.json``) to ``--out``; ``_<platform>`` is ``--platform-tag``
(default: JAX's backend, e.g. ``gpu``, and nothing on CPU), so that a GPU run does not
overwrite the CPU results. The communication count always runs on fake CPU devices.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import _common  # experiments/benchmarks/_common.py: the script's folder is on sys.path

METHODS = ("rff", "sorf", "positive", "infonce", "infonce_blockwise")
# The blockwise exact InfoNCE's tile (jaxcl.losses.infonce(block_size=...)).
BLOCK = 1024
GIB = 1 << 30


def _worker(args) -> None:
    """Measures one (method, N) point and prints one JSON line."""
    import jax
    import jax.numpy as jnp

    n, d = args.n, args.dim
    ka, kb, kf = jax.random.split(jax.random.key(0), 3)
    z_a = jax.random.normal(ka, (n, d), jnp.float32)
    z_b = z_a + 0.5 * jax.random.normal(kb, (n, d), jnp.float32)
    loss = _loss_fn(args.method, kf, args)

    step = jax.jit(jax.value_and_grad(loss, argnums=(0, 1)))
    compiled = step.lower(z_a, z_b).compile()
    mem = compiled.memory_analysis()
    xla_bytes = None
    if mem is not None:
        xla_bytes = mem.argument_size_in_bytes + mem.output_size_in_bytes + mem.temp_size_in_bytes
    device = jax.devices()[0]
    result = dict(method=args.method, n=n, xla_peak_bytes=xla_bytes, device=device.device_kind)
    # On a GPU: the device allocator's pool (XLA_PYTHON_CLIENT_MEM_FRACTION of its memory).
    stats = device.memory_stats() if device.platform != "cpu" else None
    device_limit = (stats or {}).get("bytes_limit")
    if xla_bytes is not None and xla_bytes > args.memory_limit_gib * GIB:
        result["skipped"] = f"needs {xla_bytes / GIB:.1f} GiB > {args.memory_limit_gib} GiB"
    elif xla_bytes is not None and device_limit and xla_bytes > device_limit:
        result["skipped"] = f"needs {xla_bytes / GIB:.1f} GiB > device's {device_limit / GIB:.1f}"
    if "skipped" in result:
        print(json.dumps(result), flush=True)
        return
    jax.block_until_ready(compiled(z_a, z_b))  # warm-up
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        value, grads = compiled(z_a, z_b)
        jax.block_until_ready((value, grads))
        times.append(time.perf_counter() - start)
    if not all(bool(jnp.all(jnp.isfinite(g))) for g in grads) or not jnp.isfinite(value):
        result["error"] = "non-finite value or gradient"
    result["seconds"] = sorted(times)[len(times) // 2]
    result["peak_rss_bytes"] = _common.peak_rss_bytes()
    if stats is not None:  # read again: the peak of this process's device allocator
        stats = device.memory_stats() or {}
        result["peak_device_bytes"] = stats.get("peak_bytes_in_use")
        result["device_bytes_limit"] = stats.get("bytes_limit")
    result["loss"] = float(value)
    print(json.dumps(result), flush=True)


def _loss_fn(method: str, key, args, axis_name=None):
    from jaxcl import losses

    if method.startswith("infonce"):
        block = BLOCK if method == "infonce_blockwise" else None
        return lambda a, b: losses.infonce(
            a, b, temperature=args.temperature, block_size=block, axis_name=axis_name
        )
    return lambda a, b: losses.esco_loss(
        a, b, key=key, method=method, temperature=args.temperature, lam=1.0,
        num_features=args.num_features, axis_name=axis_name,
    )  # fmt: skip


def _communication_worker(args) -> None:
    """Collective bytes of the data-parallel step, one JSON line per (method, N)."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    from jaxcl import training

    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    rows = NamedSharding(mesh, P("data"))
    for method in args.methods.split(","):
        for n in [int(x) for x in args.ns.split(",")]:
            z = jax.device_put(jnp.zeros((n, args.dim), jnp.float32), rows)
            loss = _loss_fn(method, jax.random.key(0), args, axis_name="data")
            sharded = jax.shard_map(loss, mesh=mesh, in_specs=(P("data"),) * 2, out_specs=P())
            step = jax.jit(jax.value_and_grad(sharded, argnums=(0, 1)))
            r = training.collective_bytes(step.lower(z, z).compile())
            ops = sorted({o["op"] for o in r["ops"]})
            print(json.dumps(dict(method=method, n=n, devices=jax.device_count(),
                                  bytes=r["total"], ops=ops)), flush=True)  # fmt: skip


def _communication(args) -> list[dict]:
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8",
               JAX_PLATFORMS="cpu")  # fmt: skip
    cmd = [
        sys.executable, __file__, "--worker", "--communication", f"--methods={args.methods}",
        f"--ns={args.ns}", f"--dim={args.dim}", f"--num-features={args.num_features}",
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"communication worker failed:\n{proc.stderr[-3000:]}")
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    print(f"# data-parallel step on {rows[0]['devices']} devices, d={args.dim}, "
          f"D={args.num_features}: bytes the collectives operate on per device")  # fmt: skip
    print(f"{'method':<18}{'N':>9}{'bytes':>14}  collectives")
    for r in rows:
        print(f"{r['method']:<18}{r['n']:>9}{r['bytes']:>14,}  {', '.join(r['ops'])}")
    return rows


def _run_point(method: str, n: int, args) -> dict:
    repeats = 3 if n <= 100_000 else 1
    cmd = [
        sys.executable,
        __file__,
        "--worker",
        f"--method={method}",
        f"--n={n}",
        f"--dim={args.dim}",
        f"--num-features={args.num_features}",
        f"--temperature={args.temperature}",
        f"--repeats={repeats}",
        f"--memory-limit-gib={args.memory_limit_gib}",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return dict(method=method, n=n, error=f"exit {proc.returncode}: {' | '.join(tail)}")
    return json.loads(lines[-1])


def _accuracy(args) -> list[dict]:
    """Mean |error| of the kernel term of each random-feature method against the exact one."""
    import jax
    import numpy as np

    from jaxcl import losses

    rows = []
    for tau in (0.05, 0.1, 0.2, 0.5, 1.0):
        row = {"tau": tau}
        for method in ("rff", "sorf", "positive"):
            errors = []
            for seed in range(4):
                ka, kb = jax.random.split(jax.random.key(100 + seed))
                z_a = jax.random.normal(ka, (64, 128))
                z_b = z_a + 0.5 * jax.random.normal(kb, (64, 128))
                exact = losses.esco_loss(z_a, z_b, method="exact", temperature=tau, lam=0.0)
                est = losses.esco_loss(
                    z_a,
                    z_b,
                    key=jax.random.key(seed),
                    method=method,
                    temperature=tau,
                    lam=0.0,
                    num_features=4096,
                )
                errors.append(abs(float(est) - float(exact)))
            row[method] = float(np.mean(errors))
        rows.append(row)
        print(
            f"tau={tau:<5} " + "  ".join(f"{m}={row[m]:.4f}" for m in ("rff", "sorf", "positive")),
            flush=True,
        )
    return rows


def _environment() -> dict:
    """Versions and the device, from this process's JAX (``--probe`` prints it)."""
    from importlib import metadata

    import jax

    device = jax.devices()[0]
    env = dict(
        date=datetime.date.today().isoformat(),
        jax=jax.__version__,
        device=str(device.device_kind),
        platform=jax.default_backend(),
        device_count=jax.device_count(),
        cpu_count=os.cpu_count(),
        machine=platform.processor() or platform.machine(),
    )
    for package in ("jaxlib", "jax-cuda12-plugin", "jax-cuda13-plugin"):
        try:
            env[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    stats = device.memory_stats() if device.platform != "cpu" else None
    if stats and "bytes_limit" in stats:
        env["device_bytes_limit"] = stats["bytes_limit"]
    return env


def _probe_environment() -> dict:
    """:func:`_environment` read in a subprocess: the parent never initialises a GPU, whose
    memory JAX would otherwise hold (75 % preallocated) while the workers run."""
    env = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false")
    proc = subprocess.run(
        [sys.executable, __file__, "--worker", "--probe"],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"device probe failed:\n{proc.stderr[-3000:]}")
    return json.loads(lines[-1])


def _stem(name: str, args, env: dict, quick: bool = False) -> str:
    """``name``, ``_quick`` under --quick, ``_<platform>`` on a device other than the CPU (or
    as --platform-tag says)."""
    tag = args.platform_tag
    if tag == "auto":
        tag = "" if env["platform"] == "cpu" else env["platform"]
    elif tag == "none":
        tag = ""
    return name + ("_quick" if quick else "") + (f"_{tag}" if tag else "")


def _fmt_bytes(b):
    return "-" if b is None else f"{b / GIB:6.2f}"


def _memory_bytes(r: dict):
    """A point's peak memory: the device allocator's on a GPU, else the peak RSS."""
    return r.get("peak_device_bytes") or r.get("peak_rss_bytes")


def _plot(results: list[dict], path: Path, env: dict) -> None:
    try:
        import matplotlib
    except ImportError:  # a bare GPU environment: the JSON has it all
        print("# matplotlib is not installed: no plot")
        return

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(11, 4.2))
    for method in METHODS:
        pts = [r for r in results if r["method"] == method and "seconds" in r]
        if not pts:
            continue
        ns = [r["n"] for r in pts]
        ax_t.plot(ns, [r["seconds"] for r in pts], "o-", label=method)
        ax_m.plot(ns, [_memory_bytes(r) / GIB for r in pts], "o-", label=method)
    memory = "peak RSS" if env["platform"] == "cpu" else "peak device memory"
    for ax, title, unit in ((ax_t, "forward + backward", "seconds"), (ax_m, memory, "GiB")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("N (pairs)")
        ax.set_ylabel(unit)
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.suptitle(f"{env['platform']}: {env['device']}, jax {env['jax']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--method", default="sorf")
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--ns", default="1000,3000,10000,30000,100000,300000,1000000")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--num-features", type=int, default=1024)
    parser.add_argument("--temperature", type=float, default=0.5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--memory-limit-gib", type=float, default=16.0)
    parser.add_argument("--quick", action="store_true", help="N = 1e3, 1e4 only")
    parser.add_argument("--accuracy", action="store_true", help="kernel-term error vs tau")
    parser.add_argument("--communication", action="store_true", help="bytes on 8 devices")
    parser.add_argument("--probe", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--platform-tag",
        default="auto",
        help="suffix of the output files: auto (JAX's backend, e.g. gpu; none on CPU), 'none', "
        "or any name (e.g. h100)",
    )
    parser.add_argument("--time-limit-s", type=float, default=900.0)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = parser.parse_args()
    unknown = [m for m in args.methods.split(",") if m not in METHODS]
    if unknown:
        parser.error(
            f"--methods: unknown {unknown}; expected a comma-separated subset of {METHODS}"
        )
    if args.worker:
        if args.probe:
            print(json.dumps(_environment()), flush=True)
        elif args.communication:
            _communication_worker(args)
        else:
            _worker(args)
        return

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    env = _probe_environment()
    env["commit"] = _common.git_commit()  # $JAXCL_BENCH_COMMIT on a copy without .git
    print(f"# {env}")
    if args.accuracy:  # computed in this process, on JAX's default device
        rows = _accuracy(args)
        path = out / f"{_stem('esco_accuracy', args, env)}.json"
        path.write_text(json.dumps(dict(env=env, rows=rows), indent=2))
        print(f"# wrote {path}")
        return
    if args.communication:
        rows = _communication(args)
        record = dict(env=env, config=dict(dim=args.dim, num_features=args.num_features),
                      rows=rows)  # fmt: skip
        (out / "esco_communication.json").write_text(json.dumps(record, indent=2))
        print(f"# wrote {out / 'esco_communication.json'}")
        return

    ns = [1000, 10000] if args.quick else [int(x) for x in args.ns.split(",")]
    methods = args.methods.split(",")
    on_device = env["platform"] != "cpu"
    print(
        f"# d={args.dim} D={args.num_features} tau={args.temperature}, forward + backward, "
        f"on {env['platform']}: {env['device']}"
    )
    device_column = f"{'device GiB':>12}" if on_device else ""
    header = (
        f"{'method':<9}{'N':>9}{'seconds':>10}{device_column}{'peak RSS GiB':>14}{'XLA GiB':>9}"
        "  note"
    )
    print(header)
    print("-" * len(header))
    results = []
    stem = _stem("esco_benchmark", args, env, quick=args.quick)
    config = dict(dim=args.dim, num_features=args.num_features, temperature=args.temperature)

    def save(checks=None):  # after every point too: a run cut short keeps what it measured
        payload = dict(env=env, config=config, results=results)
        if checks is not None:
            payload["checks"] = {k: dict(passed=v[0], value=v[1]) for k, v in checks.items()}
        (out / f"{stem}.json").write_text(json.dumps(payload, indent=2))

    for method in methods:
        too_big, last = False, None
        for n in ns:
            if too_big:
                results.append(dict(method=method, n=n, skipped="larger N did not fit"))
                continue
            estimate = last and last["seconds"] * (n / last["n"]) ** 2
            if method == "infonce_blockwise" and estimate and estimate > args.time_limit_s:
                r = dict(method=method, n=n, skipped=f"~{estimate:.0f} s (N^2 from N={last['n']})")
                results.append(r)
                dash = f"{'-':>12}" if on_device else ""
                print(
                    f"{method:<9}{n:>9}{'-':>10}{dash}{'-':>14}{'-':>9}  {r['skipped']}",
                    flush=True,
                )
                continue
            r = _run_point(method, n, args)
            last = r if "seconds" in r else last
            results.append(r)
            save()
            note = r.get("skipped") or r.get("error") or ""
            too_big = "skipped" in r
            secs = f"{r['seconds']:10.3f}" if "seconds" in r else f"{'-':>10}"
            dev = f"{_fmt_bytes(r.get('peak_device_bytes')):>12}" if on_device else ""
            print(
                f"{method:<9}{n:>9}{secs}{dev}{_fmt_bytes(r.get('peak_rss_bytes')):>14}"
                f"{_fmt_bytes(r.get('xla_peak_bytes')):>9}  {note}",
                flush=True,
            )

    checks = {}
    for method in ("rff", "sorf", "positive"):
        by_n = {r["n"]: r for r in results if r["method"] == method and "seconds" in r}
        if 1_000_000 in by_n:
            peak = _memory_bytes(by_n[1_000_000]) / GIB
            what = "peak device memory" if on_device else "peak memory"
            checks[f"{method}: {what} at N=1e6 <= 6 GiB"] = (peak <= 6.0, f"{peak:.2f} GiB")
        if 1_000_000 in by_n and 100_000 in by_n:
            ratio = by_n[1_000_000]["seconds"] / by_n[100_000]["seconds"]
            checks[f"{method}: t(1e6)/t(1e5) <= 12"] = (ratio <= 12.0, f"{ratio:.2f}")
    for name, (ok, value) in checks.items():
        print(f"{'PASS' if ok else 'FAIL'}  {name}: {value}")

    save(checks)
    _plot(results, out / f"{stem}.png", env)
    print(f"# wrote {out / (stem + '.json')} and {out / (stem + '.png')}")


if __name__ == "__main__":
    main()
