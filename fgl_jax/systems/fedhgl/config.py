"""FedHGL's schema: the one place a default or a valid range of a FedHGL run is written.

Defaults are the paper's headline cell, Table III "FedHGL w/ HC" on CoraCA with K = 3 clients:
label-Dirichlet partition (β = 1e4, ≥ 10 nodes per client), N = 2 propagation hops, hyperedge
completion without noise, classifier Linear(F,16) → Dropout .5 → Linear(16,C) → ReLU, Adam lr .01 +
L2 5e-4, T = 200 rounds × I = 3 local steps, FedAvg weighted by training nodes, per-client
best-validation checkpoints validated after every local step, validation 20 % / test 40 % and the
dataset's training ratio of Tables II / IV (spec fedhgl.md §5, §7.2, §10).

`method` names the paper's rows (Tables III / V): "fedhgl_hc" (FedHGL w/ HC), "fedhgl" (Basic
FedHGL: trimmed local hypergraphs), "hgnn_hc" / "hgnn_local" (the same features without
aggregation) and "global" (one client holding the whole hypergraph; the paper trains it for
T = 600 rounds, which its cell writes as `rounds: 600`: rounds always mean rounds).
"""
from __future__ import annotations

import dataclasses
from typing import Optional

from fgl_jax.privacy.ldp import RR_VARIANTS, check_epsilon
from fgl_jax import schema
from fgl_jax.schema import RunSpec, option

# row of the paper -> (pre-propagation, training mode)
METHODS = {"fedhgl_hc": ("hc", "fedavg"), "fedhgl": ("basic", "fedavg"), "hgnn_hc": ("hc", "local"),
           "hgnn_local": ("basic", "local"), "global": ("global", "fedavg")}
MECHANISMS = ("none", "rr", "laplace", "auto")

# Training ratio per dataset (paper Tables II and IV); `train_ratio: null` reads this table.
TRAIN_RATIO = {"coraca": 0.1, "dblp4k": 0.06, "imdb4k": 0.06, "cora": 0.1, "citeseer": 0.1, "facebook": 0.008,
               "cocitation_cora": 0.1, "cocitation_citeseer": 0.1}


@dataclasses.dataclass(frozen=True)
class FedHGLConfig(RunSpec):
    """One FedHGL run (a cell of Tables III / V or a point of Figure 3)."""

    dataset: str = option("coraca", "hypergraph dataset: a name or path to a hypergraph or graph file or directory "
                                    "(plain graphs become 1-hop hypergraphs)")
    rounds: int = option(200, "number of federated rounds T", low=1)
    clients: int = option(3, "number of clients K the nodes are partitioned over", low=1)
    method: str = option("fedhgl_hc", "the paper's row: FedHGL w/ HC, Basic FedHGL, HGNN w/ HC, HGNN (local), Global",
                         choices=tuple(METHODS))
    mechanism: str = option("none", "LDP for round-0 single-node uploads (auto: rr on binary, laplace on numeric)",
                            choices=MECHANISMS)
    eps: float = option(10.0, "per-attribute privacy budget epsilon of the LDP mechanism", low=0, low_open=True)
    traced_eps: bool = option(False, "keep epsilon traced (HC + Laplace only) so epsilon sweeps are one program")
    rr_variant: str = option("paper", "randomized-response output: paper Eq. 13 or the authors' centred code",
                             choices=RR_VARIANTS)
    sensitivity: str = option("paper", "Laplace sensitivity: Eq. 16 border-node range or public_range",
                              choices=("paper", "public"))
    public_range: float = option(1.0, "per-attribute range used when sensitivity is public", low=0, low_open=True)
    noise_propagation: str = option("paper", "noise through all hops (paper) or first hop only (authors' code)",
                                    choices=("paper", "first_hop"))
    hops: int = option(2, "propagation hops N (HGNN layers without activations)", low=1)
    beta: float = option(1e4, "label-Dirichlet concentration of the node partition", low=0, low_open=True)
    min_client_size: int = option(10, "least number of nodes per client in the partition", low=1)
    split: str = option("auto", schema.SPLIT_HELP + "; the paper's is a random per-client split (ratios below)",
                        choices=schema.SPLIT_MODES)
    train_ratio: Optional[float] = option(None, "training nodes per client (none: the paper's ratio for the dataset)",
                                          low=0, high=1, low_open=True)
    val_ratio: float = option(0.2, "validation nodes per client (paper: 20 percent)", low=0, high=1)
    test_ratio: float = option(0.4, "test nodes per client (paper: 40 percent)", low=0, high=1)
    local_steps: int = option(3, "local full-batch Adam steps I per round", low=1)
    lr: float = option(0.01, "Adam learning rate", low=0, low_open=True, traced=True)
    weight_decay: float = option(5e-4, "L2 weight decay of Adam", low=0)
    hidden: int = option(16, "hidden width of the two-linear classifier", low=1)
    dropout: float = option(0.5, "dropout rate between the two linears", low=0, high=1, high_open=True)
    final_relu: bool = option(True, "ReLU on the logits (the authors' classifier)")
    bias: bool = option(False, "bias terms in the two linears")
    weighting: str = option("train", "FedAvg weights: training-node counts (paper Eq. 4) or uniform (code)",
                            choices=("train", "uniform"))
    eval_every_step: bool = option(True, "validate after every local step (authors' code), else once per round")
    feature_chunk: Optional[int] = option(512, "feature columns per block in the explicit protocol (none: all)", low=1)

    def __post_init__(self):
        # a direct FedHGLConfig(...) is checked like YAML and flags (types, choices, ranges)
        schema.check(type(self), schema.to_dict(self), type(self).__name__)
        if self.method == "global" and self.clients != 1:
            raise ValueError(f"clients must be 1 with method='global' (one client holds the whole hypergraph), "
                             f"got {self.clients}")
        ratio = self.train_ratio if self.train_ratio is not None else 0.0
        if ratio + self.val_ratio + self.test_ratio > 1:
            raise ValueError(f"train_ratio + val_ratio + test_ratio must be <= 1, got "
                             f"{ratio} + {self.val_ratio} + {self.test_ratio}")
        if self.mechanism != "none":
            check_epsilon(self.eps)
        if self.traced_eps and (self.propagation != "hc" or self.mechanism not in ("laplace", "auto")
                                or self.noise_propagation != "paper"):
            raise ValueError("traced_eps needs a hyperedge-completion method (fedhgl_hc, hgnn_hc), mechanism "
                             "laplace (or auto on numeric features) and noise_propagation 'paper': randomized response "
                             f"is not linear in eps; got method={self.method!r}, mechanism={self.mechanism!r}")

    @property
    def propagation(self) -> str:
        """"hc" (hyperedge completion), "basic" (trimmed local hypergraphs) or "global"."""
        return METHODS[self.method][0]

    @property
    def mode(self) -> str:
        """"fedavg" (FedAvg over clients) or "local" (no aggregation)."""
        return METHODS[self.method][1]

    def ratio_for(self, dataset: str) -> float:
        """The training ratio of this run on `dataset` (the paper's table when train_ratio is none)."""
        return float(self.train_ratio) if self.train_ratio is not None else TRAIN_RATIO.get(dataset, 0.1)
