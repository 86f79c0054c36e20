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


def _events(path):
    """Every event record of one file, through TensorBoard's own loader."""
    from tensorboard.backend.event_processing import event_file_loader

    return list(event_file_loader.EventFileLoader(str(path)).Load())


def test_tensorboard_reads_every_scalar_written(tmp_path, caplog):
    writer = _logging.MetricWriter(str(tmp_path))
    writer.write_scalars(100, {"loss": 0.5, "lr": 0.1})
    writer.write_scalars(200, {"loss": 0.25, "lr": 0.05})
    writer.write_scalars(300, {})  # nothing to write: no event
    writer.write_scalars(300, {"test_top1": 0.875})
    writer.close()
    assert os.path.basename(writer.path or "").startswith("events.out.tfevents.")
    events = _events(writer.path)  # the file's version, then one event per write
    assert events[0].file_version == "brain.Event:2"
    assert [e.step for e in events[1:]] == [100, 200, 300]
    assert _scalars(tmp_path) == {
        "loss": [(100, 0.5), (200, 0.25)],
        "lr": [(100, pytest.approx(0.1)), (200, pytest.approx(0.05))],
        "test_top1": [(300, 0.875)],
    }


def test_the_log_has_every_scalar_and_other_processes_write_no_file(tmp_path, monkeypatch):
    logged = []
    monkeypatch.setattr(_logging.logging, "info", lambda fmt, *a: logged.append(fmt % a))
    for index in (1, 0):  # the run's writer as process 1 of a pod, then as process 0
        monkeypatch.setattr(_logging.jax, "process_index", lambda i=index: i)
        writer = _logging.make_writer(str(tmp_path / str(index)))
        writer.write_scalars(7, {"b": 2.0, "a": 1.0 / 3.0})
        writer.close()
    assert logged == ["[7] a=0.333333, b=2"] * 2  # both log
    assert not (tmp_path / "1").exists()  # process 1 writes no file
    assert [os.path.dirname(writer.path)] == [str(tmp_path / "0")]
    assert os.listdir(tmp_path / "0") == [os.path.basename(writer.path)]


def test_two_writers_in_one_instant_write_two_files(tmp_path, monkeypatch):
    monkeypatch.setattr(_logging.time, "time", lambda: 1234.5)
    a, b = _logging.MetricWriter(str(tmp_path)), _logging.MetricWriter(str(tmp_path))
    a.close(), b.close()
    assert a.path != b.path and len(os.listdir(tmp_path)) == 2


def test_a_resumed_run_replaces_the_steps_past_its_checkpoint(tmp_path):
    # The first run logged steps 10-30 and stopped; its checkpoint was step 20. The resumed
    # run's file marks the restart, so TensorBoard and read_scalars keep step 20 of the first
    # file (logged before the checkpoint) and take step 30 from the resumed run.
    first = _logging.MetricWriter(str(tmp_path))
    for step, loss in ((10, 3.0), (20, 2.0), (30, 1.5)):
        first.write_scalars(step, {"loss": loss})
    first.close()
    resumed = _logging.make_writer(str(tmp_path), start_step=20)
    for step, loss in ((30, 1.0), (40, 0.5)):
        resumed.write_scalars(step, {"loss": loss})
    resumed.close()
    want = [(10, 3.0), (20, 2.0), (30, 1.0), (40, 0.5)]
    assert _scalars(tmp_path) == {"loss": want}
    assert _logging.read_scalars(str(tmp_path), "loss") == ([10, 20, 30, 40], [3.0, 2.0, 1.0, 0.5])
    # Without the marker (as before 2026-11-30) both step 30s would be read.
    plain = tmp_path / "plain"
    for path in sorted(tmp_path.glob("*tfevents*")):
        plain.mkdir(exist_ok=True)
        records = [e for e in _events(path) if not e.HasField("session_log")]
        (plain / path.name).write_bytes(_framed(records))
    assert _logging.read_scalars(str(plain), "loss")[0] == [10, 20, 30, 30, 40]


def _framed(events) -> bytes:
    import io

    from tensorboard.summary.writer.record_writer import RecordWriter

    buffer = io.BytesIO()
    writer = RecordWriter(buffer)
    for event in events:
        writer.write(event.SerializeToString())
    return buffer.getvalue()


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


def test_writing_and_reading_summaries_do_not_import_tensorflow(tmp_path):
    # A fresh interpreter with stand-ins for TensorFlow and clu first on its path: importing
    # either records its name and fails, whether or not the real ones are installed.
    poison = tmp_path / "poison"
    for name in ("tensorflow", "clu"):
        (poison / name).mkdir(parents=True)
        (poison / name / "__init__.py").write_text(
            f"open({str(tmp_path / 'imported')!r}, 'a').write({name!r} + ' ')\n"
            f"raise ImportError('{name} is blocked by the test')\n"
        )
    logdir = str(tmp_path / "run")
    code = (
        "from jaxcl.training import _logging\n"
        f"w = _logging.make_writer({logdir!r}, start_step=5)\n"
        "w.write_scalars(6, {'loss': 1.0})\n"
        "w.close()\n"
        f"assert _logging.read_scalars({logdir!r}, 'loss') == ([6], [1.0])\n"
    )
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(poison)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert not (tmp_path / "imported").exists(), (tmp_path / "imported").read_text()
    assert os.listdir(logdir)  # the event file was written


def test_gs_workdirs_need_no_tensorflow():
    # Without TensorFlow, etils.epath (orbax's checkpoints, the workdir's files, the event
    # file) reaches gs:// through fsspec, whose gs:// is gcsfs: the train extra installs it.
    import importlib.util

    import fsspec

    assert fsspec.get_filesystem_class("gs").__module__.split(".")[0] == "gcsfs"
    if importlib.util.find_spec("tensorflow") is None:
        backend = type(epath.Path("gs://bucket/run")._backend).__name__
        assert backend == "_FileSystemSpecBackend", backend


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
    with pytest.raises(ValueError, match="record 3: .*tfevents.* failed event crc32 check"):
        _logging.read_scalars(str(tmp_path), "loss")
    # A damaged length in the middle of the file is an error, not the end of the file.
    first = len(_framed(_events(writer.path)[:1]))  # the second record starts here
    corrupt = bytearray(data)
    corrupt[first + 1] ^= 0x01
    with open(writer.path, "wb") as f:
        f.write(bytes(corrupt))
    with pytest.raises(ValueError, match="record 1: .*tfevents.* failed header crc32 check"):
        _logging.read_scalars(str(tmp_path), "loss")
    with pytest.raises(FileNotFoundError, match="is not a folder"):
        _logging.read_scalars(str(tmp_path / "missing"), "loss")
