"""Metric writers (TensorBoard event files + the log) and a human-readable progress line."""

from __future__ import annotations

import io
import itertools
import os
import socket
import sys
import time

import jax
from absl import logging

# How often (seconds) a remote workdir's event file is uploaded again with what was written.
_REMOTE_UPLOAD_SECS = 120.0
_FILE_NUMBER = itertools.count()  # two writers of one process never share a file


class MetricWriter:
    """Scalars to the log (``[step] name=value, ...``) and, on process 0, to a TensorBoard
    event file in ``workdir``: ``tensorboard --logdir WORKDIR`` reads it.

    The event file is written with TensorBoard's own record writer and protos (the
    ``tensorboard`` package: ``pip install 'jaxcl[train]'``), without TensorFlow: until
    2026-11-30 clu's writers were used, and making one (TensorFlow's import) took 3.7-4.0 s
    of every run's start on 2 CPU cores, 0.07-0.09 s now. Without ``tensorboard`` the scalars go
    to the log only, with a warning.

    A local workdir's file is appended to and flushed at every write. A remote one (``gs://``
    and other URLs, through ``etils.epath`` as orbax's checkpoints; ``gs://`` without
    TensorFlow needs ``gcsfs``, which ``jaxcl[train]`` installs) cannot be appended to: the
    records are kept in memory and the whole file is uploaded again at most every
    ``_REMOTE_UPLOAD_SECS`` seconds of writes, at ``flush`` and at ``close``; an upload that
    fails is logged as a warning, and the next one writes every record again.

    A run resumed from its checkpoint at step ``start_step`` > 0 opens its file with
    TensorBoard's restart marker (``SessionLog.START`` at ``start_step + 1``): TensorBoard
    (and :func:`read_scalars`) then drop the earlier files' points past the checkpoint, which
    the resumed run logs again, instead of drawing both.
    """

    def __init__(self, workdir: str, *, events: bool = True, start_step: int = 0):
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
        name += f".{next(_FILE_NUMBER)}"
        self._remote = "://" in workdir
        if self._remote:
            from etils import epath

            self._path = epath.Path(workdir) / name
            self._buffer, self._uploaded = io.BytesIO(), time.monotonic()
            self._uploaded_bytes = 0
            self._records = RecordWriter(self._buffer)
        else:
            os.makedirs(workdir, exist_ok=True)
            self._path = os.path.join(workdir, name)
            self._records = RecordWriter(open(self._path, "ab"))
        self.path = str(self._path)
        try:
            self._add(self._event(wall_time=time.time(), file_version="brain.Event:2"))
            if start_step > 0:
                restart = event_pb2.SessionLog(status=event_pb2.SessionLog.START)
                self._add(
                    self._event(wall_time=time.time(), step=start_step + 1, session_log=restart)
                )
        except BaseException:
            self._records.close()
            raise

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
        """Uploads a remote file if records were written since the last upload (a local
        file is flushed at every write)."""
        if self._records is None or not self._remote:
            return
        self._uploaded = time.monotonic()
        data = self._buffer.getvalue()
        if len(data) > self._uploaded_bytes:
            try:
                self._path.write_bytes(data)
                self._uploaded_bytes = len(data)
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
    """Steps and values of the scalar ``tag`` in the TensorBoard event files of ``workdir``
    (a folder, or a ``gs://`` URL with ``gcsfs``), file by file (oldest name first) in the
    order written, without TensorFlow.

    Reads the files :class:`MetricWriter` writes (``simple_value`` scalars) and those of runs
    from before 2026-11-30 (clu's, scalars as tensors); other values under ``tag`` (images,
    histograms) are skipped. A resumed run's restart marker (``SessionLog.START`` at step s)
    drops the points read so far at steps >= s, as TensorBoard does. Records are read by
    TensorBoard's own reader: one cut short at the end of a file (a run still writing) ends
    that file; one whose length or data does not match its checksum raises ``ValueError``
    naming the file and the record.
    """
    from etils import epath
    from tensorboard.compat.proto import event_pb2
    from tensorboard.compat.tensorflow_stub import errors
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import PyRecordReader_New
    from tensorboard.util import tensor_util

    folder = epath.Path(workdir)
    if not folder.is_dir():
        raise FileNotFoundError(f"read_scalars: workdir {workdir!r} is not a folder")
    points: list[tuple[int, float]] = []
    for path in sorted(p for p in folder.iterdir() if "tfevents" in p.name):
        reader = PyRecordReader_New(str(path))
        for number in itertools.count():
            try:
                reader.GetNext()
            except errors.OutOfRangeError:
                break
            except errors.DataLossError as err:
                if "truncated record" in str(err):
                    break
                raise ValueError(f"read_scalars: record {number}: {err}") from None
            event = event_pb2.Event.FromString(reader.record())
            if event.session_log.status == event_pb2.SessionLog.START:
                points = [(s, v) for s, v in points if s < event.step]
            for value in event.summary.value:
                kind = value.WhichOneof("value")
                if value.tag != tag or kind not in ("simple_value", "tensor"):
                    continue
                if kind == "simple_value":
                    points.append((int(event.step), float(value.simple_value)))
                else:
                    array = tensor_util.make_ndarray(value.tensor)
                    if array.size == 1 and array.dtype.kind in "fiu":
                        points.append((int(event.step), float(array.reshape(()))))
    return [s for s, _ in points], [v for _, v in points]


def make_writer(workdir: str, start_step: int = 0) -> MetricWriter:
    """The run's metric writer: every process logs, process 0 also writes the event file
    (with the restart marker where the run resumes at ``start_step`` > 0)."""
    return MetricWriter(workdir, events=jax.process_index() == 0, start_step=start_step)


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
    """Prints ``step/total, loss, examples per second, ETA`` lines on process 0.

    Rates are of training alone: time in evaluations between steps is left out (``pause``),
    and the first window after a (re)start, which holds the compilation, is neither logged
    as a rate nor counted in the ETA, which starts from the second window (nor does the ETA
    count the evaluations still to come).
    """

    def __init__(self, name: str, total_steps: int, batch_size: int, start_step: int = 0):
        self.name = name
        self.total = total_steps
        self.batch_size = batch_size
        self.last_step = start_step
        self.last_time = time.perf_counter()
        self.rate = None  # steps per second, smoothed
        self.windows = 0

    def pause(self, seconds: float) -> None:
        """Leaves ``seconds`` (an evaluation's) out of the current window's time."""
        self.last_time += seconds

    def update(self, step: int, metrics: dict[str, float]) -> dict[str, float]:
        """Reports ``step`` (steps done) and returns the rate metrics to log."""
        now = time.perf_counter()
        steps = step - self.last_step
        rates = {}
        if steps > 0 and now > self.last_time:
            rate = steps / (now - self.last_time)
            self.windows += 1
            if self.windows > 1:  # the first window's rate holds the compile
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
