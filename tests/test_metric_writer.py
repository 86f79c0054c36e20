"""The trainer's metric writer: TensorBoard reads its event files, and it never loads
TensorFlow (whose import took seconds of every run's start)."""

import os
import subprocess
import sys

import pytest
from etils import epath

from jaxcl.training import _logging


def _scalars(logdir):
    """What TensorBoard's own loader makes of the event files in ``logdir``."""
    from tensorboard.backend.event_processing import event_accumulator

    acc = event_accumulator.EventAccumulator(str(logdir))
    acc.Reload()
    tags = acc.Tags()["scalars"]
    return {t: [(e.step, e.value) for e in acc.Scalars(t)] for t in tags}


def test_tensorboard_reads_every_scalar_written(tmp_path, caplog):
    writer = _logging.MetricWriter(str(tmp_path))
    writer.write_scalars(100, {"loss": 0.5, "lr": 0.1})
    writer.write_scalars(200, {"loss": 0.25, "lr": 0.05})
    writer.write_scalars(300, {})  # nothing to write: no event
    writer.write_scalars(300, {"test_top1": 0.875})
    writer.close()
    assert os.path.basename(writer.path or "").startswith("events.out.tfevents.")
    assert _scalars(tmp_path) == {
        "loss": [(100, 0.5), (200, 0.25)],
        "lr": [(100, pytest.approx(0.1)), (200, pytest.approx(0.05))],
        "test_top1": [(300, 0.875)],
    }


def test_the_log_has_every_scalar_and_other_processes_write_no_file(tmp_path, monkeypatch):
    logged = []
    monkeypatch.setattr(_logging.logging, "info", lambda fmt, *a: logged.append(fmt % a))
    writer = _logging.MetricWriter(str(tmp_path), events=False)
    writer.write_scalars(7, {"b": 2.0, "a": 1.0 / 3.0})
    writer.close()
    assert logged == ["[7] a=0.333333, b=2"]
    assert writer.path is None and os.listdir(tmp_path) == []


def test_a_remote_workdir_is_uploaded_whole(tmp_path, monkeypatch):
    # gs:// cannot be appended to: each upload writes every record so far to the same object.
    uploads, failures = [], []

    class FakeRemote:
        def __init__(self, path):
            self.path = path

        def __truediv__(self, name):
            return FakeRemote(f"{self.path}/{name}")

        def write_bytes(self, data):
            if failures:
                raise failures.pop()
            uploads.append((self.path, data))

        def __str__(self):
            return self.path

    monkeypatch.setattr(epath, "Path", FakeRemote)
    writer = _logging.MetricWriter("gs://bucket/run")
    writer.write_scalars(1, {"loss": 1.0})
    assert uploads == []  # not yet: at most every _REMOTE_UPLOAD_SECS of writes
    monkeypatch.setattr(_logging, "_REMOTE_UPLOAD_SECS", 0.0)
    writer.write_scalars(2, {"loss": 0.5})
    # A failed upload is logged and does not stop the run; the next one writes it all.
    failures.append(OSError("503 Service Unavailable"))
    warned = []
    monkeypatch.setattr(_logging.logging, "warning", lambda fmt, *a: warned.append(fmt % a))
    writer.write_scalars(3, {"loss": 0.25})
    assert len(uploads) == 1 and "OSError: 503 Service Unavailable" in warned[0]
    writer.close()
    assert len(uploads) == 2 and len({path for path, _ in uploads}) == 1
    assert uploads[0][0].startswith("gs://bucket/run/events.out.tfevents.")
    assert uploads[-1][1].startswith(uploads[0][1]) and len(uploads[-1][1]) > len(uploads[0][1])
    # The last upload, as a local file, is what TensorBoard reads: every step.
    (tmp_path / os.path.basename(uploads[-1][0])).write_bytes(uploads[-1][1])
    assert _scalars(tmp_path) == {"loss": [(1, 1.0), (2, 0.5), (3, 0.25)]}


def test_writing_summaries_does_not_import_tensorflow(tmp_path):
    code = (
        "import sys\n"
        "from jaxcl.training import _logging\n"
        f"w = _logging.make_writer({str(tmp_path)!r})\n"
        "w.write_scalars(1, {'loss': 1.0})\n"
        "w.close()\n"
        "assert w.path is not None\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('tensorflow', 'clu')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300
    )
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_read_scalars_reads_both_kinds_of_scalar_and_stops_at_a_cut_record(tmp_path):
    import numpy as np
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.util import tensor_util

    writer = _logging.MetricWriter(str(tmp_path))
    writer.write_scalars(1, {"loss": 2.0, "lr": 0.1})
    # A scalar as clu's (TensorFlow's) writer stored it: a float32 tensor, not simple_value.
    tensor = tensor_util.make_tensor_proto(np.float32(1.5))
    value = summary_pb2.Summary.Value(tag="loss", tensor=tensor)
    writer._add(event_pb2.Event(step=2, summary=summary_pb2.Summary(value=[value])))
    writer.write_scalars(3, {"loss": 1.25})
    writer.close()
    assert _logging.read_scalars(str(tmp_path), "loss") == ([1, 2, 3], [2.0, 1.5, 1.25])
    assert _logging.read_scalars(str(tmp_path), "lr") == ([1], [pytest.approx(0.1)])
    assert _logging.read_scalars(str(tmp_path), "none") == ([], [])
    data = open(writer.path, "rb").read()
    with open(writer.path, "wb") as f:  # the last record cut short: a run still writing
        f.write(data[:-3])
    assert _logging.read_scalars(str(tmp_path), "loss") == ([1, 2], [2.0, 1.5])
    corrupt = bytearray(data)
    corrupt[-6] ^= 0xFF  # a byte of the last record's data
    with open(writer.path, "wb") as f:
        f.write(bytes(corrupt))
    with pytest.raises(ValueError, match="corrupt record"):
        _logging.read_scalars(str(tmp_path), "loss")
