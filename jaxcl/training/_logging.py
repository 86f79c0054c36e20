"""Metric writers (TensorBoard + console through clu) and a human-readable progress line."""

from __future__ import annotations

import sys
import time

import jax


def make_writer(workdir: str):
    """TensorBoard summaries in ``workdir`` plus console logging; only process 0 writes files.

    clu's writers load TensorFlow (seconds, hundreds of MB), so they are imported here, when a
    run starts, not when ``jaxcl.training`` is imported.
    """
    from clu import metric_writers

    return metric_writers.create_default_writer(
        workdir, just_logging=jax.process_index() > 0, asynchronous=True
    )


def scalars(scores: dict) -> dict:
    """The numbers of an evaluation, for the metric writer (a task may add lists for the run's
    history, e.g. the graph task's ``cv_top1_draws``)."""
    return {k: v for k, v in scores.items() if not isinstance(v, list | tuple)}


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


class Progress:
    """Prints ``step/total, loss, examples per second, ETA`` lines on process 0."""

    def __init__(self, name: str, total_steps: int, batch_size: int, start_step: int = 0):
        self.name = name
        self.total = total_steps
        self.batch_size = batch_size
        self.last_step = start_step
        self.last_time = time.perf_counter()
        self.rate = None  # steps per second, smoothed

    def update(self, step: int, metrics: dict[str, float]) -> dict[str, float]:
        """Reports ``step`` (steps done) and returns the rate metrics to log."""
        now = time.perf_counter()
        steps = step - self.last_step
        rates = {}
        if steps > 0 and now > self.last_time:
            rate = steps / (now - self.last_time)
            self.rate = rate if self.rate is None else 0.7 * self.rate + 0.3 * rate
            rates = {"steps_per_sec": rate, "examples_per_sec": rate * self.batch_size}
        self.last_step, self.last_time = step, now
        if jax.process_index() == 0:
            # clu's logging writer prints every metric; this line adds position and time.
            line = f"[{self.name}] step {step:>{len(str(self.total))}}/{self.total}"
            line += f" ({100.0 * step / max(1, self.total):5.1f}%)"
            if "loss" in metrics:
                line += f" | loss {metrics['loss']:.4f}"
            if self.rate:
                eta = (self.total - step) / self.rate
                line += f" | {self.rate * self.batch_size:,.0f} ex/s | ETA {_duration(eta)}"
            print(line, file=sys.stderr, flush=True)
        return rates
