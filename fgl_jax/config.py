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
        def positive(name):
            if getattr(self, name) <= 0:
                raise ValueError(f"config field {name!r} must be positive, got {getattr(self, name)!r}")
        for name in ("hidden", "num_layers", "clients", "rounds", "local_steps", "lr", "dirichlet_beta"):
            positive(name)
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"config field 'algorithm': unknown {self.algorithm!r}; choose one of {ALGORITHMS}")
        if self.partition not in PARTITIONS:
            raise ValueError(f"config field 'partition': unknown {self.partition!r}; choose one of {PARTITIONS}")
        if self.split not in SPLITS:
            raise ValueError(f"config field 'split': unknown {self.split!r}; choose one of {SPLITS}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"config field 'dropout' must be in [0, 1), got {self.dropout}")
        if self.client_chunk is not None and self.client_chunk <= 0:
            raise ValueError(f"config field 'client_chunk' must be positive, got {self.client_chunk}")
        if self.chunk is not None and self.chunk <= 0:
            raise ValueError(f"config field 'chunk' must be positive, got {self.chunk}")

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
