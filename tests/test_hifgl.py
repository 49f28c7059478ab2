"""HiFGL: SecMP equals plain message passing, straight-through gradients, federated algebra, guards."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fgl_jax.batch import build_client_batch, full_graph_batch
from fgl_jax.federated import FedConfig, NonFiniteError, baseline, make_fed_data, run
from fgl_jax.federated.algorithm import x64_scope
from fgl_jax import schema
from fgl_jax.nn import make_model
from fgl_jax.systems import hifgl as H
from tests.helpers import dense_adj, toy_graph


def _setup(model="gcn", mode="field", silos=3, norm="gcn_selfloop", n=40, seed=0, T=1):
    g = toy_graph(n=n, seed=seed)
    assign = np.arange(g.num_nodes) % silos
    data = H.make_hifgl_data(g, assign, silos)
    cfg = H.HiFGLConfig(model=model, hidden=8, mode=mode, norm=norm, T=T)
    alg = H.hifgl(cfg, g.num_features, g.num_classes)
    return g, assign, data, cfg, alg


def _authors_code_adjacency(g, carried=None):
    """The authors' code's GCN normalisation as a dense [N, N] matrix (row = receiver), re-derived by
    running their Device/GCNAgg loop (code/modules.py, code/models.py) in NumPy on one-hot states:
    each device's neighbour list holds every edge; a device sends its state / sqrt(1 + len(list)) to
    each neighbour the edge between them carries (`carried` [E] bool, None = every edge); a receiver
    stacks [own state] + received messages (n items), divides by sqrt(n + 1) and takes the mean."""
    n = g.num_nodes
    carried = np.ones(g.num_edges, bool) if carried is None else carried
    neighbours = [[] for _ in range(n)]
    for s, r in zip(g.senders, g.receivers):
        if r not in neighbours[s]:
            neighbours[s].append(r)
    inbox = [[np.eye(n)[u]] for u in range(n)]
    for s, r, c in zip(g.senders, g.receivers, carried):
        if c:
            inbox[r].append(np.eye(n)[s] / np.sqrt(1 + len(neighbours[s])))
    return np.stack([np.mean(np.stack(items) / np.sqrt(len(items) + 1), axis=0) for items in inbox])


def _dense_reference(g, params, model, norm, carried=None):
    """Dense NumPy GCN/SAGE with Eq. 2/3 (norm 'paper_eq23': no self-loops), A+I normalisation or the
    authors' code's ('authors_code', messages along the `carried` edges only)."""
    p = jax.tree.map(np.asarray, params)["params"]
    a = dense_adj(g)
    x = g.dense_x().astype(np.float64)
    deg = a.sum(1)
    h = x
    for i in range(2):
        k = p[f"layer_{i}"]["kernel"]
        if model == "gcn" and norm == "authors_code":
            h = _authors_code_adjacency(g, carried) @ h @ k + p[f"bias_{i}"]
        elif model == "gcn":
            if norm == "gcn_selfloop":
                ah = a + np.eye(len(a))
                d = ah.sum(1)
            else:
                ah, d = a, np.maximum(deg, 1)
            h = (ah / np.sqrt(d)[:, None] / np.sqrt(d)[None, :]) @ h @ k + p[f"bias_{i}"]
        else:
            w = k.shape[1] // 2
            h = h @ k[:, :w] + (a / np.maximum(deg, 1)[:, None]) @ h @ k[:, w:] + p[f"bias_{i}"]
        if i == 0:
            h = np.maximum(h, 0)
    return h


@pytest.mark.slow
@pytest.mark.parametrize("model,norm", [("gcn", "gcn_selfloop"), ("gcn", "paper_eq23"), ("gcn", "authors_code"),
                                        ("sage", "gcn_selfloop")])
@pytest.mark.parametrize("mode", ["field", "real", "plain"])
def test_secmp_forward_equals_dense_reference(model, norm, mode):
    g, _, data, cfg, alg = _setup(model=model, mode=mode, norm=norm)
    with x64_scope(alg):
        state = alg.init(jax.random.key(0), data)
        logits, overflow = jax.jit(lambda s, k: H.forward(s.params, data, s.codes, cfg, k))(state, jax.random.key(1))
    ref = _dense_reference(g, state.params, model, norm)
    # field mode: each neighbour sum carries <= deg * 2^-(f+1) rounding, amplified by at most the layer maps
    tol = 2e-3 if mode == "field" else 1e-4
    np.testing.assert_allclose(np.asarray(logits), ref, atol=tol, rtol=1e-3)
    assert not bool(overflow)


def test_secure_sum_is_exact_up_to_quantisation():
    g, _, data, cfg, alg = _setup(mode="field")
    rng = np.random.default_rng(0)
    msgs = jnp.asarray(rng.normal(size=(g.num_nodes, 5)), jnp.float32)
    with x64_scope(alg):
        state = alg.init(jax.random.key(0), data)
        sec, flag = jax.jit(lambda m, k: H.secure_neighbour_sum(m, data.senders, data.receivers, data.edge_mask,
                                                                data.silo, state.codes, cfg, k))(msgs, jax.random.key(3))
    ref = dense_adj(g) @ np.asarray(msgs, np.float64)
    deg = dense_adj(g).sum(1)
    bound = (deg + 1)[:, None] * 2.0 ** -(cfg.frac_bits + 1) + 1e-6  # per-message rounding, float32 output
    assert np.all(np.abs(np.asarray(sec) - ref) <= bound)
    assert not bool(flag)


@pytest.mark.slow
def test_gradients_are_the_plain_gradients():
    g, _, data, cfg, alg = _setup(mode="field")
    plain_cfg = H.HiFGLConfig(model="gcn", hidden=8, mode="plain")
    with x64_scope(alg):
        state = alg.init(jax.random.key(0), data)
        ct = jnp.asarray(np.random.default_rng(1).normal(size=(g.num_nodes, g.num_classes)), jnp.float32)
        f_sec = lambda p: jnp.sum(H.forward(p, data, state.codes, cfg, jax.random.key(2))[0] * ct)
        f_pl = lambda p: jnp.sum(H.forward(p, data, state.codes, plain_cfg, jax.random.key(2))[0] * ct)
        g_sec, g_pl = jax.grad(f_sec)(state.params), jax.grad(f_pl)(state.params)
    for a, b in zip(jax.tree.leaves(g_sec), jax.tree.leaves(g_pl)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["plain", "field"])
def test_one_silo_equals_global_training(mode):
    """S = 1: HiFGL is centralised full-graph training (spec test 8), step for step."""
    g = toy_graph(n=50, seed=3)
    data = H.make_hifgl_data(g, np.zeros(g.num_nodes, np.int32), 1)
    cfg = H.HiFGLConfig(model="gcn", hidden=8, mode=mode, lr=0.02, lr_gamma=0.9, lr_decay_every=2)
    alg = H.hifgl(cfg, g.num_features, g.num_classes)
    res = run(alg, data, jax.random.key(4), 5)
    model = make_model("gcn", g.num_features, g.num_classes, hidden=8)
    glob = run(baseline(model, FedConfig("fedavg", local_steps=1, optim=cfg.optim)), make_fed_data(full_graph_batch(g)),
               jax.random.key(4), 5)
    tol = 1e-5 if mode == "plain" else 2e-3
    for a, b in zip(jax.tree.leaves(res.state.params), jax.tree.leaves(glob.state.server)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=tol, rtol=tol)


@pytest.mark.slow
def test_without_cross_edges_forward_equals_fedavg_baseline_forward():
    g = toy_graph(n=45, seed=6)
    assign = np.arange(g.num_nodes) % 3
    keep = assign[g.senders] == assign[g.receivers]
    import dataclasses
    g_intra = dataclasses.replace(g, senders=g.senders[keep], receivers=g.receivers[keep])
    data = H.make_hifgl_data(g_intra, assign, 3)
    cfg = H.HiFGLConfig(model="gcn", hidden=8, mode="field")
    alg = H.hifgl(cfg, g.num_features, g.num_classes)
    with x64_scope(alg):
        state = alg.init(jax.random.key(0), data)
        logits, _ = jax.jit(lambda s: H.forward(s.params, data, s.codes, cfg, jax.random.key(1)))(state)
    batch = build_client_batch(g, assign, 3)
    model = make_model("gcn", g.num_features, g.num_classes, hidden=8)
    per_client = jax.vmap(lambda b: model.apply(state.params, b))(batch)
    ids, mask = np.asarray(batch.node_ids), np.asarray(batch.node_mask)
    np.testing.assert_allclose(np.asarray(per_client)[mask], np.asarray(logits)[ids[mask]], atol=2e-3)


def test_silo_decode_sees_only_per_target_aggregates(monkeypatch):
    g, _, data, cfg, alg = _setup(mode="field", T=2)
    seen = []
    from fgl_jax.systems.hifgl import secmp
    original = secmp.silo_decode

    def spy(coded_aggregate, lam, p):
        seen.append((tuple(coded_aggregate.shape), tuple(lam.shape)))
        return original(coded_aggregate, lam, p)

    monkeypatch.setattr(secmp, "silo_decode", spy)
    with x64_scope(alg):
        state = alg.init(jax.random.key(0), data)
        H.secure_neighbour_sum(jnp.ones((g.num_nodes, 4)), data.senders, data.receivers, data.edge_mask, data.silo,
                               state.codes, cfg, jax.random.key(1))
    # one call per target (vmapped): T+1 aggregated shares of width d, and that silo's T+1 weights only
    assert seen == [((cfg.T + 1, 4), (cfg.T + 1,))]


def test_server_average_of_identical_models_is_identity():
    p = {"w": jnp.arange(6.0).reshape(2, 3)}
    stacked = jax.tree.map(lambda a: jnp.stack([a, a, a]), p)
    np.testing.assert_array_equal(H.server_average(stacked)["w"], p["w"])


@pytest.mark.slow
def test_field_overflow_stops_the_run():
    g = toy_graph(n=30, seed=1)
    data = H.make_hifgl_data(g, np.arange(g.num_nodes) % 2, 2)
    cfg = H.HiFGLConfig(model="gcn", hidden=8, frac_bits=29)  # 2^29 scale: aggregates of |x| >= 2 overflow
    with pytest.raises(NonFiniteError, match="finite field"):
        run(H.hifgl(cfg, g.num_features, g.num_classes), data, jax.random.key(0), 2)


@pytest.mark.parametrize("kwargs, message", [
    ({"T": 0}, "T"), ({"mode": "fhe"}, "mode"), ({"norm": "rw"}, "norm"), ({"model": "gat"}, "model"),
    ({"frac_bits": 40}, "frac"), ({"p": 12}, "prime"), ({"p": 5, "T": 2, "frac_bits": 1}, "T=2"),
])
def test_bad_config(kwargs, message):
    with pytest.raises(ValueError, match=message):
        H.HiFGLConfig(**kwargs)


@pytest.mark.parametrize("flags, field", [({"clients": "0"}, "clients"), ({"mode": "fhe"}, "mode"),
                                          ({"lr": "-1"}, "lr"), ({"num_layers": "two"}, "num_layers"),
                                          ({"silos": "5"}, "silos"), ({"p": "12"}, "prime")])
def test_bad_value_is_one_line_naming_the_field(flags, field):
    """Flags, YAML and Python share one set of rules: a one-line ValueError that names the field."""
    with pytest.raises(ValueError) as e:
        schema.resolve(H.HiFGLConfig, flags=flags)
    msg = str(e.value)
    assert "\n" not in msg and field in msg


def test_defaults_are_the_papers_setting():
    """HiFGL §6.1 / Table 2 and the spec's [DECIDE] choices (specs/hifgl.md §4, §5.2), written out here."""
    cfg = H.HiFGLConfig()
    assert (cfg.dataset, cfg.clients, cfg.rounds, cfg.model) == ("cora", 5, 50, "gcn")  # 5 silos, <= 50 epochs
    assert (cfg.hidden, cfg.num_layers) == (64, 2)
    assert (cfg.lr, cfg.lr_gamma, cfg.lr_decay_every, cfg.weight_decay) == (0.01, 0.9, 4, 0.0)  # Adam, StepLR(4, 0.9)
    assert cfg.T == 1 and cfg.p == 2**31 - 1 and cfg.frac_bits == 16 and cfg.mode == "field"
    assert (cfg.norm, cfg.z_mode) == ("gcn_selfloop", "fresh")
    assert (cfg.split_seed, cfg.partition_seed, cfg.seed) == (0, 0, 0)
    # FederatedScope's random Planetoid split (6/2/2): 232/332/3943 per class, 542/665/3943 validation
    assert H.split_sizes(H.HiFGLConfig(dataset="cora"), 2708, 7) == (232, 542)
    assert H.split_sizes(H.HiFGLConfig(dataset="citeseer"), 3327, 6) == (332, 665)
    assert H.split_sizes(H.HiFGLConfig(dataset="pubmed"), 19717, 3) == (3943, 3943)
    assert H.split_sizes(H.HiFGLConfig(dataset="citeseer", train_per_class=10, num_val=20), 3327, 6) == (10, 20)
    assert schema.traced_names(H.HiFGLConfig) == ["lr"]


def test_registered_with_its_config():
    from fgl_jax import registry
    e = registry.entry("system", "hifgl")
    assert e.info["config"] is H.HiFGLConfig and e.obj is H.build


SMALL = dict(dataset="csbm", clients=3, hidden=8, num_layers=1, rounds=4)


@pytest.mark.slow
def test_run_config_writes_the_four_outputs_and_resumes(tmp_path):
    import json
    from fgl_jax.experiment import run_config
    cfg = H.HiFGLConfig(**SMALL)
    full = run_config(cfg, out=str(tmp_path / "full"), chunk=2)
    for name in ("config.yaml", "metrics.jsonl", "summary.json", "checkpoints"):
        assert (tmp_path / "full" / name).exists(), name
    assert schema.resolve(H.HiFGLConfig, tmp_path / "full" / "config.yaml", system="hifgl") == cfg  # replayable
    summary = json.loads((tmp_path / "full" / "summary.json").read_text())
    assert summary["system"] == "hifgl" and summary["rounds_run"] == 4
    assert len((tmp_path / "full" / "metrics.jsonl").read_text().splitlines()) == 4
    # interrupted after 2 rounds, then resumed: the same numbers as the uninterrupted run
    part = tmp_path / "part"
    run_config(H.HiFGLConfig(**{**SMALL, "rounds": 2}), out=str(part), chunk=2)
    resumed = run_config(cfg, out=str(part), resume=True, chunk=2, resume_with_changes=("rounds",))
    for k in ("test_acc", "train_loss", "val_acc"):
        np.testing.assert_array_equal(resumed.history[k], full.history[k])
    assert resumed.best == full.best
    for a, b in zip(jax.tree.leaves(resumed.state.params), jax.tree.leaves(full.state.params)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert len((part / "metrics.jsonl").read_text().splitlines()) == 4


def test_build_matches_the_hand_built_pipeline():
    """build(cfg) = split (FederatedScope sizes, split_seed) + random silos (partition_seed) + hifgl(cfg)."""
    from fgl_jax.data import load, per_class_split
    from fgl_jax.partition import random_partition
    cfg = H.HiFGLConfig(**{**SMALL, "partition_seed": 3, "split_seed": 2})
    prog = H.build(cfg)
    g = load("csbm")
    g = per_class_split(g, int(round(0.6 * g.num_nodes / g.num_classes)), int(round(0.2 * g.num_nodes)), seed=2)
    data = H.make_hifgl_data(g, random_partition(g, 3, seed=3).assignment, 3)
    for a, b in zip(jax.tree.leaves(prog.data), jax.tree.leaves(data)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert prog.num_rounds == 4 and prog.describe["clients"] == 3


def test_empty_silo_is_rejected():
    g = toy_graph(n=20)
    with pytest.raises(ValueError, match="no device"):
        H.make_hifgl_data(g, np.zeros(g.num_nodes, np.int32), 2)


@pytest.mark.parametrize("model, mode, T", [("gcn", "field", 1), ("sage", "field", 2), ("gcn", "real", 1),
                                            ("gcn", "plain", 1)])
def test_communication_equals_a_hand_count(model, mode, T):
    """Per round: each silo sends and receives its model (float32 GCN/SAGE parameters, counted by
    hand), and the devices exchange T+1 coded 8-byte shares per real edge and per device for each
    neighbour sum: GCN and SAGE both sum projected messages (SAGE's layer projects self and
    neighbour halves in one matrix and sums the neighbour half), widths hidden then classes; plain
    message passing sends no shares."""
    from fgl_jax.systems.hifgl.program import communication_columns
    g, assign, data, cfg, alg = _setup(model=model, mode=mode, T=T)
    f, h, c = g.num_features, 8, g.num_classes
    if model == "gcn":
        params = f * h + h + h * c + c                      # kernel + bias per layer
    else:
        params = 2 * f * h + h + 2 * h * c + c              # self and neighbour kernels + bias per layer
    widths = (h, c)
    edges = int(np.asarray(data.edge_mask).sum())
    secmp = 0 if mode == "plain" else sum((edges + g.num_nodes) * (T + 1) * d * 8 for d in widths)
    cols = communication_columns(cfg, alg, data, f, c)
    assert cols["comm_up_bytes_per_client"][0] == cols["comm_down_bytes_per_client"][0] == 4 * params
    assert cols["comm_up_bytes"][0] == 3 * 4 * params
    assert cols["comm_secmp_bytes"][0] == secmp


def test_same_split_edges_equal_dense_reference_on_the_split_restricted_graph():
    """edges="same_split" (the authors' code): every node's logits are the dense GCN's on the graph
    keeping only the edges inside one split (train/val/test), written out in NumPy."""
    import dataclasses
    g = toy_graph(n=40, seed=0)
    part = np.select([g.train_mask, g.val_mask, g.test_mask], [0, 1, 2], 3)
    assert len(np.unique(part)) >= 3          # the toy graph has the three splits
    keep = part[g.senders] == part[g.receivers]
    assert 0 < keep.sum() < len(keep)         # some edges cross splits, some stay
    assign = np.arange(g.num_nodes) % 3
    data = H.make_hifgl_data(g, assign, 3, edges="same_split")
    cfg = H.HiFGLConfig(model="gcn", hidden=8, mode="plain", edges="same_split")
    alg = H.hifgl(cfg, g.num_features, g.num_classes)
    state = alg.init(jax.random.key(0), data)
    logits, _ = H.forward(state.params, data, state.codes, cfg, jax.random.key(1), secure=False)
    g_split = dataclasses.replace(g, senders=g.senders[keep], receivers=g.receivers[keep])
    ref = _dense_reference(g_split, state.params, "gcn", "gcn_selfloop")
    np.testing.assert_allclose(np.asarray(logits), ref, atol=1e-4, rtol=1e-3)
    with pytest.raises(ValueError, match="edges must be"):
        H.make_hifgl_data(g, assign, 3, edges="split")


def test_authors_code_norm_is_the_authors_loop():
    """norm="authors_code": the propagation of one-hot states is the adjacency the authors' loop builds
    (`_authors_code_adjacency`), over every edge and over the same-split edges (whose senders still
    divide by their whole degree); and HiFGL's network with both options equals the dense 2-layer
    network on that adjacency (plain mode here; the SecMP modes: test_secmp_forward_equals_dense_reference)."""
    g = toy_graph(n=16, seed=2, avg_degree=3)
    part = np.select([g.train_mask, g.val_mask, g.test_mask], [0, 1, 2], 3)
    same = part[g.senders] == part[g.receivers]
    assert 0 < same.sum() < len(same)
    eye = jnp.eye(g.num_nodes)
    s, r = jnp.asarray(g.senders), jnp.asarray(g.receivers)
    for carried in (np.ones(g.num_edges, bool), same):
        got = H.authors_code_propagate(eye, s, r, jnp.asarray(carried), g.num_nodes)
        np.testing.assert_allclose(np.asarray(got), _authors_code_adjacency(g, carried), atol=1e-6)
    # isolated devices (toy_graph keeps two) hold n = 1: their own state / sqrt(2)
    lone = np.flatnonzero(dense_adj(g).sum(1) == 0)
    assert len(lone) and np.allclose(np.asarray(got)[lone, lone], 2 ** -0.5)

    assign = np.arange(g.num_nodes) % 3
    data = H.make_hifgl_data(g, assign, 3, edges="same_split")
    cfg = H.HiFGLConfig(model="gcn", hidden=8, mode="plain", norm="authors_code", edges="same_split")
    alg = H.hifgl(cfg, g.num_features, g.num_classes)
    state = alg.init(jax.random.key(0), data)
    logits, _ = H.forward(state.params, data, state.codes, cfg, jax.random.key(1), secure=False)
    ref = _dense_reference(g, state.params, "gcn", "authors_code", carried=same)
    np.testing.assert_allclose(np.asarray(logits), ref, atol=1e-4, rtol=1e-3)
