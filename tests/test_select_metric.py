"""Issue 48 item 3: binary, imbalanced node labels get ROC-AUC and AP in metrics.jsonl and summary.json
(checked against scikit-learn's roc_auc_score / average_precision_score, part of the `test` extra, and a
NumPy re-derivation on the model's own scores)
and --select-metric auc|ap|acc|loss picks the reported round, stated in summary.json."""
from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

try:  # the `test` extra installs it; the NumPy references below still run without it
    from sklearn.metrics import average_precision_score, roc_auc_score
except ImportError:  # pragma: no cover
    roc_auc_score = average_precision_score = None

from fgl_jax import experiment
from fgl_jax.cli import main
from fgl_jax.federated.metrics import binary_scores
from fgl_jax.federated.run import Tracker, best_by_validation
from fgl_jax.nn import ModelSpec
from fgl_jax.systems.baseline.config import RunConfig
from fgl_jax.systems.baseline.program import prepare


def ref_auc(score: np.ndarray, pos: np.ndarray) -> float:
    """P(positive outscores negative) + P(tie) / 2, by comparing every pair (sklearn's roc_auc_score)."""
    sp, sn = score[pos][:, None], score[~pos][None, :]
    return float(((sp > sn).sum() + 0.5 * (sp == sn).sum()) / (sp.size * sn.size))


def ref_ap(score: np.ndarray, pos: np.ndarray) -> float:
    """sklearn's average_precision_score: sum over distinct thresholds t (descending) of
    (recall(t) - recall(previous t)) * precision(t), every entry scoring >= t predicted positive."""
    total, prev_recall = 0.0, 0.0
    for t in np.unique(score)[::-1]:
        pred = score >= t
        recall = (pred & pos).sum() / pos.sum()
        total += (recall - prev_recall) * (pred & pos).sum() / pred.sum()
        prev_recall = recall
    return float(total)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_binary_scores_with_many_ties_match_the_reference(seed):
    rng = np.random.default_rng(seed)
    score = rng.integers(0, 4, 200).astype(np.float32) / 4  # four distinct values: ties everywhere
    pos = rng.random(200) < 0.15                           # imbalanced
    mask = rng.random(200) < 0.8
    auc, ap = binary_scores(jnp.asarray(score), jnp.asarray(pos), jnp.asarray(mask))
    assert float(auc) == pytest.approx(ref_auc(score[mask], pos[mask]), abs=1e-6)
    assert float(ap) == pytest.approx(ref_ap(score[mask], pos[mask]), abs=1e-6)


@pytest.mark.parametrize("seed", [0, 1])
def test_binary_scores_with_ties_match_scikit_learn(seed):
    if roc_auc_score is None:
        pytest.skip("scikit-learn is not installed (pip install -e '.[test]')")
    rng = np.random.default_rng(seed)
    score = rng.integers(0, 5, 300).astype(np.float32) / 5  # five distinct values: ties everywhere
    pos = rng.random(300) < 0.1                            # imbalanced
    mask = rng.random(300) < 0.7
    auc, ap = binary_scores(jnp.asarray(score), jnp.asarray(pos), jnp.asarray(mask))
    assert float(auc) == pytest.approx(roc_auc_score(pos[mask], score[mask]), abs=1e-6)
    assert float(ap) == pytest.approx(average_precision_score(pos[mask], score[mask]), abs=1e-6)


def _binary_file(path, n=150, seed=1):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.2).astype(int)                  # 20 % positives
    pairs = {(int(i), int(j)) for i, j in rng.integers(0, n, (3 * n, 2)) if i != j}
    ei = np.array(sorted(pairs | {(j, i) for i, j in pairs})).T
    x = (y[:, None] * 0.8 + rng.normal(size=(n, 5))).astype(np.float32)
    np.savez(path, edge_index=ei, x=x, y=y)


def _rows(out) -> list[dict]:
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::fgl_jax.data.DataNotice")
def test_auc_and_ap_of_a_run_equal_the_reference_on_its_scores_and_select_by_auc(tmp_path):
    path, out = tmp_path / "bin.npz", tmp_path / "run"
    _binary_file(path)
    cfg = RunConfig(dataset=str(path), clients=2, rounds=5, hidden=8, select_metric="auc")
    res = experiment.run_config(cfg, out=str(out), progress=False)
    # the final model's scores, recomputed outside the round program
    prep = prepare(cfg)
    model = ModelSpec(cfg.model, prep.graph.num_features, prep.graph.num_classes, hidden=cfg.hidden,
                      num_layers=cfg.num_layers, dropout=cfg.dropout).build()
    b = prep.data.eval
    logits = jax.vmap(lambda one: model.apply(res.state.server, one, train=False))(b)
    score = np.asarray(jax.nn.softmax(logits.astype(jnp.float32), -1)[..., 1]).ravel()
    pos = (np.asarray(b.y) == 1).ravel()
    rows = _rows(out)
    summary = json.loads((out / "summary.json").read_text())
    for split in ("val", "test"):
        m = (np.asarray(getattr(b, f"{split}_mask")) & np.asarray(b.node_mask)).ravel()
        assert 0 < pos[m].sum() < m.sum()
        refs = [("auc", ref_auc), ("ap", ref_ap)]
        if roc_auc_score is not None:  # the same scores through scikit-learn
            refs += [("auc", lambda sc, p: roc_auc_score(p, sc)), ("ap", lambda sc, p: average_precision_score(p, sc))]
        for name, ref in refs:
            want = ref(score[m], pos[m])
            assert rows[-1][f"{split}_{name}"] == pytest.approx(want, abs=1e-5)
            assert summary["final"][f"{split}_{name}"] == pytest.approx(want, abs=1e-5)
    # the reported round: the first with the highest val_auc, stated as selected by it
    val = np.array([r["val_auc"] for r in rows], np.float32)
    i = int(np.argmax(val))
    assert summary["best"]["select"] == "val_auc"
    assert summary["best"]["best_round"] == i + 1
    assert summary["best"]["best_val"] == pytest.approx(rows[i]["val_auc"])
    assert summary["best"]["best_test"] == pytest.approx(rows[i]["test_auc"])


@pytest.mark.slow
def test_select_metric_loss_picks_the_lowest_val_loss(tmp_path):
    path, out = tmp_path / "bin.npz", tmp_path / "run"
    _binary_file(path)
    assert main(["run", "--dataset", str(path), "--clients", "2", "--rounds", "5", "--hidden", "8", "--lr", "0.05",
                 "--no-progress", "--select-metric", "loss", "--out", str(out)]) == 0
    rows = _rows(out)
    best = json.loads((out / "summary.json").read_text())["best"]
    loss = np.array([r["val_loss"] for r in rows], np.float32)
    i = int(np.argmin(loss))
    assert best["select"] == "val_loss" and best["select_mode"] == "min"
    assert best["best_round"] == i + 1
    assert best["best_val"] == pytest.approx(rows[i]["val_loss"])
    assert best["best_test"] == pytest.approx(rows[i]["test_acc"])


def test_tracker_and_host_rule_agree_for_every_selection():
    hist = {"val_acc": np.array([0.5, 0.7, 0.7, 0.6]), "test_acc": np.array([0.4, 0.6, 0.65, 0.7]),
            "val_ap": np.array([0.2, 0.1, 0.3, 0.3]), "test_ap": np.array([0.1, 0.2, 0.3, 0.4]),
            "val_loss": np.array([1.0, 0.8, 0.9, 0.8])}
    want = {("val_acc", "test_acc"): 2, ("val_ap", "test_ap"): 3, ("val_loss", "test_acc", "min"): 2}
    for keys, rnd in want.items():
        t = Tracker.empty(keys)
        for r in range(4):
            t = t.update(jnp.int32(r), {k: jnp.asarray(v[r], jnp.float32) for k, v in hist.items()})
        assert int(t.best_round) + 1 == rnd, keys
        host = best_by_validation(hist, keys)
        assert host["best_round"] == rnd, keys
        assert host["best_val"] == pytest.approx(hist[keys[0]][rnd - 1])


def test_select_by_auc_needs_binary_labels(tmp_path, capsys):
    assert main(["run", "--dataset", "csbm", "--rounds", "2", "--no-progress", "--select-metric", "auc"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "select_metric auc: ROC-AUC and AP are computed for binary node labels" in err
