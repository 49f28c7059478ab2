"""Two bit-exact shortcuts in the training round (issue 31, the command's round):

- `fgl_jax.nn.models.Dropout` generates its keep-mask once per call (XLA:CPU otherwise fuses the
  Threefry generator into the forward select and the gradient's); reference: flax's nn.Dropout,
  the same key and module path, so outputs and gradients must be equal bit for bit.
- `FedData.train_is_eval`: when every client trains, the baselines take the trained models as the
  clients' models instead of scattering them into evaluation order; reference: the scatter path
  (train_is_eval=False), and the flag's bookkeeping in make_fed_data and participation.restrict.
"""
import dataclasses

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fgl_jax import registry
from fgl_jax.federated.algorithm import make_fed_data
from fgl_jax.federated.participation import restrict
from fgl_jax.nn import models
from tests.alg_helpers import toy_setup


class _Net(nn.Module):
    drop: type
    rate: float

    @nn.compact
    def __call__(self, x):
        h = nn.relu(nn.Dense(16)(x))
        h = self.drop(self.rate, deterministic=False)(h)
        h = nn.relu(nn.Dense(16)(h))
        h = self.drop(self.rate, deterministic=False)(h)
        return nn.Dense(3)(h)


@pytest.mark.parametrize("rate", [0.5, 0.3])
def test_dropout_equals_flax_bit_for_bit(rate):
    x = jax.random.normal(jax.random.key(0), (4, 37, 5))
    params = _Net(nn.Dropout, rate).init({"params": jax.random.key(1), "dropout": jax.random.key(2)}, x[0])

    def loss(p, x, k, drop):
        return jnp.sum(jnp.sin(_Net(drop, rate).apply(p, x, rngs={"dropout": k})))

    keys = jax.random.split(jax.random.key(3), 4)
    outs = {}
    for name, drop in (("flax", nn.Dropout), ("ours", models.Dropout)):
        # vmapped over a client axis and differentiated, as in local training
        f = jax.jit(jax.vmap(jax.value_and_grad(lambda p, x, k: loss(p, x, k, drop)), in_axes=(None, 0, 0)))
        outs[name] = f(params, x, keys)
    for a, b in zip(jax.tree.leaves(outs["flax"]), jax.tree.leaves(outs["ours"])):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # the masks did drop something (else the test could not tell masks apart)
    nodrop = jax.vmap(lambda x: _Net(nn.Dropout, 0.0).apply(params, x, rngs={"dropout": keys[0]}))(x)
    assert not np.allclose(np.asarray(nodrop), np.asarray(jax.vmap(
        lambda x, k: _Net(models.Dropout, rate).apply(params, x, rngs={"dropout": k}))(x, keys)))


def test_train_is_eval_bookkeeping():
    data, _, _ = toy_setup()
    assert data.train_is_eval and np.array_equal(np.asarray(data.train_index), np.arange(data.eval.num_clients))
    part = restrict(data, jnp.array([0, 2]))
    assert not part.train_is_eval
    # a client without training nodes: train is a subset, the flag is off
    b = data.eval
    b = b.replace(train_mask=b.train_mask.at[1].set(False))
    sub = make_fed_data(b)
    assert not sub.train_is_eval and list(np.asarray(sub.train_index)) == [0, 2]


@pytest.mark.parametrize("name", ["fedavg", "local"])
def test_train_is_eval_round_equals_scatter(name):
    data, model, common = toy_setup()
    common = dataclasses.replace(common, eval_mode="local_model_on_local_data", eval_average="client_nodes")
    alg = registry.get("algorithm", name)(model, common, None)
    st = alg.init(jax.random.key(0), data)
    outs = [jax.jit(alg.round)(st, d, jax.random.key(1)) for d in (data, data.replace(train_is_eval=False))]
    for a, b in zip(jax.tree.leaves(outs[0]), jax.tree.leaves(outs[1])):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
