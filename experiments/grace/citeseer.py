"""GRACE on Citeseer with ESCo's Table 4 hyperparameters (paper: 71.3, ESCo Table 2, row GRACE).

    JAXCL_DATA_DIR=../shared/data python -m jaxcl.main --config=experiments/grace/citeseer.py \
        --workdir=/tmp/grace_citeseer
    # ESCo-RFF / ESCo-SORF rows: --config=experiments/grace/citeseer.py:rff (or :sorf)
    # smoke test of the pipeline (minutes): --config=experiments/grace/citeseer.py:quick

Measured (5 repeats, seeds 0-4, each with its own random 10/10/80 split; test accuracy of
the logistic regression at its best validation accuracy), 2-core AMD EPYC CPU, no
accelerator, jax 0.10.2, 2026-11-21:

- commit 0cd3fe6 (sparse layout on CPU, ``nt_xent`` from the same-view matrices' upper
  blocks, ``train.reuse_host_memory``): 71.37 ± 0.62 (runs 71.84, 70.26, 71.50, 72.02,
  71.24) against the paper's 71.3; 5.2 min for all 5 alone on the machine (59 s of
  training each);
- rerun after the engine's rework (commit 581d1e1, 2026-11-24): the same five runs to
  the last digit, 5.4 min;
- commit 8264810: 71.18 ± 0.57 (71.69, 70.26, 70.86, 71.84, 71.24); 16.1 min (190 s of
  training each).

The same model both times; float32 rounding differs.

ESCo rows (``:rff`` / ``:sorf``, Table 4's lambda 2.0 / 2.1 at tau 0.9, 1024 features drawn
every step, GRACE's negative set ``esco_negatives='both'``; 5 repeats, seeds 0-4; commit
ad5960a, 2026-11-25, on cores shared with a CI run): ESCo-RFF 63.48 ± 2.25 (62.19, 60.76,
64.66, 62.60, 67.22), 6.2 min; ESCo-SORF 59.09 ± 2.89 (59.18, 54.71, 60.95, 57.45, 63.16),
11.3 min; the paper's 71.6 and 71.7 are not reached. Single-seed runs (seed 0, GRACE's row:
71.84) put the loss on lambda, not on the random features: the exact kernel at lambda 2.0
gives 62.67, RFF at lambda = 1 / (2 tau) = 0.556 gives 71.50 (``--config.method.lam=0.5556
--config.repeats=1``), the exact kernel there (GRACE's loss through ``esco_loss``) 71.76,
and RFF at lambda 2.0 with ESCo Eq. 1's cross-view negatives 62.67 again (another run, final
loss 7.36 against 8.06, with the same count of correct test nodes). With our ESCo loss
(``lam * |a - b|^2``, InfoNCE at lam = 1 / (2 tau)) Table 4's lambdas weigh alignment 3.6x
more than GRACE does; the paper may scale lambda differently.

That convention is the paper's own (Eq. 9-10 and its Algorithm's ``(z1 - z2).pow(2).sum(1) *
lambda``), and with it Table 4's 2.0 lands 8 points low here. Reading Table 4's lambda as a
multiple of InfoNCE's alignment weight instead (lam = 2.0 / (2 tau) = 1.111, the same as the
printed value at Cora's and the images' tau = 0.5) gives ESCo-RFF 71.15 ± 0.59 (70.30, 71.61,
70.94, 71.99, 70.90) against the paper's 71.6 (``--config.method.lam=1.1111``, 5 repeats,
commit b1f6f6f, 2026-11-25, 11 min on cores shared with a Fashion-MNIST run). The config
keeps the printed 2.0 / 2.1, as the issue asks for Table 4's values.
"""

from jaxcl.configs import grace_node


def get_config(arg: str | None = None):
    return grace_node.make("citeseer", arg)
