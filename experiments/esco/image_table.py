"""ESCo's image rows (SimCLR, ESCo-RFF, ESCo-SORF) from finished runs: one table per probe.

Each ``experiments/esco/image_<row>.py`` run writes ``workdir/results.json`` and
``workdir/config.json``; the runs are grouped by the linear probe they were scored with (the
``:cpu`` rows' recorded probe, or SimCLR's: ``--config.eval.linear_trust_ratio=False
--config.eval.linear_standardize=False`` on a copy of a finished workdir scores its final
checkpoint again), and per probe the script prints and writes
(``experiments/esco/results/image_table<tag>.{json,png}``) every row's mean ± sample std
and, seed by seed, each estimator against SimCLR (ESCo's Fig. 6 has both above it)::

    python experiments/esco/image_table.py --tag _fmnist_cpu \
        --runs /tmp/simclr_s0 /tmp/simclr_s0_simclr /tmp/rff_s0 /tmp/rff_s0_simclr ...

The tables are those of ``experiments/dacl/image_table.py``, with ESCo's rows.
"""

from __future__ import annotations

import importlib.util
import os

HERE = os.path.dirname(os.path.abspath(__file__))
LABELS = {"simclr": "SimCLR", "esco_rff": "ESCo-RFF", "esco_sorf": "ESCo-SORF"}
# ESCo's claim (Fig. 6): each estimator at or above SimCLR.
STEPS = (("simclr", "esco_rff"), ("simclr", "esco_sorf"))


def _dacl_table():
    path = os.path.join(HERE, os.pardir, "dacl", "image_table.py")
    spec = importlib.util.spec_from_file_location("dacl_image_table", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv=None) -> None:
    _dacl_table().main(
        argv, labels=LABELS, steps=STEPS, doc=__doc__, out_dir=os.path.join(HERE, "results")
    )


if __name__ == "__main__":
    main()
