"""Neighbour-sampled mini-batch training (fgl_jax.federated.sampling).

Exactness: with every fan-out >= the largest degree (sampling without replacement then takes every
neighbour) and one mini-batch holding all of a client's training nodes, a sampled local step is the
full-batch step: parameters after 2 local Adam steps agree to allclose(rtol=1e-5, atol=1e-5) (float32
sums in another order). Uniformity: a node's sampled neighbours pass a chi-squared test against
uniform (scipy.stats.chisquare, p > 0.001), with and without replacement.
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from fgl_jax import csbm, make_model
from fgl_jax.batch import build_client_batch
from fgl_jax.federated.client import OptimConfig, local_train, make_optimizer, node_loss_fn
from fgl_jax.federated.sampling import parse_fanout, sample_minibatch, sample_neighbours, with_sampler


@pytest.fixture(scope="module")
def clients():
    g = csbm(num_nodes=48, num_classes=3, num_features=6, avg_degree=4.0, seed=1)
    assignment = np.arange(g.num_nodes) % 2
    batch = build_client_batch(g, assignment, 2)
    deg = np.bincount(g.receivers, minlength=g.num_nodes).max()
    return g, batch, int(deg)


def _one(batch, i):
    return jax.tree.map(lambda a: a[i], batch)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gcn", "sage"])
def test_full_fanout_equals_full_batch(clients, name):
    g, batch, deg = clients
    t = int(np.asarray(batch.train_mask).sum(1).max())
    sampled = with_sampler(batch, (deg, deg), batch_size=t)
    model = make_model(name, g.num_features, g.num_classes, hidden=8, num_layers=2, dropout=0.0)
    params = model.init(jax.random.key(0), _one(batch, 0), train=False)
    opt = make_optimizer(OptimConfig(lr=0.05), lr=1.0)
    loss = node_loss_fn(model)

    def train(b):
        return local_train(loss, opt, 2, params, opt.init(params), b, jax.random.key(3), jnp.float32(0.05))

    run = jax.jit(jax.vmap(train))   # both clients at once, as the algorithms vmap them
    full_p, _, full_l = run(batch)
    samp_p, _, samp_l = run(sampled)
    np.testing.assert_allclose(samp_l, full_l, rtol=1e-5, atol=1e-6)
    for a, b in zip(jax.tree.leaves(samp_p), jax.tree.leaves(full_p)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_minibatch_tree_layout(clients):
    """Every hop-1 slot is a true in-neighbour of its seed; masked slots carry no edge weight."""
    g, batch, _ = clients
    b0 = _one(with_sampler(batch, (3, 2), batch_size=4), 0)
    seeds = b0.sampler.train_nodes[:4]
    mb = jax.jit(sample_minibatch)(b0, seeds, jnp.ones(4, bool), jax.random.key(0))
    assert mb.y.shape == (4 * (1 + 3 + 6),)
    s, r, m = (np.asarray(a) for a in (b0.graph.senders, b0.graph.receivers, b0.edge_mask))
    edges = set(zip(s[m].tolist(), r[m].tolist()))
    rows, alive = np.asarray(mb.node_ids), np.asarray(mb.node_mask)
    ids = np.asarray(b0.node_ids)
    for e in range(12):   # hop-1 edges: slot 4 + e -> seed e // 3
        child, parent = 4 + e, e // 3
        assert int(mb.senders[e]) == child and int(mb.receivers[e]) == parent
        if alive[child]:
            u, v = list(ids).index(rows[child]), list(ids).index(rows[parent])
            assert (u, v) in edges
        else:
            assert float(mb.edge_mask[e]) == 0.0


@pytest.mark.parametrize("replace", [False, True])
def test_neighbour_distribution_uniform(replace):
    """One node with 12 neighbours, fan-out 4, 3000 draws: neighbour counts vs uniform."""
    d, f, draws = 12, 4, 3000
    indptr = jnp.array([0, d] + [d] * d, jnp.int32)        # node 0 <- nodes 1..12
    indices = jnp.arange(1, d + 1, dtype=jnp.int32)
    nodes = jnp.zeros(draws, jnp.int32)
    nbr, mask = jax.jit(sample_neighbours, static_argnums=(3, 5))(indptr, indices, nodes, f, jax.random.key(7), replace)
    nbr, mask = np.asarray(nbr), np.asarray(mask)
    assert mask.all()
    if not replace:   # without replacement: f distinct neighbours per draw
        assert all(len(set(row)) == f for row in nbr)
    counts = np.bincount(nbr.ravel(), minlength=d + 1)[1:]
    assert stats.chisquare(counts).pvalue > 1e-3


def test_small_degree_takes_every_neighbour():
    indptr = jnp.array([0, 3, 3, 3, 3], jnp.int32)
    indices = jnp.array([1, 2, 3], jnp.int32)
    nbr, mask = jax.jit(sample_neighbours, static_argnums=3)(indptr, indices, jnp.array([0, 1], jnp.int32), 5,
                                                               jax.random.key(0))
    assert sorted(np.asarray(nbr)[0][np.asarray(mask)[0]].tolist()) == [1, 2, 3]
    assert not np.asarray(mask)[1].any()


def test_bad_fanout_is_one_line():
    with pytest.raises(ValueError, match="fanout"):
        parse_fanout("10,x")
    with pytest.raises(ValueError, match="fanout"):
        parse_fanout("0,5")



@pytest.mark.parametrize("changes, message", [
    ({"batch_size": 64, "algorithm": "fedgta"}, "neighbour sampling serves"),
    ({"batch_size": 64, "fanout": "10"}, "one fan-out per GNN layer"),
    ({"batch_size": 64, "model": "gat"}, "not supported with neighbour"),
    ({"fanout": "5,5"}, "set batch_size > 0"),
    ({"batch_size": 64, "fanout": "5,-1"}, "fanout"),
])
def test_run_config_refuses_bad_sampling_options(changes, message):
    from fgl_jax.systems.baseline.config import RunConfig
    with pytest.raises(ValueError, match=message):
        RunConfig(**changes)
    RunConfig(batch_size=64, fanout="5,5")   # a good one is accepted
