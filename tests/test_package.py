"""The package as a user meets it: ``import jaxcl`` in a fresh interpreter, the README's
Python examples run verbatim, the layering of the subpackages, and module sizes."""

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).parents[1]
PACKAGE = REPO / "jaxcl"

# Each subpackage may import only from lower layers: the pure functions at the bottom, the
# trainer and the configs at the top (nothing below jaxcl.training imports it).
LAYERS = [
    {"_checks", "_blocks", "_hostmem", "_slabs", "_tracing"},
    {"_edge_slabs"},
    {"random_features", "mixers", "augment", "data", "optim"},
    {"losses", "graphs"},
    {"models"},
    {"evaluation"},
    {"methods"},
    {"training"},
    {"configs", "main"},
]


def _fresh_python(code: str, timeout: int = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ, JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="3")
    env.pop("XLA_FLAGS", None)  # a user's interpreter: one CPU device
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_import_jaxcl_gives_every_subpackage_in_a_fresh_interpreter():
    code = (
        "import jaxcl, sys\n"
        "assert 'jaxcl.training' not in sys.modules  # loaded on first use\n"
        "for name in jaxcl._SUBPACKAGES:\n"
        "    assert getattr(jaxcl, name).__name__ == 'jaxcl.' + name, name\n"
        "assert set(jaxcl._SUBPACKAGES) <= set(dir(jaxcl))\n"
        "print(jaxcl.losses.infonce, jaxcl.training.train_and_evaluate)\n"
    )
    proc = _fresh_python(code)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "<function infonce" in proc.stdout
    proc = _fresh_python("import jaxcl; jaxcl.lossez")
    assert proc.returncode != 0
    assert "module 'jaxcl' has no attribute 'lossez'" in proc.stderr


def _readme_python_blocks() -> list[str]:
    text = (REPO / "README.md").read_text()
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_readme_has_python_examples_and_no_fence_the_runner_would_miss():
    assert len(_readme_python_blocks()) >= 1
    # Every opening fence names python (run below) or bash (the setup commands); a block
    # fenced otherwise (```py, ```Python, indented) would be skipped without a word.
    fences = re.findall(r"^([ \t]*)```(.*)$", (REPO / "README.md").read_text(), flags=re.M)
    openings = fences[::2]
    assert all(indent == "" for indent, _ in fences), fences
    assert sorted({lang for _, lang in openings}) == ["bash", "python"], openings
    assert sum(lang == "python" for _, lang in openings) == len(_readme_python_blocks())


@pytest.mark.parametrize("index", range(len(_readme_python_blocks())))
def test_readme_python_example_runs_verbatim(index):
    """Each ```python block of README.md, as written, in a fresh interpreter."""
    block = _readme_python_blocks()[index]
    proc = _fresh_python(block)
    assert proc.returncode == 0, f"README block {index}:\n{block}\n{proc.stderr[-3000:]}"


def _imports(path: Path) -> set[str]:
    """The jaxcl subpackages a module imports (at any depth, runtime imports included)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("jaxcl"):
            parts = node.module.split(".")
            out |= {a.name for a in node.names} if len(parts) == 1 else {parts[1]}
        elif isinstance(node, ast.Import):
            out |= {a.name.split(".")[1] for a in node.names if a.name.startswith("jaxcl.")}
    return out


def test_no_subpackage_imports_a_higher_layer():
    layer_of = {name: i for i, names in enumerate(LAYERS) for name in names}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        own = rel.parts[0].removesuffix(".py")
        if own == "__init__":
            continue
        assert own in layer_of, f"{rel}: subpackage {own!r} has no layer in this test"
        for imported in _imports(path) - {own}:
            assert layer_of[imported] < layer_of[own], (
                f"{rel} ({own}, layer {layer_of[own]}) imports jaxcl.{imported} "
                f"(layer {layer_of[imported]})"
            )


def test_library_modules_stay_small():
    """A module is one idea; past ~400 lines it is split (STYLE.md)."""
    long = {
        str(p.relative_to(REPO)): n
        for p in PACKAGE.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > 420
    }
    assert not long, long
