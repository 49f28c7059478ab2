"""`--momentum` reaches the clients' SGD: the run config's momentum 0 (PyTorch's and PFLlib's plain SGD)
equals a FedConfig built with plain SGD by hand, and momentum 0.9 (the default) takes another second step."""
import functools

import jax
import numpy as np

from fgl_jax.batch import build_client_batch
from fgl_jax.federated import FedConfig, OptimConfig, baseline, make_fed_data, run
from fgl_jax.systems.baseline import RunConfig, algorithm_from_config
from tests.helpers import toy_graph

LR = 0.1


@functools.lru_cache(maxsize=None)
def _final_params(momentum: float, steps: int, by_hand: bool = False):
    g = toy_graph(n=40, seed=3)
    data = make_fed_data(build_client_batch(g, np.arange(g.num_nodes) % 2, 2))
    cfg = RunConfig(dataset="toy", model="gcn", hidden=8, optimizer="sgd", lr=LR, momentum=momentum,
                    local_steps=steps, clients=2, dropout=0.0)
    if by_hand:
        from fgl_jax.nn import make_model
        model = make_model("gcn", g.num_features, g.num_classes, hidden=8, dropout=0.0)
        algorithm = baseline(model, FedConfig(local_steps=steps, optim=OptimConfig(name="sgd", lr=LR, momentum=0.0)))
    else:
        algorithm = algorithm_from_config(cfg, g, data)
    return jax.tree.leaves(run(algorithm, data, jax.random.key(0), 1).state.server)


def test_momentum_changes_the_second_step():
    diffs = [float(np.max(np.abs(a - b))) for a, b in zip(_final_params(0.0, 2), _final_params(0.9, 2))]
    assert max(diffs) > 1e-4


def test_momentum_zero_is_plain_sgd():
    for a, b in zip(_final_params(0.0, 2), _final_params(0.0, 2, by_hand=True)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
