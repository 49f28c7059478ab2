"""Federated condensation as a `fgl_jax.federated.FederatedAlgorithm` (one round = one condensation round).

    init(key, data)         -> CondenseRunState (server state X', Φ, Adam states; hp; last evaluation)
    round(state, data, key) -> (state, metrics)

The round is `fed_round` (fresh θ from `key`, clients' per-class gradients, aggregation, one server
matching step). Every `eval_every` rounds (and never in between: `lax.cond`) the current G' is
evaluated with the full protocol of `condense.evaluate` (GNN trained on G', best local validation,
optional local fine-tuning); the metrics of the other rounds repeat the last evaluation, so
`val_acc`/`test_acc` are always defined and `fgl_jax.federated.run`'s best-validation tracking picks
an evaluated round. `state.hp` holds the traced learning rates `lr_feat` and `lr_adj` for `run_sweep`.

Using the same key, `run(algorithm, data, key, R)` produces the same X', Φ and losses as
`condense_scan(condenser, state, data.clients, run_key, R)` (round r draws θ from fold_in(run_key, r)).
"""
from __future__ import annotations

from typing import Callable

import flax
import jax
import jax.numpy as jnp
import numpy as np

from fgl_jax.batch import ClientBatch
from fgl_jax.condense.blocks import ClientData
from fgl_jax.condense.evaluate import dense_graph_batch
from fgl_jax.condense.federated import fed_round
from fgl_jax.condense.server import CondenseState, Condenser, condensed_graph
from fgl_jax.federated.algorithm import FederatedAlgorithm

Array = jax.Array
EVAL_KEYS = ("val_acc", "test_acc", "val_acc_noft", "test_acc_noft")


@flax.struct.dataclass
class CondenseData:
    """client: what the clients hold for matching (blocks, counts); eval: the clients' real local
    graphs in the same feature space as X' (Z under IB) for evaluation, [M, ...]."""

    client: ClientData
    eval: ClientBatch


@flax.struct.dataclass
class CondenseRunState:
    cond: CondenseState
    hp: dict      # {"lr_feat": f32, "lr_adj": f32} (traced, sweepable)
    last: dict    # last evaluation: val_acc, test_acc, val_acc_noft, test_acc_noft (f32)


def pooled_in_jit(res: dict) -> dict:
    """Test-count-weighted pooled accuracies of an evaluator result (traceable)."""
    div = lambda a, b: a.sum() / jnp.maximum(b.sum(), 1.0)
    return {"val_acc": div(res["val_correct"], res["val_total"]),
            "test_acc": div(res["test_correct"], res["test_total"]),
            "val_acc_noft": div(res["val_correct_noft"], res["val_total"]),
            "test_acc_noft": div(res["test_correct_noft"], res["test_total"])}


def condense_algorithm(condenser: Condenser, syn_counts: np.ndarray, evaluator: Callable,
                       eval_every: int = 50) -> FederatedAlgorithm:
    """condenser: `make_condenser(...)`; syn_counts: N'_c [C] (host, fixes the static shape of X');
    evaluator: `make_evaluator(...)` (key, syn_batch, clients) -> per-client counts;
    eval_every: evaluate G' after rounds eval_every, 2·eval_every, ... (1-based round numbers)."""
    if int(eval_every) <= 0:
        raise ValueError(f"eval_every must be positive, got {eval_every}")
    syn_counts = np.asarray(syn_counts)
    cfg = condenser.config

    def init(key: Array, data: CondenseData) -> CondenseRunState:
        cond = condenser.init(key, syn_counts)
        hp = {"lr_feat": jnp.float32(cfg.lr_feat), "lr_adj": jnp.float32(cfg.lr_adj)}
        last = {k: jnp.float32(0.0) for k in EVAL_KEYS}
        return CondenseRunState(cond=cond, hp=hp, last=last)

    def evaluate(cond: CondenseState, data: CondenseData, key: Array) -> dict:
        a, x, y = condensed_graph(cond)
        return pooled_in_jit(evaluator(key, dense_graph_batch(a, x, y), data.eval))

    def round_fn(state: CondenseRunState, data: CondenseData, key: Array):
        cond, loss = fed_round(condenser, state.cond, data.client, key, state.hp["lr_feat"], state.hp["lr_adj"])
        due = (cond.round % eval_every) == 0  # cond.round = rounds done (1-based after this round)
        last = jax.lax.cond(due, lambda: evaluate(cond, data, jax.random.fold_in(key, 1)),
                            lambda: state.last)
        metrics = {"train_loss": loss, **last, "evaluated": due.astype(jnp.float32)}
        return state.replace(cond=cond, last=last), metrics

    return FederatedAlgorithm(init=init, round=round_fn)
