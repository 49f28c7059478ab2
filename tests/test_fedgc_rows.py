"""FedGC's row-restricted GCN (fgl_jax/systems/fedgc/rows.py): the same dropout bits as the full
draw, the same logits on the targets as the full model, and the evaluator's counts unchanged."""
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fgl_jax.batch import stack_graphs
from fgl_jax.data.synthetic import csbm
from fgl_jax.nn import make_model
from fgl_jax.partition import label_dirichlet_partition
from fgl_jax.systems.fedgc.data import expand_clients
from fgl_jax.systems.fedgc.evaluate import EvalConfig, dense_graph_batch, make_evaluator
from fgl_jax.systems.fedgc.rows import (RowPlan, bernoulli_rows, closed_neighbourhoods, dropout_key, gcn2_rows,
                                        pad_lists)

pytestmark = pytest.mark.no_xla_cache  # it counts compilations


@pytest.mark.parametrize("make_key", [jax.random.key, jax.random.PRNGKey,
                                      lambda s: jax.random.key(s, impl="rbg")])
def test_bernoulli_rows_are_the_full_draws_rows(make_key):
    key = make_key(3)
    rows = jnp.asarray([0, 7, 7, 2, 40], jnp.int32)
    for p in (0.5, 0.2):
        full = jax.random.bernoulli(key, p, (41, 33))
        got = jax.jit(bernoulli_rows, static_argnums=(1, 2))(key, p, (41, 33), rows)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(full)[np.asarray(rows)])


def _clients(seed=1, f=6):
    g = csbm(num_nodes=120, num_classes=3, num_features=f, avg_degree=4.0, feature_signal=2.0, seed=seed)
    part = label_dirichlet_partition(g, 3, 1.0, seed=seed, min_size=10)
    graphs, ids = expand_clients(g, part.assignment, 3, 2)
    return stack_graphs(graphs, ids)


def test_restricted_logits_and_gradients_equal_the_full_model_on_the_targets():
    """gcn2_rows on N[T] (with the dropout bits of the full draw) gives the full model's logits on T
    and the same loss gradient (an independent path: flax's model.apply with its own dropout)."""
    clients = _clients()
    b = jax.tree.map(lambda a: a[0], clients)
    n, d, h = b.y.shape[0], b.features.shape[1], 16
    model = make_model("gcn", d, 3, hidden=h, num_layers=2, dropout=0.5, pre_aggregated=True)
    params = model.init(jax.random.key(0), b, train=False)
    targets = np.asarray(b.train_mask) | np.asarray(b.val_mask)
    assert 0 < targets.sum() < n
    rows, edges, _ = closed_neighbourhoods(clients.graph.senders[:1], clients.graph.receivers[:1],
                                        clients.edge_mask[:1], targets[None])
    (r, rok), (e, eok) = pad_lists(rows), pad_lists(edges)
    assert rok.sum() < n
    plan = RowPlan(r[0], rok[0], b.features[r[0]], e[0], eok[0])
    t = jnp.asarray(targets)
    k = jax.random.key(5)

    def full(p):
        out = model.apply(p, b, train=True, rngs={"dropout": k})
        return (jnp.where(t[:, None], out, 0.0) ** 2).sum(), out

    def restricted(p):
        keep = bernoulli_rows(dropout_key(model, p, k, b), 0.5, (n, h), plan.rows)
        out = gcn2_rows(p["params"], plan, b.graph.senders, b.graph.receivers, b.edge_mask, n, (keep, 0.5))
        return (jnp.where(t[:, None], out, 0.0) ** 2).sum(), out

    # each side one compiled program (op by op, every primitive would compile on its own)
    (l0, o0), g0 = jax.jit(jax.value_and_grad(full, has_aux=True))(params)
    (l1, o1), g1 = jax.jit(jax.value_and_grad(restricted, has_aux=True))(params)
    np.testing.assert_allclose(np.asarray(o1)[targets], np.asarray(o0)[targets], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(float(l1), float(l0), rtol=1e-5)
    for a, c in zip(jax.tree.leaves(g1), jax.tree.leaves(g0)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(c), rtol=1e-4, atol=1e-6)


@pytest.mark.slow
def test_evaluator_counts_equal_without_row_restriction_and_precompiled_once():
    """The row-restricted evaluator, compiled ahead in a thread (`precompile`, on arguments shaped
    like the call's), runs that one program and returns the full-graph evaluator's counts."""
    from fgl_jax.cache import CompileCounter
    clients = _clients(seed=2, f=8)
    cfg = EvalConfig(hidden=16, lr=0.05, iters=20, decay_at=10, eval_every=10, finetune_steps=4, ft_eval_every=2)
    rng = np.random.default_rng(0)
    a = np.triu(rng.uniform(size=(9, 9)), 1)
    y = jnp.asarray(np.arange(9) % 3)
    syn = dense_graph_batch(jnp.asarray(a + a.T, jnp.float32), jnp.asarray(rng.normal(size=(9, 8)), jnp.float32), y)
    like = dense_graph_batch(jnp.zeros((9, 9)), jnp.zeros((9, 8)), y)
    k0, key = jax.random.key(0), jax.random.key(1)
    ev = make_evaluator(cfg, 8, 3, True)
    counter = CompileCounter()
    ev.precompile(k0, like, clients)
    fast = ev(key, syn, clients)
    assert counter.read()["programs"] == 1   # the thread's compilation, run by the call
    ref = make_evaluator(cfg, 8, 3, False)(key, syn, clients)
    assert set(fast) == set(ref)
    for name in ref:
        np.testing.assert_array_equal(np.asarray(fast[name]), np.asarray(ref[name]), err_msg=name)
