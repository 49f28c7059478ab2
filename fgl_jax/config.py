"""Run configuration: one frozen dataclass, read from and written to YAML.

Every run writes its resolved config (`config.yaml`) so it can be replayed exactly with
`fgl-jax run --config out/config.yaml`.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Optional

import yaml

from fgl_jax.federated.baselines import ALGORITHMS
from fgl_jax import validate as V


SPLITS = ("standard", "random", "per_class", "keep")
PARTITIONS = ("random", "louvain", "dirichlet")


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """Everything that determines a baseline run (dataset -> split -> partition -> train).

    split: "standard" = the dataset's own split (Planetoid public split), "random" =
    fractions train/val/test, "per_class" = FederatedScope's random Planetoid split
    (num_train_per_class / num_val), "keep" = use whatever masks the loader set.
    """

    dataset: str = "csbm"
    data_dir: Optional[str] = None
    algorithm: str = "fedavg"
    model: str = "gcn"
    hidden: int = 64
    num_layers: int = 2
    dropout: float = 0.0
    clients: int = 5
    partition: str = "random"
    dirichlet_beta: float = 0.5
    split: str = "standard"
    train_frac: float = 0.6
    val_frac: float = 0.2
    test_frac: float = 0.2
    num_train_per_class: int = 20
    num_val: int = 500
    split_seed: int = 0
    partition_seed: int = 0
    rounds: int = 50
    local_steps: int = 1
    optimizer: str = "adam"
    lr: float = 0.01
    weight_decay: float = 0.0
    lr_gamma: float = 1.0
    lr_decay_every: int = 0
    prox_mu: float = 0.01
    personal_layers: int = 1
    seed: int = 0
    chunk: Optional[int] = None
    client_chunk: Optional[int] = None  # train/evaluate clients in blocks of this size (memory bound)

    def __post_init__(self):
        for name in ("hidden", "num_layers", "clients", "rounds", "local_steps", "lr", "dirichlet_beta"):
            V.positive("RunConfig", name, getattr(self, name))
        V.one_of("RunConfig", "algorithm", self.algorithm, ALGORITHMS)
        V.one_of("RunConfig", "partition", self.partition, PARTITIONS)
        V.one_of("RunConfig", "split", self.split, SPLITS)
        V.in_interval("RunConfig", "dropout", self.dropout, 0.0, 1.0, closed="left")
        V.optional_positive("RunConfig", "client_chunk", self.client_chunk)
        V.optional_positive("RunConfig", "chunk", self.chunk)

    def replace(self, **changes) -> "RunConfig":
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def config_fields() -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(RunConfig)}


def from_dict(values: dict[str, Any], source: str = "config") -> RunConfig:
    known = config_fields()
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise ValueError(f"{source}: unknown field(s) {unknown}; known fields: {sorted(known)}")
    return RunConfig(**values)


def load_config(path: str | Path, **overrides) -> RunConfig:
    """Read a YAML config; `overrides` (e.g. from the command line) win."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"config file {path} does not exist")
    try:
        values = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as e:
        raise ValueError(f"config file {path} is not valid YAML: {e}") from None
    if not isinstance(values, dict):
        raise ValueError(f"config file {path} must hold a mapping of fields, got {type(values).__name__}")
    values.update({k: v for k, v in overrides.items() if v is not None})
    return from_dict(values, source=f"config file {path}")


def save_config(cfg: RunConfig, path: str | Path) -> None:
    Path(path).write_text(yaml.safe_dump(cfg.to_dict(), sort_keys=False))
