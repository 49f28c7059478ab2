"""Issue 48 item 5: `--directed keep` keeps a directed file's edges one-way (default: symmetrised),
refuses the models that need a symmetric graph, and partitions on the undirected structure."""
from __future__ import annotations

import numpy as np
import pytest

from fgl_jax.cli import main
from fgl_jax.data import DataNotice, load
from fgl_jax.systems.baseline.config import RunConfig
from fgl_jax.systems.baseline.program import prepare

# a directed cycle 0 -> 1 -> ... -> 11 -> 0 plus chords i -> i + 3 (every edge one-way)
N = 12
ONE_WAY = sorted({(i, (i + 1) % N) for i in range(N)} | {(i, (i + 3) % N) for i in range(0, N, 2)})


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    p = tmp_path_factory.mktemp("directed") / "dir.npz"
    rng = np.random.default_rng(0)
    ei = np.array(ONE_WAY).T
    np.savez(p, edge_index=ei, x=rng.normal(size=(N, 4)).astype(np.float32), y=np.arange(N) % 2)
    return p


def pairs(s, r) -> set:
    return {(int(a), int(b)) for a, b in zip(s, r)}


def test_keep_leaves_every_edge_one_way(path):
    with pytest.warns(DataNotice, match="kept one-way"):
        g = load(str(path), on_directed="keep")
    assert pairs(g.senders, g.receivers) == set(ONE_WAY)
    assert g.meta["directed"] is True


def test_default_still_symmetrises(path):
    with pytest.warns(DataNotice, match="symmetrised"):
        g = load(str(path))
    assert pairs(g.senders, g.receivers) == set(ONE_WAY) | {(b, a) for a, b in ONE_WAY}
    assert "directed" not in g.meta


@pytest.mark.filterwarnings("ignore::fgl_jax.data.DataNotice")
def test_a_run_config_with_keep_trains_on_the_one_way_edges(path):
    prep = prepare(RunConfig(dataset=str(path), clients=2, partition="louvain", directed="keep", split="random"))
    assert pairs(prep.graph.senders, prep.graph.receivers) == set(ONE_WAY)
    b = prep.data.train if hasattr(prep.data, "train") else prep.data.eval
    # every real client edge is one of the file's one-way edges (client-local ids mapped back)
    ids = np.asarray(b.node_ids) if hasattr(b, "node_ids") else None
    if ids is not None:
        m = np.asarray(b.edge_mask)
        s, r = np.asarray(b.graph.senders), np.asarray(b.graph.receivers)
        for c in range(s.shape[0]):
            got = pairs(ids[c][s[c][m[c]]], ids[c][r[c][m[c]]])
            assert got <= set(ONE_WAY)


def test_models_that_need_symmetric_input_are_refused(path, capsys):
    with pytest.raises(ValueError, match="needs a symmetric graph"):
        RunConfig(dataset=str(path), model="chebnet", directed="keep")
    assert main(["run", "--dataset", "csbm", "--directed", "keep", "--rounds", "1"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("fgl-jax: error:") and "registered name" in err[-1]
