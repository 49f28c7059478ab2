"""The one schema of Lumos: every default and valid range of a run is written here, once.

Defaults are the paper's headline setting (§VIII, spec §4.4): Facebook, node classification, GCN
backbone, 2 layers, hidden = output = 16, dropout 0.01, Adam lr 0.01, 300 epochs, eps = 2, trees
with virtual nodes after greedy + MCMC trimming. One exception: the LDP budget is split so that
every recipient's view is eps-LDP (`budget="per-recipient"`); the paper's split
(`"per-coordinate-average"`) spends up to ~2 eps on some recipients (fgl_jax/privacy/onebit.py). Every vertex is a device, so there is no
`clients` knob: the number of devices is the number of vertices of the dataset.

One round of the engine is one Lumos epoch (one full-batch Adam step on the global mean loss).
"""
from __future__ import annotations

import dataclasses
from typing import Optional

from fgl_jax import schema
from fgl_jax.privacy.onebit import BUDGETS
from fgl_jax.schema import RunSpec, option
from fgl_jax.systems.lumos.workload import GREEDY_RULES

TASKS = ("node", "link")
MODELS = ("gcn", "gat")
TRIMS = ("mcmc", "greedy", "exact", "none")

# MCMC chain length when `mcmc_iters` is not given: long enough to reach the paper's reported max
# workload (39 on Facebook, 16 on LastFM; the paper's stated T = 1000 / 300 cannot get there from
# Alg. 1's greedy state, see experiments/results/lumos/results.md), the paper's T = 1000 elsewhere.
CHAIN_LENGTH = {"facebook": 30000, "lastfm_asia": 10000}
DEFAULT_CHAIN = 1000


@dataclasses.dataclass(frozen=True)
class LumosConfig(RunSpec):
    """One Lumos run (paper §VIII / spec §4.4 defaults)."""

    dataset: str = option("facebook", "dataset name (facebook, lastfm_asia, any registered graph) or path to a graph file "
                                     "or directory")
    rounds: int = option(300, "training epochs (one full-batch Adam step on the mean loss of all devices each)",
                         low=1)
    seed: int = option(0, "seed of the run key (initialisation, dropout, negatives, LDP draw)")
    data_seed: Optional[int] = option(None, "seed of the node/edge split and of the MCMC trimming chain "
                                            "(none: the run's seed)")
    split: str = option("auto", schema.SPLIT_HELP + "; the paper's is a random 50/25/25 node split (edges "
                        "80/5/15 for the link task, always drawn)", choices=schema.SPLIT_MODES)
    model: str = option("gcn", "tree GNN backbone", choices=MODELS)
    task: str = option("node", "node classification (accuracy) or link prediction (ROC-AUC)", choices=TASKS)
    hidden: int = option(16, "hidden and output width of the tree GNN", low=1)
    num_layers: int = option(2, "tree GNN layers", low=1)
    heads: int = option(4, "attention heads of the hidden GAT layers", low=1)
    dropout: float = option(0.01, "dropout after every tree GNN layer", low=0.0, high=1.0, high_open=True)
    lr: float = option(0.01, "Adam learning rate", low=0.0, low_open=True, traced=True)
    epsilon: float = option(2.0, "LDP budget per device of the one-bit feature encoder (inf: no LDP)",
                            low=0.0, low_open=True, traced=True, allow_inf=True)
    trim: str = option("mcmc", "workload trimming: greedy + MCMC (Lumos), greedy only, exact flow optimum, "
                               "or none (ablation w/o TT)", choices=TRIMS)
    greedy_rule: str = option("alg1", "greedy initialisation rule: Alg. 1, Eq. 15 as printed, or the official code's",
                              choices=GREEDY_RULES)
    mcmc_iters: Optional[int] = option(None, "MCMC iterations T (none: 30000 on facebook, 10000 on lastfm_asia, "
                                             "1000 elsewhere)", low=0)
    mcmc_argmax: str = option("direct", "MCMC arg-max device: Alg. 3 simulated with comparison counts, or the "
                                        "same arg-max computed directly (faster)", choices=("alg3", "direct"))
    always_accept: bool = option(False, "accept every MCMC proposal (skip the Metropolis-Hastings test)")
    tree: str = option("tree", "per-device trees with virtual nodes (Lumos) or stars (ablation w/o VN)",
                       choices=("tree", "star"))
    bins: str = option("recipients", "LDP bins: one per recipient (spec A3) or wl(u) (paper-literal)",
                       choices=("recipients", "workload"))
    budget: str = option("per-recipient", "how the LDP budget eps is split over a device's d coordinates: "
                         "per-recipient eps' = eps/ceil(d/B), so no recipient's bin costs more than eps; "
                         "per-coordinate-average eps' = eps*B/d (paper Thm 4), eps only on average over the B "
                         "bins, up to ~2 eps for a recipient of a larger bin when B does not divide d",
                         choices=BUDGETS)
    rescale: bool = option(False, "rescale recovered features by d/|bin| (unbiased, spec A5)")
    denoise: str = option("none", "receiver-side decoding of LDP features: paper-literal Eq. 27, or MMSE "
                                  "shrinkage (beyond the paper, still eps-LDP)", choices=("none", "mmse"))
    encoder: str = option("paper", "LDP feature encoder: the printed one-bit mechanism (Eqs. 26-27, bins), or "
                                   "the authors' public code's (every coordinate to every recipient at budget "
                                   "exp(eps/m) each: d*exp(eps/m) per recipient, reported in the summary; not eps-LDP)",
                          choices=("paper", "authors-code"))

    def __post_init__(self):
        # the same checks (and conversions, e.g. epsilon "inf" -> float) as YAML and flags get
        vals = schema.check(type(self), {f.name: getattr(self, f.name) for f in dataclasses.fields(self)},
                            type(self).__name__)
        for k, v in vals.items():
            object.__setattr__(self, k, v)
        if self.encoder == "authors-code" and (self.rescale or self.denoise != "none"):
            raise ValueError("encoder=authors-code sends every coordinate without bins: rescale and denoise do "
                             "not apply to it (use the default encoder=paper)")

    @property
    def split_seed(self) -> int:
        """Seed of the split and the MCMC chain."""
        return self.seed if self.data_seed is None else self.data_seed

    @property
    def chain_length(self) -> int:
        """MCMC iterations T actually run."""
        if self.mcmc_iters is not None:
            return self.mcmc_iters
        return CHAIN_LENGTH.get(self.dataset, DEFAULT_CHAIN)
