"""Tiny FedGC configurations and runs for the tests (seconds, not minutes)."""
from __future__ import annotations

from fgl_jax.data.synthetic import csbm
from fgl_jax.systems.fedgc import FedGCConfig

# small models everywhere; 12 rounds evaluated at 6 and 12
SMALL = dict(dataset="csbm", clients=3, rate=0.2, rounds=12, eval_rounds=(6, 12), st_rounds=20, st_hidden=16,
             relay_hidden=16, pge_hidden=8, adj_period=6, adj_steps=2, ib_hidden=8, ib_dim=None, ib_epochs=5,
             ib_decoder_hidden=16, eval_hidden=16, eval_lr=0.05, eval_iters=40, eval_decay_at=20,
             eval_check_every=20, finetune_steps=10, ft_check_every=5,
             # the code's knobs, as these tests were written against (FedGCConfig's defaults are `ibfs`'s)
             ib_lr=2e-3, pge_init_bias=None)


def small_config(**kw) -> FedGCConfig:
    return FedGCConfig(**{**SMALL, **kw})


def small_graph(seed: int = 1, n: int = 240, f: int = 12):
    return csbm(num_nodes=n, num_classes=3, num_features=f, avg_degree=5.0, homophily=0.8, feature_signal=2.0,
                seed=seed)


def run_small(cfg: FedGCConfig, graph=None, out=None, resume=False):
    """(FedGCRun, RunResult, FedGCResult) of a small run through the engine."""
    from fgl_jax import experiment, schema
    from fgl_jax.systems.fedgc import FedGCRun
    run = FedGCRun(cfg, graph=small_graph() if graph is None else graph)
    res = experiment.execute(run.program, cfg.seed, system="fedgc", out=out, resume=resume,
                             config_text=schema.dump(cfg, "fedgc"))
    return run, res, run.result(res)
