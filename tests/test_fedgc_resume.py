"""An interrupted and resumed FedGC run reports, attacks and evaluates the same G' as the
uninterrupted run: the G' of the best checkpoint is part of what the engine checkpoints
(`Hooks.save_state` / `load_state`), so summary.json is the same, timings aside."""
import json
import re

import numpy as np
import pytest

from fgl_jax import experiment, schema
from fgl_jax.systems.fedgc import FedGCRun
from tests.fedgc_small import small_config, small_graph

TIMING = re.compile(r"(_s|_seconds)$")


def untimed(x):
    """summary.json without wall-clock values (timings and the machine differ between two runs)."""
    if isinstance(x, dict):
        return {k: untimed(v) for k, v in x.items() if not TIMING.search(k) and k != "environment"}
    if isinstance(x, list):
        return [untimed(v) for v in x]
    return x


class Interrupted(Exception):
    pass


GRAPH = small_graph()
CACHE: dict = {}   # host preparation shared by the runs (identical results, computed once): only speed


def execute(cfg, out, resume=False, stop_at=None):
    """A fresh FedGCRun (the hooks' state starts empty, as in a new process) through the engine; stop_at:
    raise in the evaluation hook at that round, i.e. after the checkpoint of the round before it."""
    run = FedGCRun(cfg, graph=GRAPH, cache=CACHE)
    program = run.program
    if stop_at is not None:
        on_chunk = program.hooks.on_chunk

        def interrupting(rounds_done, state, history):
            if rounds_done == stop_at:
                raise Interrupted(rounds_done)
            return on_chunk(rounds_done, state, history)
        program = program._replace(hooks=program.hooks._replace(on_chunk=interrupting))
    # a checkpoint after every chunk (the round-based policy): the interruption must find the one
    # of the reported round, which the default (one save per 30 s) would not have written yet
    return experiment.execute(program, cfg.seed, system="fedgc", out=str(out), resume=resume,
                              config_text=schema.dump(cfg, "fedgc"), checkpoint_every="chunk")


@pytest.fixture(scope="module")
def cfg():
    return small_config(rounds=12, eval_rounds=(4, 8, 12), mia=True, mia_target="selected", archs=("gcn",))


@pytest.fixture(scope="module")
def full(cfg, tmp_path_factory):
    """(out folder, RunResult) of the uninterrupted run."""
    out = tmp_path_factory.mktemp("full")
    res = execute(cfg, out)
    # the reported checkpoint must come before the interruption, or nothing of it needs restoring
    assert res.best["round"] in (4, 8), f"this config now selects round {res.best['round']}: pick one that selects earlier"
    return out, res


@pytest.mark.slow   # whole-run integration (compiles and runs a full program); the default suite stays short
def test_resumed_run_equals_uninterrupted(tmp_path, cfg, full):
    out_full, res_full = full
    best = res_full.best["round"]
    assert res_full.extras["mia_target_round"] == best and "gcn" in res_full.extras["archs"]
    with pytest.raises(Interrupted):  # at the next evaluation: the last checkpoint is the reported one's
        execute(cfg, tmp_path, stop_at=best + 4)
    last = int(sorted((tmp_path / "checkpoints").glob("round_*.sha256"))[-1].name[6:12])
    assert best <= last < best + 4 and (tmp_path / "checkpoints" / f"round_{last:06d}" / "hooks.npz").exists()
    resumed = execute(cfg, tmp_path, resume=True)
    a = json.loads((out_full / "summary.json").read_text())
    b = json.loads((tmp_path / "summary.json").read_text())
    assert untimed(b) == untimed(a)
    # both outputs that depend on the selected G' (the attack's target, the architectures) are there
    assert b["extras"]["mia_target_round"] == best and b["extras"]["archs"]["gcn"] > 0
    assert resumed.extras["mia_auc_z"] == res_full.extras["mia_auc_z"]


@pytest.mark.slow  # a third run; run with -m slow
def test_a_checkpoint_without_its_hook_state_counts_as_damaged(tmp_path, cfg, full, capsys):
    # the hook state is inside the checkpoint and under its checksum: deleting it makes the resume
    # fall back to the previous checkpoint (with its own saved state), and the result is unchanged
    with pytest.raises(Interrupted):
        execute(cfg, tmp_path, stop_at=full[1].best["round"] + 4)
    last = sorted((tmp_path / "checkpoints").glob("round_*/hooks.npz"))[-1]
    last.unlink()
    execute(cfg, tmp_path, resume=True)
    assert "is damaged" in capsys.readouterr().err
    a = json.loads((full[0] / "summary.json").read_text())
    b = json.loads((tmp_path / "summary.json").read_text())
    assert untimed(b) == untimed(a)


def test_hook_state_round_trip_is_exact(cfg):
    run = FedGCRun(cfg, graph=GRAPH, cache=CACHE)
    g = tuple(np.random.default_rng(0).normal(size=s).astype(np.float32) for s in ((5, 5), (5, 12), (5, 3)))
    run.kept, run.eval_s = (8, 0.7123456789, g), 3.25
    other = FedGCRun(cfg, graph=GRAPH, cache=CACHE)
    other.load_state({k: np.asarray(v) for k, v in run.save_state().items()})
    assert other.kept[:2] == (8, 0.7123456789) and other.eval_s == 3.25
    for u, v in zip(other.kept[2], g):
        assert u.dtype == v.dtype and np.array_equal(u, v)


def test_cells_share_their_compiled_functions(cfg):
    # paper.py's cells in one process: the same condensation algorithm (so the engine's compiled scan)
    # and the same jitted evaluator whenever only host-side settings differ, e.g. Φ's initial bias
    import dataclasses
    from fgl_jax.systems.fedgc.attack import _gcn_trainer
    a = FedGCRun(cfg, graph=GRAPH, cache=CACHE)
    b = FedGCRun(dataclasses.replace(cfg, pge_init_bias=-4.6), graph=GRAPH, cache=CACHE)
    assert a.algorithm is b.algorithm and a.evaluator is b.evaluator
    last = f"b{cfg.pge_layers - 1}"
    assert np.all(np.asarray(b.data.start.pge[last]) == np.float32(-4.6))
    assert not np.array_equal(np.asarray(a.data.start.pge[last]), np.asarray(b.data.start.pge[last]))
    c = FedGCRun(dataclasses.replace(cfg, lr_feat=cfg.lr_feat * 2), graph=GRAPH, cache=CACHE)
    assert c.algorithm is not a.algorithm   # the round itself differs
    assert _gcn_trainer("gcn", 8, 3, cfg.mia_config) is _gcn_trainer("gcn", 8, 3, cfg.mia_config)


@pytest.mark.slow  # an interrupted and a resumed run; run with -m slow
def test_a_paper_cell_with_a_run_dir_continues_its_interrupted_run(tmp_path, cfg, full):
    # experiments/fedgc/paper.py --run-dir D: the cell "fedgc/x/s0" keeps its run in D/fedgc/x/s0; the
    # same command after an interruption resumes there and reports what the uninterrupted run reports
    from experiments.fedgc.paper import Measure
    cell_dir = tmp_path / "fedgc" / "x" / "s0"
    with pytest.raises(Interrupted):
        execute(cfg, cell_dir, stop_at=full[1].best["round"] + 4)
    said = []
    measure = Measure(None, False, {}, {}, log=said.append, run_dir=tmp_path)
    measure.cache = CACHE
    measure.execute(GRAPH, cfg, "fedgc/x/s0")
    assert any(m.startswith("[resume] fedgc/x/s0") for m in said)
    a = json.loads((full[0] / "summary.json").read_text())
    b = json.loads((cell_dir / "summary.json").read_text())
    assert untimed(b) == untimed(a)
