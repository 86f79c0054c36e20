"""DACL Table 2's rows on images, from finished runs' own results: one table per linear probe.

Each ``experiments/dacl/image_<row>.py`` run writes ``workdir/results.json`` (linear-probe
``test_top1``, the kNN score ``knn_top1``) and ``workdir/config.json`` (method, seed, epochs,
the probe's settings). This script groups runs by the probe they were scored with (the
``:cpu`` rows' recorded probe, or SimCLR's: ``--config.eval.linear_trust_ratio=False
--config.eval.linear_standardize=False`` on a copy of a finished workdir scores its final
checkpoint again), and per probe prints and writes
(``experiments/dacl/results/image_table<tag>.{json,png}``) every row's mean ± sample std and,
for each step of the paper's ordering (No-Pretraining < Gaussian < DACL < DACL+, DACL <
SimCLR < SimCLR+DACL), the per-seed gap and in how many seeds it holds::

    python experiments/dacl/image_table.py --tag _fmnist \
        --runs /tmp/none_s0 /tmp/none_s0_simclr /tmp/dacl_s0 /tmp/dacl_s0_simclr ...

``--records`` adds the runs an earlier table recorded in its JSON. The plot has one panel
per probe, each run a mark (linear probe and kNN) and its row's mean a bar.
"""

from __future__ import annotations

import importlib.util
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def _imix_table():
    """experiments/imix/image_table.py: its run reader, probe description and summaries."""
    path = os.path.join(HERE, os.pardir, "imix", "image_table.py")
    spec = importlib.util.spec_from_file_location("imix_image_table", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_SHARED = _imix_table()
METRICS = _SHARED.METRICS
LABELS = {
    "none": "No-Pretraining",
    "gaussian": "Gaussian-noise",
    "dacl": "DACL",
    "dacl_plus": "DACL+",
    "simclr": "SimCLR",
    "simclr_dacl": "SimCLR+DACL",
}
# The paper's ordering (DACL Tables 2 and 3), one step at a time: (lower, higher).
STEPS = (
    ("none", "gaussian"),
    ("gaussian", "dacl"),
    ("dacl", "dacl_plus"),
    ("dacl", "simclr"),
    ("simclr", "simclr_dacl"),
)


def table(runs: list[dict], labels: dict = LABELS, steps: tuple = STEPS) -> dict:
    """``{probe: {'rows': {method: ...}, 'steps': [...]}}`` (rows in ``labels``' order, each
    of ``steps`` checked seed by seed); one data set and one epoch count for all runs, and a
    (method, seed, probe) given twice is an error."""
    for key in ("data", "epochs"):  # (No-Pretraining trains 0 epochs beside any count)
        values = sorted({r[key] for r in runs if key == "data" or r["method"] != "none"})
        if len(values) > 1:
            raise SystemExit(f"--runs mix {key} {values}: table one at a time")
    by_probe: dict[str, dict[str, dict[int, dict]]] = {}
    for r in runs:
        seeds = by_probe.setdefault(r["probe"], {}).setdefault(r["method"], {})
        if r["seed"] in seeds:
            raise SystemExit(f"method {r['method']}, seed {r['seed']}, probe {r['probe']} twice")
        seeds[r["seed"]] = r
    out = {}
    for probe, methods in sorted(by_probe.items()):
        rows = _SHARED.summarise(methods, labels)
        checked = []
        for low, high in steps:
            seeds = sorted(set(methods.get(low, {})) & set(methods.get(high, {})))
            if not seeds:
                continue
            gap = {m: [methods[high][s][m] - methods[low][s][m] for s in seeds] for m in METRICS}
            holds = sum(g > 0 for g in gap["test_top1"])
            checked.append({"lower": low, "higher": high, "seeds": seeds, **gap, "holds": holds})
        out[probe] = {"rows": rows, "steps": checked}
    return out


def render(result: dict, labels: dict = LABELS) -> str:
    lines = []
    for probe, t in result.items():
        lines += _SHARED.row_lines(f"linear probe: {probe}", t["rows"], labels, digits=2)
        for s in t["steps"]:
            per = " / ".join(f"{v:+.2f}" for v in s["test_top1"])
            knn = " / ".join(f"{v:+.2f}" for v in s["knn_top1"])
            lines.append(
                f"{labels[s['higher']]} minus {labels[s['lower']]}: linear {per}, kNN {knn}; "
                f"the paper's order holds in {s['holds']} of {len(s['seeds'])} seeds"
            )
    return "\n".join(lines)


def _short(probe: str) -> str:
    """The probe's settings that differ between the measured rows and SimCLR's."""
    keep = [p for p in probe.split(", ") if p.split("=")[0] in ("trust_ratio", "standardize")]
    return "probe: " + (", ".join(keep) or probe)


def plot(result: dict, path: str, labels: dict = LABELS, data: str | None = None) -> None:
    _SHARED.plot(result, path, labels, title=_short, data=data)


def main(argv=None, *, labels: dict = LABELS, steps: tuple = STEPS, doc=None, out_dir=None):
    """The script (another paper's rows: its ``labels``, ``steps``, ``doc`` and ``out_dir``)."""
    doc = (doc or __doc__).split("\n\n")[0]
    parser = _SHARED.table_arguments(doc, out_dir or os.path.join(HERE, "results"))
    args = parser.parse_args(argv)
    runs = _SHARED.runs_of(parser, args, labels)
    result = table(runs, labels, steps)
    print(render(result, labels))
    os.makedirs(args.out_dir, exist_ok=True)
    stem = os.path.join(args.out_dir, f"image_table{args.tag}")
    with open(stem + ".json", "w") as f:
        json.dump({"runs": runs, "table": result}, f, indent=1)
    plot(result, stem + ".png", labels, data=runs[0].get("data"))
    print(f"wrote {stem}.json and {stem}.png")


if __name__ == "__main__":
    main()
