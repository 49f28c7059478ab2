"""The one schema of HiFGL: every default and valid range of a run, nowhere else.

Defaults are the paper's headline setting (§6.1 and the spec's [DECIDE] choices, specs/hifgl.md §4,
§5.2): 5 random silos, FederatedScope's random Planetoid split (`split: auto` keeps the masks of
your own data instead, see `fgl_jax.schema.split_mode`), 2-layer GCN with hidden 64, 50
rounds of one full-batch Adam step (lr 0.01 x0.9 every 4 rounds), T = 1, p = 2^31 - 1, 16
fractional bits, fresh masks per message, A + I normalisation.

    fgl-jax hifgl --dataset citeseer          # Table 3's HiFGL-GCN cell on CiteSeer (one seed)
"""
from __future__ import annotations

import dataclasses
from typing import Optional

from fgl_jax import schema
from fgl_jax.federated.client import OptimConfig
from fgl_jax.privacy import field as F
from fgl_jax.schema import RunSpec, option

MODELS = ("gcn", "sage")
MODES = ("field", "real", "plain")
NORMS = ("gcn_selfloop", "paper_eq23", "authors_code")
Z_MODES = ("fresh", "silo_fixed")
SELECTS = ("val", "test")
EDGES = ("all", "same_split")

# FederatedScope's random Planetoid split (spec §4): (training nodes per class, validation nodes).
# The paper's 6/2/2 partition; other datasets get round(0.6 N / C) and round(0.2 N).
PAPER_SPLIT = {"cora": (232, 542), "citeseer": (332, 665), "pubmed": (3943, 3943)}


@dataclasses.dataclass(frozen=True)
class HiFGLConfig(RunSpec):
    """HiFGL run: data, silos, backbone, Lagrange coding and optimiser (RunSpec: dataset, data_dir, rounds, seed).

    mode "field" = LCC over F_p with fixed-point quantisation (the method); "real" = the same coding
    over float64 (speed comparisons); "plain" = no coding (the reference computation).
    norm "gcn_selfloop" = A + I (parity with Global-GCN), "paper_eq23" (Eq. 2/3 literally) or
    "authors_code" (the normalisation of the authors' public code, `model.authors_code_propagate`).
    z_mode "fresh" = masks drawn per message (spec 5.2.5) or "silo_fixed" (z inside mu, literal).
    """

    clients: int = option(5, "number of silos (clients); every node is a device of one silo", low=1)
    model: str = option("gcn", "GNN backbone whose neighbour sums run through SecMP", choices=MODELS)
    hidden: int = option(64, "hidden width of the GNN", low=1)
    num_layers: int = option(2, "number of GNN layers", low=1)
    lr: float = option(0.01, "Adam learning rate of every silo", low=0, low_open=True, traced=True)
    lr_gamma: float = option(0.9, "factor of the step decay of the learning rate", low=0, high=1, low_open=True)
    lr_decay_every: int = option(4, "rounds between learning-rate decays (0 = constant rate)", low=0)
    weight_decay: float = option(0.0, "L2 weight decay added to the gradient before Adam", low=0)
    T: int = option(1, "privacy threshold of the Lagrange coding (colluding parties tolerated)", low=1)
    p: int = option(F.MERSENNE_31, "prime modulus of the finite field (mode field)", low=3)
    frac_bits: int = option(16, "fractional bits of the fixed-point quantisation (mode field)", low=0)
    mode: str = option("field", "arithmetic of the secure sum: field (the method), real (float64 LCC), plain",
                       choices=MODES)
    norm: str = option("gcn_selfloop", "GCN normalisation: gcn_selfloop = D^-1/2 (A + I) D^-1/2; paper_eq23 = "
                                       "D^-1/2 A D^-1/2 (Eq. 2/3, no self-loops); authors_code = the authors' "
                                       "code's: (h_u + sum_v h_v / sqrt(1 + deg_v)) / (n_u sqrt(n_u + 1)), deg_v "
                                       "over the whole graph, n_u = 1 + messages u receives",
                       choices=NORMS)
    z_mode: str = option("fresh", "LCC masks: fresh per message, or fixed per silo as the paper writes",
                         choices=Z_MODES)
    select: str = option("val", "round reported: best validation accuracy (this project's protocol), or best "
                                "test accuracy as the authors' code selects its checkpoint (an upper bound)",
                         choices=SELECTS)
    edges: str = option("all", "message passing over every edge, or only between devices of the same split "
                               "(train/val/test) as the authors' code does", choices=EDGES)
    split: str = option("auto", schema.SPLIT_HELP + "; the paper's is FederatedScope's random per-class split",
                        choices=schema.SPLIT_MODES)
    train_per_class: Optional[int] = option(
        None, "training nodes per class of the random split; none = FederatedScope's for the dataset "
              "(cora 232, citeseer 332, pubmed 3943; else round(0.6 N / C))", low=1)
    num_val: Optional[int] = option(
        None, "validation nodes of the random split; none = FederatedScope's for the dataset "
              "(cora 542, citeseer 665, pubmed 3943; else round(0.2 N))", low=0)
    split_seed: int = option(0, "seed of the random train/val/test split (fixed across model seeds)", low=0)
    partition_seed: int = option(0, "seed of the random assignment of nodes to silos (fixed across model seeds)",
                                 low=0)
    track_silo_acc: bool = option(False, "record each silo model's training accuracy every round (Fig. 4a)")

    def __post_init__(self):
        # the schema's choices and ranges hold for direct construction too (one line naming the field)
        schema.check(type(self), schema.to_dict(self), type(self).__name__)
        if self.mode == "field":
            F.validate_modulus(self.p)
            F.validate_frac_bits(self.frac_bits, self.p)
            if 2 * self.T + 2 >= self.p:
                raise ValueError(f"T={self.T} needs 2T+2={2 * self.T + 2} distinct nonzero field elements, "
                                 f"but the field with p={self.p} has only {self.p - 1}")

    @property
    def optim(self) -> OptimConfig:
        """Each silo's optimiser (Adam; the LR enters as a traced multiplier, see `algorithm.hifgl`)."""
        return OptimConfig(lr=self.lr, weight_decay=self.weight_decay, gamma=self.lr_gamma,
                           decay_every=self.lr_decay_every)


def split_sizes(cfg: HiFGLConfig, num_nodes: int, num_classes: int) -> tuple[int, int]:
    """(training nodes per class, validation nodes) of the run: the config's, else the paper's."""
    per_class, val = PAPER_SPLIT.get(cfg.dataset.lower(), (int(round(0.6 * num_nodes / num_classes)),
                                                           int(round(0.2 * num_nodes))))
    return (cfg.train_per_class if cfg.train_per_class is not None else per_class,
            cfg.num_val if cfg.num_val is not None else val)
