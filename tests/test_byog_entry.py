"""A user's graph file through every entry point (issue 27): --dataset PATH, the path and its sha256
in config.yaml, replay in a fresh process and the changed-file warning, resume refused on a changed
file, each system refusing the wrong kind of data in one line, `split: auto|paper|keep`, `inspect`."""
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from fgl_jax.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _toy_arrays(n=60, c=3, f=6, seed=0):
    """A small undirected graph with class structure and a train/val/test split, as plain arrays."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % c
    pairs = {(int(i), int(j)) for i, j in rng.integers(0, n, (4 * n, 2)) if i != j and
             (y[i] == y[j] or rng.random() < 0.2)}
    ei = np.array(sorted(pairs | {(j, i) for i, j in pairs})).T
    x = (np.eye(c)[y] @ rng.normal(size=(c, f)) + 0.5 * rng.normal(size=(n, f))).astype(np.float32)
    perm = rng.permutation(n)
    masks = [np.isin(np.arange(n), perm[a:b]) for a, b in ((0, n // 2), (n // 2, 3 * n // 4), (3 * n // 4, n))]
    return ei, x, y, masks


@pytest.fixture
def npz(tmp_path):
    ei, x, y, (tr, va, te) = _toy_arrays()
    path = tmp_path / "mine.npz"
    np.savez(path, edge_index=ei, x=x, y=y, train_mask=tr, val_mask=va, test_mask=te)
    return path


TINY = ["--clients", "3", "--rounds", "3", "--hidden", "8", "--no-progress"]


@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    """One run on a user's file (shared: each test below changes the file, not the run)."""
    tmp = tmp_path_factory.mktemp("byog")
    ei, x, y, (tr, va, te) = _toy_arrays()
    npz = tmp / "mine.npz"
    np.savez(npz, edge_index=ei, x=x, y=y, train_mask=tr, val_mask=va, test_mask=te)
    out = tmp / "run"
    assert main(["run", "--dataset", str(npz), *TINY, "--out", str(out)]) == 0
    return npz, out


@pytest.mark.slow
def test_run_on_a_path_records_it_and_replays_in_a_fresh_process(first_run, tmp_path):
    npz, out = first_run
    cfg = yaml.safe_load((out / "config.yaml").read_text())
    assert cfg["dataset"] == str(npz.resolve())
    assert cfg["dataset_sha256"] == hashlib.sha256(npz.read_bytes()).hexdigest()
    # the file changes: a replay in a fresh process (another working directory) says so in one line and runs
    ei, x, y, (tr, va, te) = _toy_arrays(seed=1)
    np.savez(npz, edge_index=ei, x=x, y=y, train_mask=tr, val_mask=va, test_mask=te)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "fgl_jax.cli", "run", "--config", str(out / "config.yaml"),
                        "--out", str(tmp_path / "replay"), "--no-progress"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    warn = [line for line in r.stderr.splitlines() if "changed since this config was written" in line]
    assert len(warn) == 1 and str(npz.resolve()) in warn[0]
    replay = yaml.safe_load((tmp_path / "replay" / "config.yaml").read_text())
    assert replay["dataset_sha256"] == hashlib.sha256(npz.read_bytes()).hexdigest() != cfg["dataset_sha256"]


def test_resume_refuses_a_changed_file(first_run, capsys):
    npz, out = first_run
    np.savez(npz, **{k: v for k, v in zip(("edge_index", "x", "y"), _toy_arrays(seed=2)[:3])})
    assert main(["run", "--dataset", str(npz), *TINY[:-1], "--rounds", "5", "--out", str(out), "--resume",
                 "--resume-with-changes", "rounds", "--no-progress"]) == 2
    # the file's notices (no split given: it is loaded again to be compared) come before the one error line
    err = [ln for ln in capsys.readouterr().err.strip().splitlines() if not ln.startswith("fgl-jax: notice: ")]
    assert len(err) == 1 and "changed since the run" in err[0] and "--overwrite" in err[0], err


def test_a_missing_path_is_one_line(tmp_path, capsys):
    assert main(["run", "--dataset", str(tmp_path / "nothing.npz"), "--rounds", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "does not exist" in err


@pytest.mark.parametrize("args, message", [
    (["hifgl", "--dataset", "coraca"], "is a hypergraph dataset, not a graph"),
    (["lumos", "--dataset", "aifb"], "is a hetero dataset, not a graph"),
    (["fedgc", "--dataset", "coraca"], "is a hypergraph dataset, not a graph"),
    (["run", "--dataset", "aifb"], "is a hetero dataset, not a graph"),
    (["fedhgl", "--dataset", "aifb"], "FedHGL takes a hypergraph or a plain graph"),
    (["fedhgn", "--dataset", "cora"], "FedHGN needs a heterogeneous graph"),
    (["fedhgn", "--dataset", "NPZ"], "FedHGN needs a heterogeneous graph"),
])
def test_each_system_refuses_the_wrong_kind_in_one_line(args, message, npz, capsys):
    args = [str(npz) if a == "NPZ" else a for a in args]
    assert main([*args, "--rounds", "1", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("fgl-jax: error:") and message in err and len(err.splitlines()) == 1, err


def test_split_auto_keeps_a_users_masks_and_the_paper_split_on_builtins(npz):
    from fgl_jax import load
    from fgl_jax.systems.hifgl import HiFGLConfig, split_graph
    g = load(str(npz))
    kept = split_graph(g, HiFGLConfig(dataset=str(npz)))
    assert all((getattr(kept, m) == getattr(g, m)).all() for m in ("train_mask", "val_mask", "test_mask"))
    # the paper's split: FederatedScope's per-class draw (round(0.6 N / C) training nodes per class here)
    paper = split_graph(g, HiFGLConfig(dataset=str(npz), split="paper"))
    assert paper.train_mask.sum() == 3 * round(0.6 * 60 / 3) and not (paper.train_mask == g.train_mask).all()
    # a built-in name keeps the paper's split under auto (reproduction unchanged)
    sizes = {"train_per_class": 5, "num_val": 12}
    assert (split_graph(g, HiFGLConfig(dataset="cora", **sizes)).train_mask ==
            split_graph(g, HiFGLConfig(dataset=str(npz), split="paper", **sizes)).train_mask).all()


def test_fedhgl_takes_a_plain_graph_as_one_hop_hyperedges_and_keeps_its_split(npz):
    from fgl_jax.systems.fedhgl import FedHGLConfig
    from fgl_jax.systems.fedhgl.clients import partition_hypergraph
    from fgl_jax.systems.fedhgl.data import kept_splits
    from fgl_jax.systems.fedhgl.program import load_input
    ei, x, y, (tr, va, te) = _toy_arrays()
    hg = load_input(str(npz))
    assert hg.num_nodes == 60 and hg.feature_kind == "numeric" and (hg.train_mask == tr).all()
    # hyperedge of v = {v} ∪ N(v), re-derived from the edge list (equal neighbourhoods merge)
    want = {tuple(sorted({v, *ei[0][ei[1] == v].tolist()})) for v in range(60)}
    assert {tuple(sorted(e.tolist())) for e in hg.edge_lists()} == want
    split = partition_hypergraph(hg, 3, seed=0, min_size=5)
    idx = kept_splits(split)
    for nodes, (a, b, c) in zip(split.client_nodes, idx):
        assert set(nodes[a]) == set(np.flatnonzero(tr)) & set(nodes)
        assert set(nodes[b]) == set(np.flatnonzero(va)) & set(nodes) and set(nodes[c]) == set(np.flatnonzero(te)) & set(nodes)
    assert FedHGLConfig().split == "auto"


def test_inspect_prints_the_statistics_and_the_partition(npz, capsys):
    ei, x, y, (tr, va, te) = _toy_arrays()
    assert main(["inspect", str(npz), "--partition", "random", "--clients", "3"]) == 0
    out = capsys.readouterr().out
    und = len({(min(a, b), max(a, b)) for a, b in ei.T})
    deg = np.bincount(ei[1], minlength=60)
    assert "nodes:      60" in out and f"edges:      {und} undirected" in out
    assert f"homophily:  {np.mean(y[ei[0]] == y[ei[1]]):.3f}" in out
    assert f"min {deg.min()}, median {np.median(deg):g}, max {deg.max()}" in out
    assert f"train {tr.sum()}, val {va.sum()}, test {te.sum()}" in out
    assert "partition:  random, 3 clients" in out and "edges cut:" in out


def test_datasets_lists_every_kind_and_how_to_add_your_own(capsys):
    assert main(["datasets"]) == 0
    out = capsys.readouterr().out
    kinds = {line.split()[1] for line in out.splitlines()[:30] if len(line.split()) > 1 and line[0] != " "}
    assert {"graph", "hypergraph", "hetero"} <= kinds
    assert "--dataset path/to/file-or-dir" in out and out.rstrip().endswith("docs/your_own_graph.md")


def test_fedhgn_and_fedhgl_take_a_users_directory(tmp_path):
    """FedHGN's input from node_types.csv + edges/<relation>.csv; FedHGL's from hyperedges.txt + nodes.csv."""
    from fgl_jax.systems.fedhgl.program import load_input as fedhgl_input
    from fgl_jax.systems.fedhgn.data import load_input as fedhgn_input
    het = tmp_path / "het"
    (het / "edges").mkdir(parents=True)
    papers, authors = [f"p{i}" for i in range(12)], [f"a{i}" for i in range(4)]
    rows = ["id,type,label"] + [f"{p},paper,{i % 2}" for i, p in enumerate(papers)] + [f"{a},author," for a in authors]
    (het / "node_types.csv").write_text("\n".join(rows) + "\n")
    (het / "edges" / "writes.csv").write_text("src,dst\n" + "".join(f"a{i % 4},p{i}\n" for i in range(12)))
    g = fedhgn_input(str(het))
    assert sorted(g.node_types) == ["author", "paper"] and g.target == "paper" and g.num_classes == 2
    assert sum(len(e[0]) for e in g.edges) == 12
    hyp = tmp_path / "hyp"
    hyp.mkdir()
    (hyp / "hyperedges.txt").write_text("0 1 2\n2 3\n3 4 5\n")
    (hyp / "nodes.csv").write_text("label,f0,f1\n" + "".join(f"{i % 2},{i % 2},1\n" for i in range(6)))
    h = fedhgl_input(str(hyp))
    assert h.num_nodes == 6 and h.num_edges == 3 and h.feature_kind == "binary"


def test_a_data_notice_is_one_line_on_the_command_line(tmp_path, capsys):
    """Issue 50 item 6: each notice of one load is exactly one line on stderr, printed once
    (through the `fgl_jax` logger, not Python's two-line warnings); -q silences them."""
    ei, x, y, _ = _toy_arrays()
    path = tmp_path / "nosplit.npz"
    np.savez(path, edge_index=ei, x=x, y=y)
    assert main(["inspect", str(path)]) == 0
    err = capsys.readouterr().err.splitlines()
    notices = [ln for ln in err if ln.startswith("fgl-jax: notice: ")]
    assert notices and len(notices) == len(err)  # nothing else: no source line, no "UserWarning"
    assert len(set(notices)) == len(notices)  # each once
    assert f"fgl-jax: notice: {path}: no split given: default stratified split 0.6/0.2/0.2 per class, seed 0" in notices
    assert main(["inspect", str(path), "-q"]) == 0
    assert capsys.readouterr().err == ""
