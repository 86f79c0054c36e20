"""Metric writers (TensorBoard event files + the log) and a human-readable progress line."""

from __future__ import annotations

import glob
import io
import os
import socket
import struct
import sys
import time

import jax
from absl import logging

# How often (seconds) a remote workdir's event file is uploaded again with what was written.
_REMOTE_UPLOAD_SECS = 120.0


class MetricWriter:
    """Scalars to the log (``[step] name=value, ...``) and, on process 0, to a TensorBoard
    event file in ``workdir``: ``tensorboard --logdir WORKDIR`` reads it.

    The event file is written with TensorBoard's own record writer and protos (the
    ``tensorboard`` package: ``pip install 'jaxcl[train]'``), without TensorFlow: until
    2026-11-30 clu's writers were used, and making one (TensorFlow's import) took 3.7-4.0 s
    of every run's start on 2 CPU cores, 0.07-0.09 s now. Without ``tensorboard`` the scalars go
    to the log only, with a warning.

    A local workdir's file is appended to and flushed at every write. A remote one (``gs://``
    and other URLs, through ``etils.epath`` as orbax's checkpoints) cannot be appended to: the
    records are kept in memory and the whole file is uploaded again at most every
    ``_REMOTE_UPLOAD_SECS`` seconds of writes, at ``flush`` and at ``close``; an upload that
    fails is logged as a warning, and the next one writes every record again.
    """

    def __init__(self, workdir: str, *, events: bool = True):
        self._records = None  # tensorboard's RecordWriter, while an event file is open
        self.path: str | None = None  # the event file's, where one is written
        if not events:
            return
        try:
            from tensorboard.compat.proto import event_pb2, summary_pb2
            from tensorboard.summary.writer.record_writer import RecordWriter
        except ImportError:
            logging.warning(
                "jaxcl: the `tensorboard` package is not installed, so no TensorBoard event "
                "file is written to %s (the log has every scalar); pip install 'jaxcl[train]'",
                workdir,
            )
            return
        self._event, self._summary = event_pb2.Event, summary_pb2.Summary
        name = f"events.out.tfevents.{time.time():.6f}.{socket.gethostname()}.{os.getpid()}"
        self._remote = "://" in workdir
        if self._remote:
            from etils import epath

            self._path = epath.Path(workdir) / name
            self._buffer, self._uploaded = io.BytesIO(), time.monotonic()
            self._records = RecordWriter(self._buffer)
        else:
            os.makedirs(workdir, exist_ok=True)
            self._records = RecordWriter(open(os.path.join(workdir, name), "ab"))
            self._path = os.path.join(workdir, name)
        self.path = str(self._path)
        self._add(self._event(wall_time=time.time(), file_version="brain.Event:2"))

    def _add(self, event) -> None:
        self._records.write(event.SerializeToString())
        if not self._remote:
            self._records.flush()
        elif time.monotonic() - self._uploaded > _REMOTE_UPLOAD_SECS:
            self.flush()

    def write_scalars(self, step: int, scalars: dict) -> None:
        values = {k: float(v) for k, v in scalars.items()}
        if not values:
            return
        logging.info("[%d] %s", step, ", ".join(f"{k}={v:.6g}" for k, v in sorted(values.items())))
        if self._records is None:
            return
        summary = self._summary(
            value=[self._summary.Value(tag=k, simple_value=v) for k, v in values.items()]
        )
        self._add(self._event(wall_time=time.time(), step=int(step), summary=summary))

    def flush(self) -> None:
        if self._records is not None and self._remote:
            self._uploaded = time.monotonic()
            try:
                self._path.write_bytes(self._buffer.getvalue())
            except Exception as err:  # a storage hiccup must not end the training run
                logging.warning(
                    "jaxcl: could not upload the event file %s (%s: %s); the next upload "
                    "writes it whole again",
                    self.path,
                    type(err).__name__,
                    err,
                )

    def close(self) -> None:
        if self._records is None:
            return
        self.flush()
        if not self._remote:
            self._records.close()
        self._records = None


def read_scalars(workdir: str, tag: str) -> tuple[list[int], list[float]]:
    """Steps and values of the scalar ``tag`` in the TensorBoard event files of a local
    ``workdir``, file by file (oldest name first) in the order written, without TensorFlow.

    Reads the files :class:`MetricWriter` writes (``simple_value`` scalars) and those of runs
    from before 2026-11-30 (clu's, scalars as tensors). A record cut short at the end of a
    file (a run still writing) ends that file; a record whose checksum does not match raises
    ``ValueError`` naming the file.
    """
    from tensorboard.compat.proto import event_pb2
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c
    from tensorboard.util import tensor_util

    steps, values = [], []
    for path in sorted(glob.glob(os.path.join(workdir, "*tfevents*"))):
        with open(path, "rb") as f:
            data = f.read()
        pos = 0
        while pos + 12 <= len(data):
            (length,) = struct.unpack_from("<Q", data, pos)
            start, end = pos + 12, pos + 12 + length
            if end + 4 > len(data):
                break
            record = data[start:end]
            if struct.unpack_from("<I", data, end)[0] != masked_crc32c(record):
                raise ValueError(f"read_scalars: {path}: corrupt record at byte {pos}")
            event = event_pb2.Event.FromString(record)
            for value in event.summary.value:
                if value.tag != tag:
                    continue
                steps.append(int(event.step))
                if value.WhichOneof("value") == "simple_value":
                    values.append(float(value.simple_value))
                else:
                    values.append(float(tensor_util.make_ndarray(value.tensor)))
            pos = end + 4
    return steps, values


def make_writer(workdir: str) -> MetricWriter:
    """The run's metric writer: every process logs, process 0 also writes the event file."""
    return MetricWriter(workdir, events=jax.process_index() == 0)


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
            # The metric writer logs every metric; this line adds position and time.
            line = f"[{self.name}] step {step:>{len(str(self.total))}}/{self.total}"
            line += f" ({100.0 * step / max(1, self.total):5.1f}%)"
            if "loss" in metrics:
                line += f" | loss {metrics['loss']:.4f}"
            if self.rate:
                eta = (self.total - step) / self.rate
                line += f" | {self.rate * self.batch_size:,.0f} ex/s | ETA {_duration(eta)}"
            print(line, file=sys.stderr, flush=True)
        return rates
