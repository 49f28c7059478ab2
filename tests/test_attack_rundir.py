"""`fgl-jax attack mia RUN_DIR` (fgl_jax.systems.baseline.attack, fgl_jax.experiment.load_run; issue 51
item 2): on one tiny finished run (module fixture) the subcommand's AUCs equal the --eval-mia AUCs the
run wrote to summary.json (exact identity: the same state, restored from the final checkpoint), and
its loss / confidence AUCs equal scikit-learn's roc_auc_score on scores computed here from the restored
model client by client; bad run directories get one line each."""
from __future__ import annotations

import json
import shutil

import jax
import numpy as np
import pytest

from fgl_jax import experiment
from fgl_jax.cli import main
from fgl_jax.systems.baseline.program import model_from_config, prepare

sklearn_metrics = pytest.importorskip("sklearn.metrics")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("mia") / "run"
    cfg = experiment.default_config("baseline", dataset="csbm", clients=3, rounds=2, hidden=8, split="keep",
                                    eval_mia=True)
    experiment.run_config(cfg, out=str(out), progress=False)
    return out


def test_attack_equals_the_runs_eval_mia_exactly(run_dir, capsys):
    assert main(["attack", "mia", str(run_dir)]) == 0
    printed = capsys.readouterr().out
    got = json.loads((run_dir / "attacks" / "mia.json").read_text())
    want = json.loads((run_dir / "summary.json").read_text())["extras"]["mia"]
    assert got["mia"] == want  # exact: same floats, counts and model
    assert got["rounds"] == 2
    assert f"loss       AUC {want['auc_loss']:.4f}" in printed
    # a second attack refuses to replace the file, --overwrite replaces it
    assert main(["attack", "mia", str(run_dir)]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert main(["attack", "mia", str(run_dir), "--overwrite"]) == 0


def test_auc_equals_scikit_learn_on_the_restored_models_scores(run_dir):
    run = experiment.load_run(run_dir)
    cfg = run.config
    graph = prepare(experiment.resolve_dataset(cfg)).graph
    model = model_from_config(cfg, graph)[0]
    apply = jax.jit(lambda one: jax.nn.log_softmax(model.apply(run.state.server, one, train=False), -1))
    b = run.program.data.eval
    scores = {"loss": [], "confidence": []}
    labels = []
    for c in range(int(b.num_clients)):
        one = jax.tree.map(lambda a: a[c], b)
        lp = np.asarray(apply(one), np.float64)
        real = np.asarray(one.node_mask, bool)
        for mask, member in ((np.asarray(one.train_mask, bool) & real, 1), (np.asarray(one.test_mask, bool) & real, 0)):
            scores["loss"].append(lp[np.arange(len(lp)), np.asarray(one.y)][mask])
            scores["confidence"].append(np.exp(lp.max(-1))[mask])
            labels.append(np.full(mask.sum(), member))
    want = json.loads((run_dir / "summary.json").read_text())["extras"]["mia"]
    y = np.concatenate(labels)
    for kind in ("loss", "confidence"):
        ref = sklearn_metrics.roc_auc_score(y, np.concatenate(scores[kind]))
        assert want[f"auc_{kind}"] == pytest.approx(ref, abs=1e-6), kind  # float32 logits vs float64 scores


def test_bad_run_directories_get_one_line(run_dir, tmp_path, capsys):
    def error(path) -> str:
        assert main(["attack", "mia", str(path)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and err.startswith("fgl-jax: error: ")
        return err
    assert "does not exist" in error(tmp_path / "nowhere")
    assert "config.yaml is missing" in error(tmp_path)
    unfinished = tmp_path / "unfinished"
    shutil.copytree(run_dir, unfinished, ignore=shutil.ignore_patterns("attacks"))
    (unfinished / "summary.json").unlink()
    assert "no finished run" in error(unfinished)
    nockpt = tmp_path / "nockpt"
    shutil.copytree(run_dir, nockpt, ignore=shutil.ignore_patterns("attacks"))
    shutil.rmtree(nockpt / "checkpoints")
    assert "holds no checkpoint" in error(nockpt)
    graph = tmp_path / "graph"
    graph.mkdir()
    (graph / "config.yaml").write_text("system: baseline\ntask: graph_cls\ndataset: mutag\n")
    assert "graph and link tasks are not supported" in error(graph)
    other = tmp_path / "other"
    other.mkdir()
    (other / "config.yaml").write_text("system: hifgl\n")
    assert "holds a hifgl run" in error(other)
