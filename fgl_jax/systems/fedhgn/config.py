"""FedHGN's one schema: every option, its default (the paper's headline cell) and its valid values.

Defaults are paper Appendix C / the official configs.yaml (spec fedhgn.md §3.3): AIFB split RE
over K = 3 clients, d = 64, B = 20, lambda = 0.5, E = 3 full-batch SGD steps at lr 0.1 per round,
C = 1, early stopping with patience 10 on the weighted validation accuracy, at most 1000 rounds
(Local / Central: one step per epoch, at most 6000 epochs), seeds 1000..5000.
"""
from __future__ import annotations

import dataclasses
from typing import Optional

import jax.numpy as jnp

from fgl_jax import schema
from fgl_jax.schema import RunSpec, option

METHODS = ("fedhgn", "fedavg", "fedprox", "local", "central", "abl_B", "abl_C", "abl_BC")
SPLITS = ("RE", "RET")
ROUND1_POOLS = ("skip", "zeros", "code_quirk")
# Local / Central train one full-batch step per "epoch" (a round here) and may run 6x longer
# (official configs.yaml: 6000 epochs against 1000 FL rounds).
SINGLE_STEP_METHODS = ("local", "central")


@dataclasses.dataclass(frozen=True)
class FedHGNConfig(RunSpec):
    """One FedHGN run (any method of the paper's tables: FedHGN, the baselines, the ablations)."""

    dataset: str = option("aifb", "heterogeneous dataset: a name (see `fgl-jax datasets`, kind hetero) or path to a "
                         "heterogeneous graph (one edge file per relation + a node-type table)")
    split: str = option("RE", "client split: random edges (RE) or random edge types (RET)", choices=SPLITS)
    clients: int = option(3, "number of clients K (ignored by method central)", low=1)
    method: str = option("fedhgn", "FedHGN, a baseline (fedavg, fedprox, local, central) or an ablation "
                         "(abl_B, abl_C, abl_BC: decoupling without alignment)", choices=METHODS)
    rounds: Optional[int] = option(None, "maximum rounds before early stopping; none: 1000, or 6000 for "
                                   "local and central (one step per epoch)", low=1)
    patience: int = option(10, "early stopping: rounds without a validation-accuracy gain of 1e-5", low=1)
    seed: int = option(1000, "seed of the run's PRNG key (the paper averages seeds 1000..5000)")
    num_bases: int = option(20, "number of bases B of the schema-weight decoupling", low=1)
    hidden: int = option(64, "hidden and embedding dimension d", low=1)
    align_lambda: float = option(0.5, "weight lambda of the coefficients-alignment loss (Eq. 3)", low=0,
                                 traced=True)
    local_steps: Optional[int] = option(None, "full-batch SGD steps E per round; none: 3, or 1 for local "
                                        "and central", low=1)
    lr: float = option(0.1, "learning rate of plain SGD", low=0, low_open=True, traced=True)
    prox_mu: float = option(1.0, "FedProx proximal weight mu", low=0, traced=True)
    client_fraction: float = option(1.0, "fraction C of clients sampled per round", low=0, high=1,
                                    low_open=True)
    # The round-1 pool (spec §4.5 [DECIDE]; the paper is silent). "skip" against the spec's
    # recommendation "zeros", for a measured reason: with a zero pool each round-1 step scales beta
    # by (1 - lr*2*lambda); at lambda = 5 (lr 0.1) that is 0, every beta lands on 0, every client
    # uploads ~0 and beta stays pinned there: AIFB-RET K=3 50.0 +- 13.3 % at lambda = 5 with
    # "zeros" vs 82.8 +- 1.7 % with "skip" (results.md "Round-1 coefficient pool"), against the
    # paper's Fig. 4 (flat for lambda <= 5). "code_quirk" (zeros counted twice, the official code)
    # doubles the pull: factor -1, no trap.
    round1_align: str = option("skip", "coefficient pool before any client uploaded: none (skip), one zero "
                               "vector per client (zeros), zeros counted twice as the official code (code_quirk)",
                               choices=ROUND1_POOLS)
    shuffle_pool: bool = option(True, "shuffle the coefficient pool per receiving client (anonymity)")

    def __post_init__(self):
        # every field against its option() (so a direct FedHGNConfig(...) is checked like YAML/flags)
        schema.check(type(self), schema.to_dict(self), type(self).__name__)

    # -- the rules behind the two method-dependent defaults ---------------------------------------
    @property
    def steps(self) -> int:
        """E: local_steps, or 3 (FL methods) / 1 (local, central: one step per epoch)."""
        if self.local_steps is not None:
            return self.local_steps
        return 1 if self.method in SINGLE_STEP_METHODS else 3

    @property
    def max_rounds(self) -> int:
        """rounds, or 1000 (FL methods) / 6000 epochs (local, central)."""
        if self.rounds is not None:
            return self.rounds
        return 6000 if self.method in SINGLE_STEP_METHODS else 1000

    @property
    def strategy(self) -> str:
        """How the graph is given to clients: the split, or "central" (one client, whole graph)."""
        return "central" if self.method == "central" else self.split

    # -- which mechanism each method uses ---------------------------------------------------------
    @property
    def decomposed(self) -> bool:
        """Schema-weight decoupling (bases + coefficients)."""
        return self.method in ("fedhgn", "abl_B", "abl_C", "abl_BC")

    @property
    def schema_matched(self) -> bool:
        """Relation slots = the union of names over clients (the baselines' privacy breach)."""
        return self.method in ("fedavg", "fedprox", "central", "abl_C", "abl_BC")

    @property
    def align(self) -> bool:
        """Is the CA term in the program? Its weight lambda is traced in state.hp, so a lambda sweep
        including 0 is one program (lambda = 0 multiplies the term away)."""
        return self.method == "fedhgn"

    @property
    def share_coeffs(self) -> bool:
        return self.method in ("abl_C", "abl_BC")

    def hparams(self) -> dict:
        """Traced, shape-free hyper-parameters (state.hp): what run_sweep can vectorise."""
        return {"lr": jnp.float32(self.lr), "align_lambda": jnp.float32(self.align_lambda),
                "prox_mu": jnp.float32(self.prox_mu)}

    def averaged_keys(self) -> tuple[str, ...]:
        """Shared-group parameters the server averages (theta_c and, unless ablated, the bases)."""
        if self.method == "local":
            return ()
        theta_c = ("b1", "b2", "W_out", "b_out")
        if self.method in ("fedavg", "fedprox", "central"):
            return theta_c + ("W",)
        if self.method == "abl_C":
            return theta_c
        return theta_c + ("V",)
