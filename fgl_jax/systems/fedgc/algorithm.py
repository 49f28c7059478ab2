"""Federated condensation as a `fgl_jax.federated.FederatedAlgorithm` (one round = one condensation round).

    init(key, data)         -> CondenseRunState (server state X', Φ, Adam states from data.start; hp)
    round(state, data, key) -> (state, metrics)

The round is `condense.round.fed_round` (fresh θ, the clients' per-class gradients, aggregation, one
server matching step). The evaluation of G' at chosen rounds is not part of the round: it is the
program's `Hooks.on_chunk` (`program.py`), between the engine's chunks.

Keys: FedGC splits the run key jax.random.key(seed) into its stages (self-training, IB,
condensation, evaluation; `program.stage_keys`). `data.key` is the condensation stage's key: X' and Φ
are initialised from it and round r draws θ from fold_in(fold_in(data.key, 7), r), so the rounds do
not depend on the engine's chunking and equal the paper-protocol runs of `experiments/fedgc`. The
engine's own (init, round) keys are not used: one Program is one seed (its host preparation, the
partition and the IB, depends on the seed too). `state.hp` holds the traced `lr_feat` and `lr_adj`
for `run_sweep`.

Per-round metrics: `train_loss` (the matching loss) and `val_acc` / `test_acc` = NaN (G' is
evaluated only at the evaluation rounds, by the hook; its rows are in `RunResult.evaluations`).
"""
from __future__ import annotations

import functools

import flax
import jax
import jax.numpy as jnp
import numpy as np

from fgl_jax.federated.algorithm import FederatedAlgorithm
from fgl_jax.systems.fedgc.condense.blocks import ClientData
from fgl_jax.systems.fedgc.condense.round import fed_round
from fgl_jax.systems.fedgc.condense.server import CondenseState, Condenser

Array = jax.Array
ROUND_SALT = 7  # round keys: fold_in(fold_in(condensation key, 7), round)


@flax.struct.dataclass
class CondenseData:
    """client: what the clients hold for matching (blocks, counts); key: the condensation stage key;
    start: the server's initial state (X' ~ N(0, std²), Φ), made once on the host from `key`."""

    client: ClientData
    key: Array
    start: CondenseState


@flax.struct.dataclass
class CondenseRunState:
    cond: CondenseState
    hp: dict      # {"lr_feat": f32, "lr_adj": f32} (traced, sweepable)


def round_key(data: CondenseData, r) -> Array:
    """The key round r (0-based) draws its relay θ (and any defence noise) from."""
    return jax.random.fold_in(jax.random.fold_in(data.key, ROUND_SALT), r)


def condense_data(condenser: Condenser, client: ClientData, key: Array, syn_counts: np.ndarray) -> CondenseData:
    """The round's data; the initial X' and Φ are drawn from `key` outside jit (op by op, as the
    paper-protocol runs always drew them: a fused draw differs in the last float bits)."""
    return CondenseData(client=client, key=key, start=condenser.init(key, np.asarray(syn_counts)))


@functools.lru_cache(maxsize=64)  # one algorithm object per condenser: the engine's compiled scans are reused
def condense_algorithm(condenser: Condenser) -> FederatedAlgorithm:
    """condenser: `make_condenser(...)`; the initial state travels in `CondenseData.start`."""
    cfg = condenser.config

    def init(key: Array, data: CondenseData) -> CondenseRunState:
        del key  # the condensation stage key travels in data (see the module docstring)
        return CondenseRunState(cond=data.start, hp={"lr_feat": jnp.float32(cfg.lr_feat),
                                                     "lr_adj": jnp.float32(cfg.lr_adj)})

    def round_fn(state: CondenseRunState, data: CondenseData, key: Array):
        del key
        cond, loss = fed_round(condenser, state.cond, data.client, round_key(data, state.cond.round),
                               state.hp["lr_feat"], state.hp["lr_adj"])
        nan = jnp.float32(jnp.nan)
        return state.replace(cond=cond), {"train_loss": loss, "val_acc": nan, "test_acc": nan}

    def messages(state: CondenseRunState):
        """A round, per client: down = the relay θ; up = its per-class gradients at θ, once per outer
        step ([outer, C, ...] like θ's leaves). Under the default fused client axis the simulation
        forms only their weighted sum, but each client's upload is what a deployment sends."""
        theta = condenser.sample_theta(jax.random.key(0))  # shapes only (traced by eval_shape)
        c = state.cond.coeff.shape[0]
        up = jax.tree.map(lambda a: jnp.zeros((cfg.outer, c) + a.shape, a.dtype), theta)
        return up, theta

    return FederatedAlgorithm(init=init, round=round_fn, messages=messages)
