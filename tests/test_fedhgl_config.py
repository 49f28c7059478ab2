"""FedHGL's schema: defaults are the paper's headline setting, bad values are refused in one line
naming the field, and every file of experiments/configs/fedhgl/ is a valid config of its cell."""
from pathlib import Path

import pytest

from fgl_jax import registry, schema
from fgl_jax.systems.fedhgl import FedHGLConfig

from experiments.fedhgl import paper

CONFIGS = Path(__file__).resolve().parents[1] / "experiments" / "configs" / "fedhgl"


def test_defaults_are_the_papers_headline_cell():
    """Table III FedHGL w/ HC on CoraCA, K = 3 (spec fedhgl.md §5, §7.2, §10): numbers written from the spec."""
    c = FedHGLConfig()
    assert (c.dataset, c.clients, c.method, c.mechanism) == ("coraca", 3, "fedhgl_hc", "none")
    assert (c.propagation, c.mode) == ("hc", "fedavg")
    assert (c.rounds, c.local_steps, c.hops) == (200, 3, 2)                  # T = 200, I = 3, N = 2
    assert (c.lr, c.weight_decay, c.hidden, c.dropout) == (0.01, 5e-4, 16, 0.5)
    assert (c.final_relu, c.bias) == (True, False)                           # §10.1: Lin → Drop → Lin → ReLU
    assert (c.beta, c.min_client_size) == (1e4, 10)                          # §7.2 label-Dirichlet partition
    assert (c.val_ratio, c.test_ratio) == (0.2, 0.4)                         # paper: val 20 %, test 40 %
    assert c.ratio_for("coraca") == 0.1 and c.ratio_for("dblp4k") == 0.06 and c.ratio_for("facebook") == 0.008
    assert (c.weighting, c.rr_variant, c.sensitivity, c.noise_propagation) == ("train", "paper", "paper", "paper")
    assert c.eval_every_step and c.seed == 0
    assert registry.entry("system", "fedhgl").info["config"] is FedHGLConfig
    assert schema.traced_names(FedHGLConfig) == ["lr"]


@pytest.mark.parametrize("values,field", [({"clients": 0}, "clients"), ({"method": "fedavg"}, "method"),
                                          ({"eps": 0}, "eps"), ({"dropout": 1.0}, "dropout"),
                                          ({"rounds": "ten"}, "rounds"), ({"method": "global"}, "clients"),
                                          ({"train_ratio": 0.5}, "train_ratio"), ({"hops": 0}, "hops")])
def test_bad_value_is_one_line_naming_the_field(values, field):
    with pytest.raises(ValueError) as e:
        schema.make(FedHGLConfig, values, source="command line")
    msg = str(e.value)
    assert "\n" not in msg and field in msg and msg.startswith("command line")


def test_unknown_key_refused():
    with pytest.raises(ValueError, match="unknown key 'epsilon'.*Did you mean 'eps'"):
        schema.make(FedHGLConfig, {"epsilon": 1.0})


def test_flags_resolve():
    cfg = schema.resolve(FedHGLConfig, flags={"dataset": "dblp4k", "clients": "6", "mechanism": "auto", "eps": "2"})
    assert (cfg.dataset, cfg.clients, cfg.mechanism, cfg.eps, cfg.rounds) == ("dblp4k", 6, "auto", 2.0, 200)


def test_every_config_file_loads_and_is_current():
    files = sorted(CONFIGS.glob("*.yaml"))
    assert len(files) == 88
    cfgs = {f.stem: schema.resolve(FedHGLConfig, f, system="fedhgl") for f in files}
    assert {stem: cfg for stem, cfg, _ in paper.config_cells()} == cfgs      # written by paper.write_configs


def test_config_files_hold_the_papers_cells():
    r = lambda stem: schema.resolve(FedHGLConfig, CONFIGS / f"{stem}.yaml", system="fedhgl")
    c = r("iii_coraca_k3_fedhgl_hc")                  # Table III headline: .6900
    assert (c.dataset, c.clients, c.method, c.rounds, c.train_ratio, c.mechanism) == ("coraca", 3, "fedhgl_hc", 200,
                                                                                      0.1, "none")
    assert c == FedHGLConfig(train_ratio=0.1)
    g = r("iii_dblp4k_global")                        # Global: one client, T = 600
    assert (g.method, g.clients, g.rounds, g.train_ratio) == ("global", 1, 600, 0.06)
    h = r("iii_imdb4k_k9_hgnn_local")
    assert (h.method, h.propagation, h.mode, h.clients) == ("hgnn_local", "basic", "local", 9)
    f = r("fig3_dblp4k_k6_laplace_eps1.4")            # Figure 3(b)
    assert (f.mechanism, f.eps, f.clients, f.method) == ("laplace", 1.4, 6, "fedhgl_hc")
    v = r("v_facebook_k9_fedhgl")                     # Table V, Facebook train ratio 0.008
    assert (v.dataset, v.train_ratio, v.method, v.clients) == ("facebook", 0.008, "fedhgl", 9)
    assert r("fig3_coraca_k6_rr_eps0.1").mechanism == "rr"
