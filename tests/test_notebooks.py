"""Every notebook is stored with its outputs (python notebooks/execute.py) and still runs top to bottom
with QUICK = True (its first code cell), as CI does."""
import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_stored_with_outputs(path):
    cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    outputs = [o for c in cells for o in c.get("outputs", [])]
    hint = f"{path.name}: run `python notebooks/execute.py {path.relative_to(path.parents[1])}` and commit it"
    assert outputs, f"{hint} (no stored outputs)"
    assert not [o for o in outputs if o["output_type"] == "error"], f"{hint} (an error is stored)"
    if any("plt." in "".join(c["source"]) for c in cells):
        assert any("image/png" in o.get("data", {}) for o in outputs), f"{hint} (its plots are not stored inline)"
    assert all(c.get("execution_count") for c in cells if c.get("outputs")), f"{hint} (partly executed)"


# Executing a notebook costs 25-140 s on the 2-core CI box (its cells compile their own programs), and
# each system's code is covered by its own tests and by `fgl-jax reproduce all --quick`: the default suite
# executes the quick-start notebook, the others run with `-m slow` (their stored outputs are checked above).
DEFAULT_EXECUTED = {"00_quickstart"}
EXECUTED = [pytest.param(p, id=p.stem, marks=() if p.stem in DEFAULT_EXECUTED else pytest.mark.slow)
            for p in NOTEBOOKS]


@pytest.mark.slow
@pytest.mark.parametrize("path", EXECUTED)
def test_notebook_executes(path, tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(path, as_version=4)
    first = next(c for c in nb.cells if c.cell_type == "code")
    assert "QUICK" in first.source, f"{path.name}: the first code cell must define QUICK"
    first.source = first.source.replace("QUICK = False", "QUICK = True")
    for cell in nb.cells:  # run from scratch: the stored outputs must not mask a failure
        if cell.cell_type == "code":
            cell.outputs = []
    client = nbclient.NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError naming the failing cell


def test_a_failing_cell_fails_the_run(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("QUICK = True"),
                                         nbformat.v4.new_code_cell("raise ValueError('planted')")])
    client = nbclient.NotebookClient(nb, timeout=60, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    with pytest.raises(nbclient.exceptions.CellExecutionError, match="planted"):
        client.execute()
