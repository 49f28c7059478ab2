"""random_split and per_class_split: sizes, disjointness, determinism, unlabelled nodes, bad input."""
import numpy as np
import pytest

from fgl_jax.data import load_planetoid, per_class_split, random_split
from fgl_jax.graph import Graph


def _graph(y, num_classes=None):
    y = np.asarray(y, np.int32)
    n = len(y)
    z = np.zeros(n, bool)
    return Graph(name="toy", senders=np.zeros(0, np.int32), receivers=np.zeros(0, np.int32),
                 x=np.zeros((n, 1), np.float32), y=y, num_classes=num_classes or int(y.max()) + 1,
                 train_mask=z, val_mask=z, test_mask=z)


def _sizes(g):
    return int(g.train_mask.sum()), int(g.val_mask.sum()), int(g.test_mask.sum())


def _disjoint(g):
    return not ((g.train_mask & g.val_mask).any() or (g.train_mask & g.test_mask).any()
                or (g.val_mask & g.test_mask).any())


def test_random_split_sizes_by_hand():
    g = _graph(np.arange(10) % 3)
    s = random_split(g)
    assert _sizes(s) == (6, 2, 2) and _disjoint(s)
    assert (s.train_mask | s.val_mask | s.test_mask).all()
    # 0.5 / 0.1 / 0.1 of 10 -> 5 / 1 / 1, three nodes in no mask
    assert _sizes(random_split(g, 0.5, 0.1, 0.1)) == (5, 1, 1)
    # rounding: 0.6*7 = 4.2 -> 4, 0.2*7 = 1.4 -> 1, test = rest = 2 (fractions sum to 1)
    assert _sizes(random_split(_graph(np.arange(7) % 2))) == (4, 1, 2)
    assert s.y is g.y and s.senders is g.senders  # only the masks change


def test_random_split_deterministic_and_seed_dependent():
    g = _graph(np.arange(200) % 4)
    a, b, c = random_split(g, seed=3), random_split(g, seed=3), random_split(g, seed=4)
    assert np.array_equal(a.train_mask, b.train_mask) and np.array_equal(a.test_mask, b.test_mask)
    assert not np.array_equal(a.train_mask, c.train_mask)


def test_random_split_unlabelled_never_masked():
    y = np.array([0, 1, -1, 0, 1, -1, 0, 1, 0, 1, -1, 0])
    g = _graph(y, num_classes=2)
    s = random_split(g)
    assert _sizes(s) == (5, 2, 2)  # 9 labelled nodes: round(5.4)=5, round(1.8)=2, rest 2
    for seed in range(20):
        s = random_split(g, seed=seed, labelled_only=False)
        for m in (s.train_mask, s.val_mask, s.test_mask):
            assert not m[y < 0].any()
        assert sum(_sizes(s)) == 9  # all 12 nodes drawn, the 3 unlabelled ones dropped


@pytest.mark.parametrize("kwargs,match", [
    (dict(train=-0.1), "train fraction must lie in"),
    (dict(train=0.0), "train fraction must be positive"),
    (dict(val=1.5), "val fraction must lie in"),
    (dict(test=float("nan")), "test fraction must be a finite number"),
    (dict(train=0.7, val=0.2, test=0.2), "sum to at most 1"),
    (dict(train="0.5"), "train fraction must be a finite number"),
    (dict(seed=-1), "seed must be non-negative"),
])
def test_random_split_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        random_split(_graph(np.arange(10) % 2), **kwargs)


def test_random_split_too_small_for_any_training_node():
    with pytest.raises(ValueError, match="gives no training node"):
        random_split(_graph([0, 1, 0]), train=0.1, val=0.1, test=0.1)


def test_per_class_split_by_hand():
    # class sizes 5 / 2 / 3, one unlabelled node; cap 3 -> train 3 + 2 + 3 = 8 (class 1 entirely)
    y = np.array([0, 0, 0, 0, 0, 1, 1, 2, 2, 2, -1])
    s = per_class_split(_graph(y, 3), num_train_per_class=3, num_val=1)
    assert np.bincount(y[s.train_mask], minlength=3).tolist() == [3, 2, 3]
    assert _sizes(s) == (8, 1, 1) and _disjoint(s)
    assert set(y[s.val_mask | s.test_mask]) == {0}  # only class 0 has nodes left over
    assert not (s.train_mask[10] or s.val_mask[10] or s.test_mask[10])
    # num_test caps the test set; num_val larger than what is left just takes everything (PyG)
    assert _sizes(per_class_split(_graph(y, 3), 2, 1, num_test=1)) == (6, 1, 1)
    assert _sizes(per_class_split(_graph(y, 3), 1, 100)) == (3, 7, 0)


def test_per_class_split_deterministic():
    g = _graph(np.arange(300) % 5)
    a, b = per_class_split(g, 20, 50, seed=7), per_class_split(g, 20, 50, seed=7)
    c = per_class_split(g, 20, 50, seed=8)
    assert all(np.array_equal(getattr(a, m), getattr(b, m)) for m in ("train_mask", "val_mask", "test_mask"))
    assert not np.array_equal(a.train_mask, c.train_mask)


@pytest.mark.parametrize("args,match", [
    ((0, 10), "num_train_per_class must be positive"),
    ((-3, 10), "num_train_per_class must be positive"),
    ((5, -1), "num_val must be non-negative"),
    ((5, 1.5), "num_val must be an integer"),
    ((5, 10, -2), "num_test must be non-negative"),
])
def test_per_class_split_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        per_class_split(_graph(np.arange(30) % 3), *args)


@pytest.mark.data
def test_federatedscope_random_split_on_cora(data_dir):
    """HiFGL spec §4: cap 232 per class, 542 val; Cora classes of 217 and 180 go entirely to train."""
    g = per_class_split(load_planetoid("cora", data_dir), 232, 542, seed=0)
    assert g.train_mask.sum() == 5 * 232 + 217 + 180 == 1557  # 57.5% as the spec says
    assert g.val_mask.sum() == 542 and g.test_mask.sum() == 2708 - 1557 - 542
    small = np.isin(g.y, [1, 6])  # the classes of 217 and 180 nodes
    assert g.train_mask[small].all() and not (g.val_mask | g.test_mask)[small].any()
    assert _disjoint(g)


@pytest.mark.data
def test_federatedscope_random_split_on_citeseer(data_dir):
    g = per_class_split(load_planetoid("citeseer", data_dir), 332, 665, seed=0)
    # class 0 has 249 labelled nodes (< 332, all to train); the 15 unlabelled nodes are in no mask
    assert g.train_mask.sum() == 249 + 5 * 332
    assert g.val_mask.sum() == 665 and g.test_mask.sum() == 3312 - 1909 - 665
    assert not (g.train_mask | g.val_mask | g.test_mask)[g.y < 0].any()
