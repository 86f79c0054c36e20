"""Several runs from one config (``config.variants``) and a table of their results."""

from __future__ import annotations

import json
import os

import jax
import ml_collections

from jaxcl.training._loop import train_and_evaluate


def variant_configs(config: ml_collections.ConfigDict) -> dict[str, ml_collections.ConfigDict]:
    """One full config per entry of ``config.variants`` (which is removed from each).

    A variant is a partial config: its ``method`` replaces the base ``method`` wholesale
    (methods have different hyperparameters); its other sections update the base's.
    """
    out = {}
    for name, variant in config.variants.items():
        cfg = config.copy_and_resolve_references()
        with cfg.unlocked():
            del cfg["variants"]
            for key, value in variant.items():
                if key == "method" or not isinstance(value, ml_collections.ConfigDict):
                    cfg[key] = value
                else:
                    cfg[key].update(value)
        out[name] = cfg
    return out


def format_table(rows: dict[str, dict]) -> str:
    """A Markdown table of each variant's accuracies, loss and time."""
    lines = [
        "| run | method | test top-1 | kNN top-1 | final loss | pretrain s |",
        "|---|---|---|---|---|---|",
    ]
    for name, r in rows.items():
        knn = f"{100 * r['knn_top1']:.1f}" if "knn_top1" in r else "-"
        lines.append(
            f"| {name} | {r['method']} | {100 * r['test_top1']:.1f} | {knn} | "
            f"{r['final_loss']:.4f} | {r['pretrain_seconds']:.1f} |"
        )
    return "\n".join(lines)


def run_variants(config: ml_collections.ConfigDict, workdir: str) -> dict[str, dict]:
    """Trains and evaluates every variant in ``workdir/<name>``; writes ``summary.{json,md}``."""
    results = {}
    for name, cfg in variant_configs(config).items():
        results[name] = train_and_evaluate(cfg, os.path.join(workdir, name))
    table = format_table(results)
    if jax.process_index() == 0:
        with open(os.path.join(workdir, "summary.json"), "w") as f:
            json.dump(results, f, indent=2)
        with open(os.path.join(workdir, "summary.md"), "w") as f:
            f.write(table + "\n")
        print("\n" + table, flush=True)
    return results
