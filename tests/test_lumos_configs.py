"""experiments/configs/lumos/*.yaml: every file loads with the schema (no unknown keys) and is the
paper cell it is named after (values checked against the paper's settings and against paper.cells)."""
from pathlib import Path

import pytest

from fgl_jax import schema
from fgl_jax.systems.lumos import LumosConfig, paper

DIR = Path(__file__).resolve().parents[1] / "experiments" / "configs" / "lumos"
FILES = sorted(DIR.glob("*.yaml"))


def test_there_are_config_files():
    assert len(FILES) == 40


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_every_file_resolves(path):
    cfg = schema.resolve(LumosConfig, path, system="lumos")
    # paper §VIII settings every cell shares
    assert (cfg.rounds, cfg.hidden, cfg.num_layers, cfg.dropout, cfg.lr) == (300, 16, 2, 0.01, 0.01)
    assert cfg.dataset in path.name and cfg.task in path.name and cfg.model in path.name
    assert cfg.data_seed == 0 and cfg.seed == 0
    assert cfg.mcmc_iters == {"facebook": 30000, "lastfm_asia": 10000}[cfg.dataset]


def _cfg(name):
    return schema.resolve(LumosConfig, DIR / name, system="lumos")


def test_named_cells():
    main = _cfg("main_facebook_node_gcn.yaml")
    assert (main.epsilon, main.trim, main.tree, main.denoise, main.model) == (2.0, "mcmc", "tree", "none", "gcn")
    # the headline cell = the defaults (with the data seed and the chain length written out)
    assert main == LumosConfig(data_seed=0, mcmc_iters=LumosConfig().chain_length)
    assert _cfg("main_lastfm_asia_link_gat.yaml").model == "gat"
    assert _cfg("main_facebook_link_gcn_mmse.yaml").denoise == "mmse"
    for e in (0.5, 1.0, 4.0):                        # Fig. 5's budgets
        assert _cfg(f"eps_lastfm_asia_node_gcn_eps{e}.yaml").epsilon == e
    assert _cfg("ablation_facebook_node_gcn_star.yaml").tree == "star"      # w/o VN
    assert _cfg("ablation_facebook_node_gcn_notrim.yaml").trim == "none"    # w/o TT
    n = _cfg("ablation_notrim_lastfm_asia_link_gcn_mmse.yaml")
    assert (n.trim, n.denoise, n.task) == ("none", "mmse", "link")


def test_files_are_the_reproduction_cells():
    cells = {c.key: c.configs[0] for c in paper.cells(False, paper.Options(no_gat_on=())) if c.method == "lumos"}
    files = {schema.resolve(LumosConfig, p, system="lumos") for p in FILES}
    assert files <= set(cells.values())


def test_paper_cells_share_programs_only_across_seed_and_eps():
    """A program label groups runs that differ only in the run seed and the traced eps (what run_sweep varies)."""
    import dataclasses
    quick = paper.cells(True)
    assert len(quick) == 32 and all(len(c.configs) == 2 for c in quick)          # --quick: LastFM, GCN, 2 seeds
    assert {r.rounds for c in quick for r in c.configs} == {40}
    groups: dict = {}
    for c in quick:
        for r in c.configs:
            assert r.data_seed == 0 and r.dataset == "lastfm_asia" and r.mcmc_iters == 2000
            if c.method == "lumos":
                groups.setdefault(c.program, set()).add(dataclasses.replace(r, seed=0, epsilon=1.0))
    assert all(len(v) == 1 for v in groups.values())
    eps = [r.epsilon for c in quick if c.program == "LFM/node/gcn/eps" for r in c.configs]
    assert sorted(set(eps)) == [0.5, 1.0, 2.0, 4.0]                               # Fig. 5's budgets
