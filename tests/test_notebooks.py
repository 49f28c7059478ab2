"""Every notebook runs top to bottom with QUICK = True (its first code cell), as CI does."""
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes(path, tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(path, as_version=4)
    first = next(c for c in nb.cells if c.cell_type == "code")
    assert "QUICK" in first.source, f"{path.name}: the first code cell must define QUICK"
    first.source = first.source.replace("QUICK = False", "QUICK = True")
    assert not any(c.get("outputs") for c in nb.cells if c.cell_type == "code"), f"{path.name} has stale outputs"
    client = nbclient.NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError naming the failing cell
