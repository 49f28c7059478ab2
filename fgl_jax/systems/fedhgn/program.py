"""FedHGN as a registered system: `build(cfg) -> Program`, with the paper's early stopping as hooks.

    from fgl_jax import experiment
    res = experiment.run_config(FedHGNConfig(dataset="aifb", split="RE", clients=3), out="runs/fedhgn")
    res.best   # {"best_test": weighted test accuracy at the early-stopping point, ...}

Early stopping (spec §3.3: patience 10 on the weighted validation accuracy, improvement = at least
best + 1e-5) is `Hooks.stop`; the reported round (the early-stopping best) is `Hooks.select`.
Rounds after the stopping point cannot change earlier ones, so running the rest of a compiled
chunk and cutting the history there is identical to stopping. Local applies it per client (each
client keeps its own best-validation model; the test accuracies are weighted by test counts).
A NaN/inf training loss with `on_nonfinite="stop"` ends the run on its finite rounds, which are
scored the same way (what the official loop's best-validation checkpoint amounts to).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from fgl_jax.federated.algorithm import Hooks, Program
from fgl_jax.registry import register
from fgl_jax.federated.communication import per_round_columns
from fgl_jax.systems.fedhgn.algorithm import fedhgn, num_sampled
from fgl_jax.systems.fedhgn.config import FedHGNConfig
from fgl_jax.systems.fedhgn.data import HeteroFedData, client_data

__all__ = ["build", "program", "early_stop", "early_stopping_hooks", "STOP_DELTA", "CHECK_EVERY"]

STOP_DELTA = 1e-5   # an improvement is val >= best + STOP_DELTA (official code)
CHECK_EVERY = 10    # rounds per compiled chunk between early-stopping checks (numbers do not depend on it)


def early_stop(val: np.ndarray, patience: int, delta: float = STOP_DELTA) -> tuple[int, int]:
    """(best index, number of rounds actually run) of early stopping on a val-accuracy history:
    improvement means val >= best + delta; stop after `patience` rounds without one."""
    best, best_i, wait = -np.inf, 0, 0
    for i, v in enumerate(np.asarray(val, float)):
        if v >= best + delta:
            best, best_i, wait = v, i, 0
        else:
            wait += 1
            if wait >= patience:
                return best_i, i + 1
    return best_i, len(val)


def early_stopping_hooks(cfg: FedHGNConfig, data: HeteroFedData) -> Hooks:
    """Hooks.stop (patience on the validation accuracy) and Hooks.select (the reported round)."""
    n_val, n_test = np.asarray(data.n_val), np.asarray(data.n_test)
    patience = cfg.patience
    per_client = cfg.method == "local"

    def client_acc(history: dict) -> np.ndarray:          # [rounds, C] validation accuracy per client
        return np.asarray(history["val_correct"]) / np.maximum(n_val, 1)

    def stop(history: dict) -> Optional[int]:
        if per_client:
            acc = client_acc(history)
            runs = [early_stop(acc[:, k], patience)[1] for k in range(acc.shape[1]) if n_val[k] > 0]
            return max(runs) if runs and all(n < acc.shape[0] for n in runs) else None
        n = early_stop(history["val_acc"], patience)[1]
        return n if n < len(history["val_acc"]) else None

    def select(history: dict, evaluations: list) -> dict:
        if not len(history.get("val_acc", ())):            # diverged in round 1
            return {"best_val": float("nan"), "best_test": float("nan"), "best_round": 0, "stop_round": 0}
        if per_client:
            vc, tc = np.asarray(history["val_correct"]), np.asarray(history["test_correct"])
            acc = client_acc(history)
            tests, vals, ran, best = [], [], [], []
            for k in range(vc.shape[1]):
                b, n = early_stop(acc[:, k], patience)
                tests.append(tc[b, k]); vals.append(vc[b, k]); ran.append(n); best.append(b + 1)
            return {"best_val": float(np.sum(vals) / max(n_val.sum(), 1)),
                    "best_test": float(np.sum(tests) / max(n_test.sum(), 1)),
                    "best_round": -1, "client_best_round": best, "stop_round": int(max(ran))}
        b, n = early_stop(history["val_acc"], patience)
        return {"best_val": float(history["val_acc"][b]), "best_test": float(history["test_acc"][b]),
                "best_round": b + 1, "stop_round": n}

    return Hooks(every=CHECK_EVERY, stop=stop, select=select)


def program(cfg: FedHGNConfig, data: HeteroFedData, describe: Optional[dict] = None) -> Program:
    """The Program of `cfg` on prepared data (e.g. the authors' own split files, read elsewhere)."""
    algorithm = fedhgn(cfg)
    m = num_sampled(cfg, data.blocks.num_clients)
    return Program(algorithm, data, cfg.max_rounds, dict(describe or {}), early_stopping_hooks(cfg, data),
                   per_round=per_round_columns(algorithm, data, m, cfg.max_rounds))


@register("system", "fedhgn", config=FedHGNConfig,
          help="FedHGN: federated heterogeneous GNN, schema-weight decoupling + coefficients alignment (IJCAI'23)")
def build(cfg: FedHGNConfig) -> Program:
    """Load and split the dataset (cached per dataset, split, K), then the Program."""
    data, majority, clients = client_data(cfg.dataset, cfg.strategy, cfg.clients, cfg.data_dir)
    return program(cfg, data, {"method": cfg.method, "dataset": cfg.dataset, "split": cfg.strategy,
                               "clients": clients, "num_bases": cfg.num_bases, "local_steps": cfg.steps,
                               "max_rounds": cfg.max_rounds, "patience": cfg.patience, "majority_acc": majority})
