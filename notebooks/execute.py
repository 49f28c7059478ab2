"""Execute notebooks top to bottom and store their outputs, so they open with results on GitHub and
in the docs site (mkdocs-jupyter renders the stored outputs; it does not execute).

    python notebooks/execute.py                      # every notebook in notebooks/
    python notebooks/execute.py notebooks/01_hifgl.ipynb

Each notebook runs as committed (its first cell's QUICK setting; the datasets from FGL_JAX_DATA when
set, else the embedded synthetic stand-ins the notebooks fall back to). Plots use the inline backend as
PNG at 72 dpi with a 256-colour palette, small enough to read on GitHub. Run metadata that changes on every execution (timings)
is dropped so a re-run only changes the diff where results change. tests/test_notebooks.py re-executes
every notebook in CI and checks that the outputs are stored.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# runs before the notebook's own cells; not stored in the notebook
SETUP = ("%matplotlib inline\n%config InlineBackend.figure_formats = ['png']\n"
         "import matplotlib\nmatplotlib.rcParams['figure.dpi'] = 72\n")


def shrink_png(data: str) -> str:
    """A base64 PNG re-encoded with a 256-colour palette when that is smaller (plots have few colours;
    heatmaps lose nothing visible)."""
    import base64
    import io

    from PIL import Image

    raw = base64.b64decode(data)
    img = Image.open(io.BytesIO(raw)).convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT)
    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=True)
    return base64.b64encode(buf.getvalue()).decode() if buf.tell() < len(raw) else data


def shrink_outputs(nb) -> None:
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if "image/png" in out.get("data", {}):
                out["data"]["image/png"] = shrink_png(out["data"]["image/png"])


def execute(path: Path, timeout: int = 1800) -> float:
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    setup = nbformat.v4.new_code_cell(SETUP)
    nb.cells.insert(0, setup)
    with tempfile.TemporaryDirectory() as tmp:  # files a notebook writes land outside the repository
        t0 = time.perf_counter()
        NotebookClient(nb, timeout=timeout, kernel_name="python3",
                       resources={"metadata": {"path": tmp}}).execute()
        seconds = time.perf_counter() - t0
    nb.cells.pop(0)
    for k, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
        cell.execution_count = k + 1
        cell.metadata.pop("execution", None)
        for out in cell.get("outputs", []):
            if "execution_count" in out:
                out["execution_count"] = k + 1
    nb.metadata.pop("widgets", None)
    shrink_outputs(nb)
    nbformat.write(nb, path)
    return seconds


def main(argv=None) -> int:
    # the kernel imports this checkout's fgl_jax, whatever an installed copy points at
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE.parent), os.environ.get("PYTHONPATH")]))
    p = argparse.ArgumentParser(description="execute notebooks and store their outputs")
    p.add_argument("paths", nargs="*", type=Path, help="notebooks (default: every notebooks/*.ipynb)")
    p.add_argument("--timeout", type=int, default=1800, help="seconds per cell (default: 1800)")
    args = p.parse_args(argv)
    paths = args.paths or sorted(HERE.glob("*.ipynb"))
    for path in paths:
        seconds = execute(path, args.timeout)
        print(f"{path.name}: executed in {seconds:.0f} s, {path.stat().st_size / 1024:.0f} KB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
