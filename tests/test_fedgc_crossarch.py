"""FedGC Table 3's GCond protocol: graph-free ("MLP") training and the protocol's settings."""
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fgl_jax.batch import full_graph_batch
from fgl_jax.systems.fedgc.evaluate import (GCOND_ARCHS, RECIPE_ARCHS, EvalConfig, arch_configs, dense_graph_batch,
                                      gcond_arch_configs, make_evaluator)
from tests.helpers import toy_graph

CFG = EvalConfig(hidden=16, lr=0.05, iters=20, decay_at=10, eval_every=10, finetune_steps=4, ft_eval_every=2)


def _syn(a_scale: float, seed: int = 0, n: int = 12, f: int = 12, c: int = 3):
    rng = np.random.default_rng(seed)
    a = rng.uniform(0.0, 1.0, (n, n))
    a = np.triu(a, 1)
    a = (a + a.T) * a_scale
    x = rng.normal(size=(n, f)).astype(np.float32) + 2 * np.eye(c, f)[np.arange(n) % c]
    return dense_graph_batch(jnp.asarray(a, jnp.float32), jnp.asarray(x), jnp.asarray(np.arange(n) % c))


@pytest.mark.slow
def test_graph_free_training_ignores_condensed_structure_but_not_the_real_graph():
    """graph_free trains on X' alone: two different A' give identical results, equal to training with
    A' = 0; without the flag the structure changes the trained model; and the trained model is
    evaluated with the clients' edges (removing them changes the scores)."""
    clients = full_graph_batch(toy_graph(seed=2))
    free = make_evaluator(dataclasses.replace(CFG, graph_free=True), 12, 3)
    plain = make_evaluator(CFG, 12, 3)
    key = jax.random.PRNGKey(0)
    r1, r2 = free(key, _syn(1.0), clients), free(key, _syn(3.0), clients)
    r0 = plain(key, _syn(0.0), clients)
    for k in r1:
        np.testing.assert_array_equal(np.asarray(r1[k]), np.asarray(r2[k]))
        np.testing.assert_array_equal(np.asarray(r1[k]), np.asarray(r0[k]))
    # the model is still a GCN at evaluation: the client graphs' edges matter
    bare = clients.replace(edge_mask=jnp.zeros_like(clients.edge_mask))
    rb = free(key, _syn(1.0), bare)
    assert any(not np.array_equal(np.asarray(rb[k]), np.asarray(r1[k])) for k in ("val_correct_noft", "test_correct_noft",
                                                                                  "val_correct", "test_correct"))


def test_gcond_configs_keep_base_protocol_and_share_gcn_for_sage():
    base = dataclasses.replace(CFG, finetune_steps=6, ft_eval_every=3, runs=2)
    cfgs = gcond_arch_configs(base)
    assert set(cfgs) == set(GCOND_ARCHS)
    for col, c in cfgs.items():
        # GCond's tester: dropout 0 on Cora/CiteSeer, lr 0.01, L2 5e-4, 600 iterations with the decay at half
        assert (c.dropout, c.lr, c.weight_decay, c.iters, c.decay_at, c.hidden) == (0.0, 0.01, 5e-4, 600, 300, 256)
        assert (c.finetune_steps, c.ft_eval_every, c.eval_every, c.runs) == (6, 3, base.eval_every, 2)
        assert c.graph_free == (col == "mlp")
    assert cfgs["sage"] == cfgs["gcn"]   # GraphSage(root_weight=False) is the GCN layer
    assert cfgs["sgc"].model_kwargs == (("K", 2), ("alpha", 0.0))


@pytest.mark.slow
def test_syn_model_kwargs_apply_only_while_training_on_the_condensed_graph():
    """GCond's Cheby trains on G' normalised without the self-loop: the G'-only argument changes the
    trained model; given a G' with no edges the two normalisations differ only in the loop term, and
    the result stays finite (zero-degree rows of D^-1/2 A' D^-1/2 are 0, not NaN)."""
    clients = full_graph_batch(toy_graph(seed=2))
    base = dataclasses.replace(CFG, arch="cheb_gcond")
    with_loop = make_evaluator(base, 12, 3)
    no_loop = make_evaluator(dataclasses.replace(base, syn_model_kwargs=(("self_loops", False),)), 12, 3)
    key = jax.random.PRNGKey(1)
    r1, r2 = with_loop(key, _syn(1.0), clients), no_loop(key, _syn(1.0), clients)
    assert any(not np.array_equal(np.asarray(r1[k]), np.asarray(r2[k])) for k in r1)
    r3 = no_loop(key, _syn(0.0), clients)
    assert all(np.isfinite(np.asarray(v)).all() for v in r3.values())


def test_arch_configs_reject_unknown_names():
    with pytest.raises(ValueError, match="not in GCond's protocol"):
        arch_configs("gcond", CFG, ["gat"])
    with pytest.raises(ValueError, match="unknown architecture"):
        arch_configs("recipe", CFG, ["transformer"])
    with pytest.raises(ValueError, match="unknown cross-architecture protocol"):
        arch_configs("pyg", CFG, ["gcn"])
    assert list(arch_configs("gcond", CFG, ["sgc", "mlp"])) == ["sgc", "mlp"]
    assert arch_configs("recipe", CFG, ["gat"])["gat"].hidden == 8
    # no list: every column of the protocol, in Table 3's order (the CLI's "--archs all")
    assert tuple(arch_configs("recipe", CFG)) == RECIPE_ARCHS
    assert list(arch_configs("gcond", CFG)) == list(GCOND_ARCHS)
    assert {c.arch for c in arch_configs("recipe", CFG).values()} == set(RECIPE_ARCHS)
    assert arch_configs("gcond", CFG, []) == {} == arch_configs("recipe", CFG, [])   # an empty list is no column


@pytest.mark.slow   # whole-run integration (compiles and runs a full program); the default suite stays short
def test_archs_evaluate_the_condensed_graph_with_each_architecture():
    """`archs` (Hooks.finalize) reports one accuracy per requested column in RunResult.extras (SAGE is
    trained once and shares GCN's numbers under GCond's protocol); an unknown name fails in the config,
    before anything runs."""
    from fgl_jax.systems.fedgc import FedGCConfig
    from tests.fedgc_small import run_small, small_config
    _, res, _ = run_small(small_config(rounds=4, eval_rounds=(4,), st_rounds=2, ib_epochs=2, archs=("sage", "gcn")))
    archs = res.extras["archs"]
    assert list(archs) == ["sage", "sage_noft", "gcn", "gcn_noft"]
    assert all(0.0 <= v <= 1.0 for v in archs.values())
    assert archs["sage"] == archs["gcn"]
    assert res.summary["extras"]["archs"] == archs    # summary.json carries them
    with pytest.raises(ValueError, match="not in GCond's protocol"):
        FedGCConfig(archs=("gat",))
