"""experiments/configs/lumos/*.yaml: every file loads with the schema (no unknown keys) and is the
paper cell it is named after (values checked against the paper's settings and against paper.cells)."""
import dataclasses
from pathlib import Path

import pytest

from experiments.lumos import paper
from fgl_jax import schema
from fgl_jax.systems.lumos import LumosConfig

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
    runs = {cfg for c in paper.cells(False, paper.Options(no_gat_on=())) for cfg in paper.lumos_configs(c)}
    files = {schema.resolve(LumosConfig, p, system="lumos") for p in FILES}
    assert files <= runs


def test_quick_cells():
    """--quick: LastFM, GCN, 40 epochs, 2 seeds, the short chain; a sweep cell is the main cell's config at
    Fig. 5's budgets (one program), a baseline the main cell's config with its method."""
    quick = {paper.key_of(c.id): c for c in paper.cells(True)}
    assert len(quick) == 21 and quick["workload/lastfm_asia"].config["mcmc_long_iters"] == 2000
    runs = {k: c for k, c in quick.items() if not k.startswith("workload/")}
    assert all(c.seeds == (0, 1) for c in runs.values())
    for c in runs.values():
        for cfg in paper.lumos_configs(c) or [paper._lumos_config(c.config)]:
            assert (cfg.rounds, cfg.data_seed, cfg.seed, cfg.dataset, cfg.mcmc_iters, cfg.model) == \
                (40, 0, 0, "lastfm_asia", 2000, "gcn")
    for task in ("node", "link"):
        main, mmse = quick[f"LFM/{task}/gcn/lumos"].config, quick[f"LFM/{task}/gcn/lumos_mmse"].config
        assert mmse == dataclasses.replace(main, denoise="mmse")
        sweep = paper.lumos_configs(quick[f"LFM/{task}/gcn/eps"])
        assert [c.epsilon for c in sweep] == [0.5, 1.0, 2.0, 4.0]                 # Fig. 5's budgets
        assert {dataclasses.replace(c, epsilon=2.0) for c in sweep} == {main}
        assert {dataclasses.replace(c, epsilon=2.0) for c in paper.lumos_configs(quick[f"LFM/{task}/gcn/mmse_eps"])} \
            == {mmse}
        for base, method in (("gcn/central", "central"), ("mlp/central", "mlp"), ("gcn/naive", "naive")):
            c = quick[f"LFM/{task}/{base}"]
            assert c.config["method"] == method and paper.lumos_configs(c) == []
            assert paper._lumos_config(c.config) == main
        assert quick[f"LFM/{task}/gcn/novn"].config == dataclasses.replace(main, tree="star")
        assert quick[f"LFM/{task}/gcn/nott"].config == dataclasses.replace(main, trim="none")


def test_facebook_gap_notes_sit_on_the_cells_they_explain():
    full = {paper.key_of(c.id): c for c in paper.cells(False, paper.Options(no_gat_on=()))}
    noted = sorted(k for k, c in full.items() if "gap_note" in c.paper)
    assert noted == sorted(f"FB/{t}/gcn/{w}" for t in ("node", "link") for w in ("lumos", "eps", "novn", "nott"))
    assert "MMSE" in full["FB/node/gcn/lumos"].paper["gap_note"]
    assert full["LFM/node/gcn/lumos"].paper == {"paper_vs_central": -14.73, "paper_vs_naive": 52.85}
