"""Macro precision/recall/F1 and binary ROC-AUC/AP (fgl_jax.federated.metrics) against NumPy
re-derivations written from the definitions (loops over classes, all positive/negative pairs,
thresholds one by one), on random logits, labels and masks; sklearn too when it is installed."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fgl_jax.federated.metrics import binary_scores, class_counts, macro_scores, pool, summarise


def ref_macro(pred: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    """sklearn's average='macro' from the definitions: classes = those in y or pred."""
    labels = sorted(set(y.tolist()) | set(pred.tolist()))
    if not labels:
        return 0.0, 0.0, 0.0
    ps, rs, fs = [], [], []
    for c in labels:
        tp = int(np.sum((pred == c) & (y == c)))
        npred, ntrue = int(np.sum(pred == c)), int(np.sum(y == c))
        p = tp / npred if npred else 0.0
        r = tp / ntrue if ntrue else 0.0
        ps.append(p)
        rs.append(r)
        fs.append(2 * p * r / (p + r) if p + r > 0 else 0.0)
    return float(np.mean(ps)), float(np.mean(rs)), float(np.mean(fs))


def ref_auc(score: np.ndarray, pos: np.ndarray) -> float:
    """Mann-Whitney: over all (positive, negative) pairs, 1 if the positive scores higher, 1/2 on ties."""
    sp, sn = score[pos], score[~pos]
    if len(sp) == 0 or len(sn) == 0:
        return float("nan")
    diff = sp[:, None] - sn[None, :]
    return float(((diff > 0) + 0.5 * (diff == 0)).mean())


def ref_ap(score: np.ndarray, pos: np.ndarray) -> float:
    """Step-wise AP: thresholds = distinct scores, descending; sum (R_t - R_prev) * P_t."""
    if pos.sum() == 0:
        return float("nan")
    ap, r_prev = 0.0, 0.0
    for t in np.unique(score)[::-1]:
        sel = score >= t
        p, r = pos[sel].sum() / sel.sum(), pos[sel].sum() / pos.sum()
        ap += (r - r_prev) * p
        r_prev = r
    return float(ap)


def random_case(rng, n: int, k: int, ties: bool = False):
    logits = rng.normal(size=(n, k)).astype(np.float32)
    if ties:
        logits = np.round(logits, 0)
    y = rng.integers(0, k, n).astype(np.int32)
    if k > 3:  # some classes absent from the labels
        y = np.where(y == k - 1, 0, y)
    mask = rng.random(n) < 0.6
    return logits, y, mask


@pytest.mark.parametrize("k", [2, 3, 7])
@pytest.mark.parametrize("seed", [0, 2])
def test_macro_scores_match_reference(k, seed):
    rng = np.random.default_rng(seed)
    logits, y, mask = random_case(rng, 200, k, ties=seed == 2)
    got = macro_scores(*class_counts(jnp.asarray(logits), jnp.asarray(y), jnp.asarray(mask)))
    pred = np.argmax(logits, -1)
    p, r, f = ref_macro(pred[mask], y[mask])
    np.testing.assert_allclose([float(got["precision_macro"]), float(got["recall_macro"]),
                                float(got["f1_macro"])], [p, r, f], rtol=1e-5, atol=1e-6)


def test_macro_scores_empty_mask_is_zero():
    got = macro_scores(*class_counts(jnp.zeros((5, 3)), jnp.zeros(5, jnp.int32), jnp.zeros(5, bool)))
    assert all(float(v) == 0.0 for v in got.values())


def test_macro_scores_perfect_prediction_is_one():
    y = np.array([0, 1, 2, 2, 1, 0])
    logits = np.eye(4, dtype=np.float32)[y] * 5
    got = macro_scores(*class_counts(jnp.asarray(logits), jnp.asarray(y), jnp.ones(6, bool)))
    assert all(float(v) == pytest.approx(1.0) for v in got.values())   # class 3 absent: not averaged


@pytest.mark.parametrize("seed", [0, 1])
def test_binary_scores_match_reference(seed):
    rng = np.random.default_rng(seed)
    n = 300
    score = rng.random(n).astype(np.float32)
    if seed % 2:
        score = np.round(score, 1)  # many ties
    pos = rng.random(n) < score * 0.8 + 0.1
    mask = rng.random(n) < 0.7
    auc, ap = binary_scores(jnp.asarray(score), jnp.asarray(pos), jnp.asarray(mask))
    assert float(auc) == pytest.approx(ref_auc(score[mask], pos[mask]), abs=1e-6)
    assert float(ap) == pytest.approx(ref_ap(score[mask], pos[mask]), abs=1e-6)


def test_binary_scores_undefined_without_both_classes():
    score = jnp.asarray([0.1, 0.7, 0.3])
    auc, ap = binary_scores(score, jnp.zeros(3, bool), jnp.ones(3, bool))
    assert np.isnan(float(auc)) and np.isnan(float(ap))
    auc, ap = binary_scores(score, jnp.ones(3, bool), jnp.ones(3, bool))
    assert np.isnan(float(auc)) and float(ap) == pytest.approx(1.0)


@pytest.mark.slow
def test_sklearn_agrees_when_installed():
    skm = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(5)
    logits, y, mask = random_case(rng, 400, 5)
    got = macro_scores(*class_counts(jnp.asarray(logits), jnp.asarray(y), jnp.asarray(mask)))
    pred = np.argmax(logits, -1)[mask]
    assert float(got["f1_macro"]) == pytest.approx(skm.f1_score(y[mask], pred, average="macro"), abs=1e-6)
    assert float(got["precision_macro"]) == pytest.approx(
        skm.precision_score(y[mask], pred, average="macro", zero_division=0), abs=1e-6)
    score = np.round(rng.random(400), 2)
    pos = rng.random(400) < score
    auc, ap = binary_scores(jnp.asarray(score), jnp.asarray(pos), jnp.asarray(mask))
    assert float(auc) == pytest.approx(skm.roc_auc_score(pos[mask], score[mask]), abs=1e-6)
    assert float(ap) == pytest.approx(skm.average_precision_score(pos[mask], score[mask]), abs=1e-6)


class _Batch:
    """The three split masks `client_counts` reads, for one client."""

    def __init__(self, train, val, test):
        self.train_mask, self.val_mask, self.test_mask = train, val, test


def _clients(rng, c: int, n: int, k: int):
    logits = rng.normal(size=(c, n, k)).astype(np.float32)
    y = rng.integers(0, k, (c, n)).astype(np.int32)
    masks = [rng.random((c, n)) < f for f in (0.3, 0.3, 0.3)]
    return logits, y, masks


@pytest.mark.slow
@pytest.mark.parametrize("k", [2, 4])
def test_summarise_class_metrics_pooled_and_client_weighted(k):
    from fgl_jax.federated.metrics import client_counts
    rng = np.random.default_rng(k)
    c, n = 4, 50
    logits, y, masks = _clients(rng, c, n, k)
    client_mask = np.array([True, True, True, False])   # the last client is padding
    weight = np.array([50.0, 20.0, 35.0, 99.0])
    cls = jax.vmap(lambda l, yy, a, b, t: client_counts(l, yy, _Batch(a, b, t)))(
        jnp.asarray(logits), jnp.asarray(y), *map(jnp.asarray, masks))
    pooled = summarise(cls, jnp.asarray(client_mask), "pooled")
    avg = summarise(cls, jnp.asarray(client_mask), "client_nodes", jnp.asarray(weight))
    pred = np.argmax(logits, -1)
    probs = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    for s, m in zip(("train", "val", "test"), masks):
        m = m & client_mask[:, None]
        p, r, f = ref_macro(pred[m], y[m])
        assert float(pooled[f"{s}_f1_macro"]) == pytest.approx(f, abs=1e-5)
        assert float(pooled[f"{s}_precision_macro"]) == pytest.approx(p, abs=1e-5)
        assert float(pooled[f"{s}_recall_macro"]) == pytest.approx(r, abs=1e-5)
        per = np.array([ref_macro(pred[i][m[i]], y[i][m[i]]) for i in range(3)])   # [3, (p, r, f)]
        w = weight[:3] / weight[:3].sum()
        assert float(avg[f"{s}_f1_macro"]) == pytest.approx(float(w @ per[:, 2]), abs=1e-5)
        assert float(avg[f"{s}_precision_macro"]) == pytest.approx(float(w @ per[:, 0]), abs=1e-5)
        assert float(avg[f"{s}_recall_macro"]) == pytest.approx(float(w @ per[:, 1]), abs=1e-5)
        accs = np.array([(pred[i] == y[i])[m[i]].mean() if m[i].any() else 0.0 for i in range(3)])
        assert float(avg[f"{s}_acc"]) == pytest.approx(float(w @ accs), abs=1e-5)
        if k == 2:
            sc, ps = probs[..., 1], y == 1
            assert float(pooled[f"{s}_auc"]) == pytest.approx(ref_auc(sc[m], ps[m]), abs=1e-5)
            assert float(pooled[f"{s}_ap"]) == pytest.approx(ref_ap(sc[m], ps[m]), abs=1e-5)
            aucs = np.array([ref_auc(sc[i][m[i]], ps[i][m[i]]) for i in range(3)])
            assert float(avg[f"{s}_auc"]) == pytest.approx(float(w @ aucs), abs=1e-5)
            aps = np.array([ref_ap(sc[i][m[i]], ps[i][m[i]]) for i in range(3)])
            assert float(avg[f"{s}_ap"]) == pytest.approx(float(w @ aps), abs=1e-5)
        else:
            assert f"{s}_auc" not in pooled


def _counts(correct, total, val_loss_sum):
    """`client_counts`' layout [C, 3, K] from correct/total [C, 3] (train, val, test): the correct
    predictions all in class 0, so tp sums over classes to `correct`."""
    correct, total = np.asarray(correct, np.float32), np.asarray(total, np.float32)
    tp = np.stack([correct, np.zeros_like(correct)], -1)
    return {"tp": jnp.asarray(tp), "pred": jnp.asarray(tp), "true": jnp.asarray(tp), "total": jnp.asarray(total),
            "val_loss_sum": jnp.asarray(val_loss_sum, jnp.float32)}


def test_client_nodes_average_is_node_weighted_mean_of_client_accuracies():
    counts = _counts(correct=[[3, 1, 0], [8, 5, 9], [1, 2, 3]], total=[[4, 2, 5], [10, 5, 10], [0, 4, 3]],
                     val_loss_sum=[1.0, 2.0, 4.0])
    mask = jnp.array([True, True, False])
    nodes = jnp.array([10.0, 30.0, 7.0])
    got = summarise(counts, mask, "client_nodes", nodes)
    assert float(got["test_acc"]) == pytest.approx((10 * 0 / 5 + 30 * 9 / 10) / 40)
    assert float(got["val_acc"]) == pytest.approx((10 * 1 / 2 + 30 * 5 / 5) / 40)
    assert float(got["val_loss"]) == pytest.approx((10 * 1 / 2 + 30 * 2 / 5) / 40)
    # pooled: sum then divide, a different number here
    assert float(pool(counts, mask)["test_acc"]) == pytest.approx(9 / 15)


@pytest.mark.parametrize("k", [2, 5])
def test_client_counts_match_numpy_per_split(k):
    """Every count of `client_counts` (one product for all splits) against split-by-split NumPy sums."""
    from fgl_jax.federated.metrics import client_counts
    rng = np.random.default_rng(10 + k)
    logits, y, masks = _clients(rng, 1, 80, k)
    logits, y, masks = logits[0], y[0], [m[0] for m in masks]
    got = jax.jit(lambda l, yy, a, b, t: client_counts(l, yy, _Batch(a, b, t)))(logits, y, *masks)
    pred = np.argmax(logits, -1)
    ce = -np.log(np.exp(logits[np.arange(80), y]) / np.exp(logits).sum(-1))
    for i, m in enumerate(masks):
        for c in range(k):
            assert float(got["tp"][i, c]) == np.sum(m & (pred == c) & (y == c))
            assert float(got["pred"][i, c]) == np.sum(m & (pred == c))
            assert float(got["true"][i, c]) == np.sum(m & (y == c))
        assert float(got["total"][i]) == m.sum()
    assert float(got["val_loss_sum"]) == pytest.approx(float(ce[masks[1]].sum()), rel=1e-5)
    assert ("score" in got) == (k == 2)


def test_pool_is_sum_of_correct_over_sum_of_nodes_per_split():
    from fgl_jax.federated.metrics import client_counts
    rng = np.random.default_rng(3)
    logits, y, masks = _clients(rng, 3, 40, 4)
    client_mask = np.array([True, False, True])
    counts = jax.vmap(lambda l, yy, a, b, t: client_counts(l, yy, _Batch(a, b, t)))(logits, y, *masks)
    got = pool(counts, jnp.asarray(client_mask))
    right = np.argmax(logits, -1) == y
    for s, m in zip(("train", "val", "test"), masks):
        m = m & client_mask[:, None]
        assert float(got[f"{s}_acc"]) == pytest.approx(right[m].mean(), abs=1e-6)
