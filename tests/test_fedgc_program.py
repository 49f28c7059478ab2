"""FedGC through the one engine: the schema (paper defaults, bad values), build -> Program rounds equal a
plain loop of `fed_round`, run_config's four outputs and resume, the traced-lr sweep, the config files."""
import json
from pathlib import Path

import jax
import numpy as np
import pytest

from fgl_jax import experiment, schema
from fgl_jax.federated import run, run_sweep
from fgl_jax.systems.fedgc import FedGCConfig, FedGCRun
from fgl_jax.systems.fedgc.algorithm import round_key
from fgl_jax.systems.fedgc.condense import fed_round, make_condenser
from tests.fedgc_small import small_config, small_graph

CONFIGS = Path(__file__).resolve().parents[1] / "experiments" / "configs" / "fedgc"


def test_defaults_are_the_papers_headline_cell():
    """FedGCConfig() is Table 1's Cora cell at rate 0.5 as spec §4 / experiments/fedgc run it."""
    c = FedGCConfig()
    assert (c.dataset, c.clients, c.beta, c.rate, c.l_hop) == ("cora", 10, 1.0, 0.5, 2)   # spec §3: 10 clients, β 1
    assert c.defence == "ib" and c.gamma == 5e-4                                          # FedGC, γ (code gib_beta)
    assert c.rounds == 2000 and c.evaluation_rounds == tuple(range(250, 2001, 250))
    assert (c.relay, c.dist, c.agg, c.relay_hidden, c.pge_hidden, c.pge_layers) == ("gcn", "mse", "weighted", 256, 128, 3)
    assert (c.adj_period, c.adj_steps, c.outer, c.cap) == (50, 10, 1, 256)
    assert (c.eval_hidden, c.eval_dropout, c.eval_lr, c.eval_weight_decay) == (256, 0.5, 5e-3, 5e-4)  # spec §2.6
    assert (c.eval_iters, c.eval_decay_at, c.finetune_steps) == (600, 300, 30)
    assert (c.st_optimizer, c.st_lr, c.st_rounds, c.st_weight_decay) == ("adam", 0.01, 200, 5e-4)
    # the two open knobs at the headline setting (`ibfs`; the code: ib_lr 2e-3, torch's Φ init)
    assert (c.ib_epochs, c.ib_lr, c.ib_hidden, c.ib_dim, c.pge_init_bias) == (100, 1e-2, 128, 128, -4.6)
    assert (c.lr_feat, c.lr_adj, c.feature_norm, c.protocol) == (1e-2, 1e-3, "row", "val")
    assert (c.ldp_clip, c.ldp_scale) == (0.1, 0.2)   # ε = 2·0.1/0.2 = 1, the code's clip / laplace_lambda
    assert not c.mia and c.archs == ()


@pytest.mark.parametrize("key,value,field", [("rate", 1.5, "rate"), ("defence", "dp", "defence"),
                                             ("gamma", -1.0, "gamma"), ("ldp_scale", "nan", "ldp_scale"),
                                             ("adj_steps", 60, "adj_steps"), ("archs", ["gat"], "archs"),
                                             ("eval_iters", 610, "eval_iters"), ("bogus", 1, "bogus")])
def test_bad_value_is_one_line_error_naming_the_field(key, value, field):
    with pytest.raises(ValueError) as e:
        schema.make(FedGCConfig, {key: value})
    assert field in str(e.value) and "\n" not in str(e.value)
    if key != "bogus":
        with pytest.raises(ValueError, match=field):
            FedGCConfig(**{key: value})


@pytest.fixture(scope="module")
def tiny():
    cfg = small_config(defence="none", rounds=6, eval_rounds=(3, 6), eval_iters=20, eval_check_every=10,
                       finetune_steps=0)
    return cfg, FedGCRun(cfg, graph=small_graph(n=150, f=8))


@pytest.mark.slow
def test_program_rounds_equal_a_plain_fed_round_loop(tiny):
    cfg, r = tiny
    p = r.program
    res = run(p.algorithm, p.data, jax.random.key(cfg.seed), p.num_rounds)
    cond = make_condenser(cfg.condense_config, r.in_dim, r.num_classes)
    state = cond.init(p.data.key, r.syn_counts)
    np.testing.assert_array_equal(np.asarray(state.x_syn), np.asarray(p.data.start.x_syn))
    step = jax.jit(lambda s, k: fed_round(cond, s, p.data.client, k))
    losses = []
    for i in range(cfg.rounds):
        state, loss = step(state, round_key(p.data, i))
        losses.append(float(loss))
    np.testing.assert_allclose(np.asarray(res.state.cond.x_syn), np.asarray(state.x_syn), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(res.history["train_loss"], losses, rtol=1e-5)
    # chunking does not change the rounds
    res2 = run(p.algorithm, p.data, jax.random.key(cfg.seed), p.num_rounds, chunk=2)
    np.testing.assert_array_equal(res2.history["train_loss"], res.history["train_loss"])


@pytest.mark.slow
def test_run_config_writes_four_outputs_and_resume_equals_uninterrupted(tmp_path):
    base = dict(dataset="csbm", clients=2, rate=0.1, defence="none", relay_hidden=8, pge_hidden=8, eval_hidden=8,
                eval_iters=20, eval_check_every=10, finetune_steps=0, adj_period=4, adj_steps=1)
    full = experiment.run_config(FedGCConfig(rounds=8, eval_rounds=(2, 4, 6, 8), **base), out=str(tmp_path / "full"))
    for f in ("config.yaml", "metrics.jsonl", "summary.json", "checkpoints"):
        assert (tmp_path / "full" / f).exists(), f
    summary = json.loads((tmp_path / "full" / "summary.json").read_text())
    assert summary["system"] == "fedgc" and summary["best"]["best_round"] in (2, 4, 6, 8)
    assert [e["round"] for e in summary["evaluations"]] == [2, 4, 6, 8]
    rows = [json.loads(l) for l in (tmp_path / "full" / "metrics.jsonl").read_text().splitlines()]
    assert len(rows) == 8 and [r["round"] for r in rows if "eval" in r] == [2, 4, 6, 8]
    # config.yaml replays through the schema
    assert schema.resolve(FedGCConfig, tmp_path / "full" / "config.yaml", system="fedgc") == \
        FedGCConfig(rounds=8, eval_rounds=(2, 4, 6, 8), **base)
    # interrupted after 4 rounds, resumed to 8 = uninterrupted
    _as_if_killed_after(tmp_path / "full", tmp_path / "part", 4)
    resumed = experiment.run_config(FedGCConfig(rounds=8, eval_rounds=(2, 4, 6, 8), **base),
                                    out=str(tmp_path / "part"), resume=True)
    np.testing.assert_array_equal(np.asarray(resumed.state.cond.x_syn), np.asarray(full.state.cond.x_syn))
    np.testing.assert_array_equal(resumed.history["train_loss"], full.history["train_loss"])
    assert resumed.evaluations == full.evaluations and resumed.best == full.best


@pytest.mark.slow  # two compiled programs; run with -m slow
def test_lr_sweep_member_equals_single_run(tiny):
    cfg, r = tiny
    p = r.program
    sw = run_sweep(p.algorithm, p.data, [0, 0], 3, hparams={"lr_feat": [1e-2, 5e-2]})
    single = run(p.algorithm, p.data, jax.random.key(0), 3)
    np.testing.assert_allclose(np.asarray(sw.history["train_loss"])[0], single.history["train_loss"], rtol=1e-5)
    assert not np.allclose(np.asarray(sw.history["train_loss"])[1][1:], single.history["train_loss"][1:])


@pytest.mark.slow
def test_pge_init_bias_reaches_the_condenser(tiny):
    cfg, r = tiny
    for bias in (None, -4.6):
        p = FedGCRun(small_config(defence="none", pge_init_bias=bias, rounds=2, eval_rounds=(2,)),
                     graph=small_graph(n=150, f=8)).program
        b = np.asarray(jax.jit(p.algorithm.init)(jax.random.key(0), p.data).cond.pge["b2"])
        if bias is None:
            assert abs(float(b[0])) <= 1 / np.sqrt(8)  # torch default U(±1/sqrt(h)), pge_hidden 8
        else:
            np.testing.assert_array_equal(b, np.float32(bias))


@pytest.mark.slow   # whole-run integration (compiles and runs a full program); the default suite stays short
def test_ib_lr_and_epochs_reach_the_encoder():
    """`ib_lr` / `ib_epochs` set the IB encoder's Adam lr and step count: the code's values given
    explicitly equal the component defaults (bit-identical Z), and another lr gives another Z."""
    from fgl_jax.data.synthetic import csbm
    g = csbm(num_nodes=120, num_classes=3, num_features=8, avg_degree=4.0, homophily=0.8, feature_signal=2.0, seed=4)
    z = lambda **kw: np.asarray(FedGCRun(FedGCConfig(dataset="csbm", clients=2, rate=0.2, rounds=2, st_rounds=2,
                                                     ib_dim=4, ib_hidden=4, **kw), graph=g).clients.features)
    default = z(ib_lr=2e-3, ib_epochs=100)
    from fgl_jax.systems.fedgc import IBConfig
    assert (IBConfig().lr, IBConfig().epochs) == (2e-3, 100)
    assert not np.allclose(default, z(ib_lr=5e-2, ib_epochs=100))
    assert not np.allclose(default, z(ib_lr=2e-3, ib_epochs=3))


def test_every_config_file_resolves_and_names_its_cell():
    files = sorted(CONFIGS.glob("*.yaml"))
    assert len(files) >= 30
    cfgs = {f.stem: schema.resolve(FedGCConfig, f, system="fedgc") for f in files}
    assert cfgs["table1_cora_rate0.5_ibfs"] == FedGCConfig(dataset="cora")   # the headline cell is the defaults
    c = cfgs["table1_cora_rate0.5"]                  # the code's knobs
    assert (c.ib_lr, c.pge_init_bias) == (2e-3, None) and c == FedGCConfig(dataset="cora", ib_lr=2e-3, pge_init_bias=None)
    assert cfgs["table1_citeseer_rate0.25"].rate == 0.25 and cfgs["table1_citeseer_rate0.25"].dataset == "citeseer"
    ibfs = cfgs["table1_cora_rate1.0_ibfs"]
    assert (ibfs.rate, ibfs.ib_lr, ibfs.pge_init_bias) == (1.0, 1e-2, -4.6)
    ldp = cfgs["table2_cora_ldp_mia"]
    assert (ldp.defence, ldp.ldp_clip, ldp.ldp_scale, ldp.feature_norm, ldp.mia) == ("ldp", 0.1, 0.2, "none", True)
    assert cfgs["table2_citeseer_noib_mia"].defence == "none" and cfgs["table2_citeseer_ibd_mia"].ib_dim is None
    for name, cfg in cfgs.items():
        assert cfg.rounds == 2000 and cfg.eval_iters == 600, name


def _as_if_killed_after(src, dst, rounds_done: int) -> None:
    """dst = the directory a kill right after round `rounds_done`'s checkpoint leaves: src's files with
    the later checkpoints, the later metric rows and the summary removed."""
    import shutil
    shutil.copytree(src, dst)
    for f in ("summary.json", "timings.json"):
        (dst / f).unlink()
    for p in (dst / "checkpoints").iterdir():
        if int(p.name[6:12]) > rounds_done:
            shutil.rmtree(p) if p.is_dir() else p.unlink()
    rows = (dst / "metrics.jsonl").read_text().splitlines()[:rounds_done]
    (dst / "metrics.jsonl").write_text("".join(r + "\n" for r in rows))


def test_message_bytes_equal_a_hand_count(tiny):
    """Per round and client: down = the relay GCN θ (w1 [d, h], b1 [h], w2 [h, C], b2 [C]), up = its
    gradients per class and outer step, outer x C x |θ|; float32; every client takes part."""
    cfg, r = tiny
    d, h, c, m = 8, cfg.relay_hidden, 3, cfg.clients
    theta = d * h + h + h * c + c
    cols = r.program.per_round
    assert cols["comm_down_bytes_per_client"].tolist() == [4 * theta] * cfg.rounds
    assert cols["comm_up_bytes_per_client"].tolist() == [4 * cfg.outer * c * theta] * cfg.rounds
    assert cols["comm_up_bytes"][0] == m * 4 * cfg.outer * c * theta and cols["participants"][0] == m
