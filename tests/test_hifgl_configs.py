"""experiments/configs/hifgl: every HiFGL file resolves in the schema and is the paper cell it is named after."""
import dataclasses
from pathlib import Path

import pytest
import yaml

from fgl_jax import schema
from experiments.hifgl import paper
from fgl_jax.systems.hifgl import HiFGLConfig, split_sizes

FOLDER = Path(__file__).resolve().parents[1] / "experiments" / "configs" / "hifgl"
FILES = sorted(p for p in FOLDER.glob("*.yaml") if (yaml.safe_load(p.read_text()) or {}).get("system") == "hifgl")


def _resolve(path: Path) -> HiFGLConfig:
    return schema.resolve(HiFGLConfig, path, system="hifgl")


def test_there_are_hifgl_cells():
    assert len(FILES) >= 4 + 6 + 5


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_every_file_is_a_paper_cell(path):
    cfg = _resolve(path)  # unknown keys, wrong types or out-of-range values would raise here
    cells = [c for group in paper.cells().values() for c in group]
    # the files spell the split out; the cells leave it to the dataset's FederatedScope sizes
    assert cfg.train_per_class is not None and cfg.num_val is not None
    sizes = (cfg.train_per_class, cfg.num_val)
    bare = dataclasses.replace(cfg, train_per_class=None, num_val=None)
    assert bare in cells, f"{path.name} is none of experiments/hifgl/paper.py's cells"
    assert split_sizes(bare, 0, 1) == sizes


def test_cells_have_the_papers_settings():
    t3 = _resolve(FOLDER / "table3_citeseer_hifgl_gcn.yaml")
    assert (t3.dataset, t3.model, t3.clients, t3.rounds, t3.hidden, t3.num_layers) == ("citeseer", "gcn", 5, 50, 64, 2)
    assert (t3.train_per_class, t3.num_val) == (332, 665)        # FederatedScope's CiteSeer split (spec §4)
    assert (t3.lr, t3.lr_gamma, t3.lr_decay_every, t3.T, t3.frac_bits, t3.p) == (0.01, 0.9, 4, 1, 16, 2**31 - 1)
    sage = _resolve(FOLDER / "table3_cora_hifgl_sage.yaml")
    assert (sage.dataset, sage.model, sage.train_per_class, sage.num_val) == ("cora", "sage", 232, 542)
    f5 = _resolve(FOLDER / "fig5_cora_sage_silos50.yaml")
    assert (f5.dataset, f5.model, f5.clients) == ("cora", "sage", 50)
    t5 = _resolve(FOLDER / "table5_citeseer_gcn_layers16.yaml")
    assert (t5.dataset, t5.model, t5.num_layers, t5.hidden) == ("citeseer", "gcn", 16, 64)


def test_every_full_cell_has_a_file():
    have = {dataclasses.replace(_resolve(p), train_per_class=None, num_val=None) for p in FILES}
    for name, group in paper.cells().items():
        for c in group:
            if name != "figure4":  # Figure 4 is Table 3's Cora GCN cell with per-silo tracking
                assert c in have, (name, c)
