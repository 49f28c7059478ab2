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


def test_only_selects_cells_by_key():
    """--only (issue 49): a re-run of some cells; a pattern matching nothing is one clear error."""
    opts = paper.Options(datasets=("facebook",), facebook_rounds=300,
                         only=("FB/node/gcn/lumos", "FB/node/gcn/naive", "FB/node/gcn/central"))
    got = {paper.key_of(c.id): c for c in paper.cells(False, opts)}
    assert sorted(got) == ["FB/node/gcn/central", "FB/node/gcn/lumos", "FB/node/gcn/naive"]
    assert got["FB/node/gcn/lumos"].config.rounds == 300 and got["FB/node/gcn/lumos"].seeds == (0, 1, 2)
    assert got["FB/node/gcn/naive"].config["rounds"] == 300
    wild = paper.cells(False, dataclasses.replace(opts, only=("workload/*",)))
    assert [paper.key_of(c.id) for c in wild] == ["workload/facebook"]
    with pytest.raises(ValueError, match="matches no cell"):
        paper.cells(False, dataclasses.replace(opts, only=("FB/node/gcn/lumos_typo",)))


def test_authors_encoder_cell_is_the_main_cell_with_that_encoder():
    full = {paper.key_of(c.id): c for c in paper.cells(False)}
    pairs = [(f"{ds}/{task}/gcn/lumos", f"{ds}/{task}/gcn/lumos_authors") for ds in ("FB", "LFM")
             for task in ("node", "link")]
    pairs += [(f"LFM/{task}/gat/lumos", f"LFM/{task}/gat/lumos_authors") for task in ("node", "link")]  # GAT too
    for m, a in pairs:
        main, auth = full[m], full[a]
        assert auth.config == dataclasses.replace(main.config, encoder="authors-code")
        assert auth.seeds == main.seeds and "gap_note" not in auth.paper
    assert not any(k.endswith("lumos_authors") for k in map(paper.key_of, (c.id for c in paper.cells(True))))


def _run(test, values, epochs=None, acc=None):
    r = {"test": test, "std": 0.0, "values": values}
    if acc is not None:
        r["info"] = {"ldp_accounting": acc, "epsilon": 2.0}
        r["epochs"] = epochs
    return r


def test_authors_section_and_mixed_epochs_header():
    acc = {"encoder": "authors-code", "eps": 2.0, "eps_recipient_mean": 250.4, "eps_recipient_max": 945.6}
    runs = {"FB/node/gcn/lumos": _run(0.6, [0.6]), "FB/node/gcn/central": _run(0.8, [0.8]),
            "FB/node/gcn/naive": _run(0.4, [0.4]), "FB/node/gcn/lumos_authors": _run(0.7, [0.7], 300, acc)}
    text = "\n".join(paper.authors_code_section(runs))
    row = next(line for line in text.splitlines() if line.startswith("| FB node gcn"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    # 100 (0.7 - 0.8) / 0.8 = -12.5, 100 (0.7 - 0.4) / 0.4 = +75
    assert cells[3] == "-12.50 (-16.29)" and cells[4] == "+75.00 (+74.29)"
    assert cells[5:] == ["2", "250", "946", "300", "1 / 1"]
    assert paper.authors_code_section({k: v for k, v in runs.items() if "authors" not in k}) == []
    # the budget note ignores the authors-code accounting (no "budget" key) and names the recorded runs
    per = {"budget": "per-recipient", "eps_recipient_max_over_eps": 1.0, "eps_recipient_mean_over_eps": 0.9}
    runs["FB/node/gcn/lumos"] = _run(0.6, [0.6], 300, per)
    runs["FB/link/gcn/lumos"] = {"test": 0.7, "info": {"epsilon": 2.0}}
    note = paper.budget_note(runs)
    assert "(FB/node/gcn/lumos)" in note and "The other Lumos runs predate" in note and "1.00ε" in note
    assert paper._fb_epochs_text({100: ["FB/a", "FB/b", "FB/c"], 300: ["FB/d"]}) == \
        "300 for FB/d; 100 for the other Facebook runs"
