"""The checks every user graph passes (`fgl_jax.data.checks.build_graph`): each bad input of issue 27
item 4 gets its clear error or its notice, and the repaired graph is what the input arrays say."""
import warnings

import numpy as np
import pytest

from fgl_jax.data import DataFormatError, DataNotice, build_graph, stratified_split


def quiet_build(*a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataNotice)
        return build_graph(*a, **k)


X4 = np.eye(4, dtype=np.float32)
PATH = [0, 1, 2], [1, 2, 3]            # 0-1-2-3, one direction only
BOTH = [0, 1, 1, 2, 2, 3], [1, 0, 2, 1, 3, 2]


def edges(g):
    return sorted(zip(g.senders.tolist(), g.receivers.tolist()))


def test_directed_input_symmetrised_with_notice_or_refused():
    with pytest.warns(DataNotice, match=r"directed: 3 of 3 edges have no reverse edge, e.g. 0 -> 1; added"):
        g = build_graph(*PATH, X4, [0, 1, 0, 1])
    assert edges(g) == sorted(zip(*BOTH))
    with pytest.raises(DataFormatError, match=r"directed: 3 of 3 edges .* \(on_directed='error'"):
        build_graph(*PATH, X4, [0, 1, 0, 1], on_directed="error")
    # an undirected input passes on_directed="error" untouched, with no directed notice
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        g2 = build_graph(*BOTH, X4, [0, 1, 0, 1], on_directed="error")
    assert edges(g2) == sorted(zip(*BOTH))
    assert not any("directed" in str(w.message) for w in rec)


def test_self_loops_and_duplicates_removed_and_counted():
    s = BOTH[0] + [2, 2, 0, 0]
    r = BOTH[1] + [2, 2, 1, 1]           # two self-loops on 2, two duplicate 0 -> 1
    with pytest.warns(DataNotice) as rec:
        g = build_graph(s, r, X4, [0, 1, 0, 1])
    msgs = " | ".join(str(w.message) for w in rec)
    assert "2 self-loop(s) removed (e.g. node 2)" in msgs and "2 duplicate edge(s) merged" in msgs
    assert edges(g) == sorted(zip(*BOTH))
    g2 = quiet_build(s, r, X4, [0, 1, 0, 1], keep_self_loops=True)
    assert edges(g2) == sorted(list(zip(*BOTH)) + [(2, 2)])


def test_edge_endpoint_outside_nodes_refused():
    with pytest.raises(DataFormatError, match=r"edge 1 \(1 -> 4\) names node 4, outside \[0, 4\)"):
        build_graph([0, 1], [1, 4], X4)
    with pytest.raises(DataFormatError, match="non-integer node id"):
        build_graph([0, 1.5], [1, 2], X4)


@pytest.mark.parametrize("y,k,pattern", [
    ([1, 2, 3, 4], 4, r"field y has 1 label\(s\) outside \[0, 4\), e.g. node 3 has label 4"),
    ([0, 7, 9, 1], 7, r"field y has 2 label\(s\) outside \[0, 7\), e.g. node 1 has label 7"),
    ([0, 0.5, 1, 1], None, r"field y has 1 non-integer label\(s\), e.g. node 1 has label 0.5"),
    ([0, -2, 1, 1], None, r"negative label\(s\) other than -1"),
    (np.array(["a", 1, "a", 2], dtype=object), None, r"mixes class names and other values \(node 0: 'a', node 1: 1\)"),
    (np.array([b"x", True, False, True], dtype=object), None, r"mixes class names"),
    ([0, 1, 1], None, r"field y has shape \(3,\), expected \(4,\)"),
])
def test_bad_labels_refused_with_count_and_example(y, k, pattern):
    # class names (strings) are labels since issue 50 (test_class_names_are_labels); mixing them with
    # numbers is refused
    with pytest.raises(DataFormatError, match=pattern):
        quiet_build(*BOTH, X4, np.asarray(y), num_classes=k, source="mine.npz")


def test_label_forms_accepted():
    g = quiet_build(*BOTH, X4, np.array([0.0, 1.0, np.nan, 1.0]))
    np.testing.assert_array_equal(g.y, [0, 1, -1, 1])
    assert g.num_classes == 2
    with pytest.warns(DataNotice, match=r"1 of 3 classes have no labelled node, e.g. class 0 \(labels look 1-based"):
        g = build_graph(*BOTH, X4, [1, 2, 1, 2])
    assert g.num_classes == 3
    with pytest.warns(DataNotice, match="no labels"):
        g = build_graph(*BOTH, X4)
    assert (g.y == -1).all() and g.num_classes == 1 and not g.train_mask.any()
    assert quiet_build(*BOTH, X4, num_classes=5).num_classes == 5


def test_masks_overlap_and_unlabelled_refused():
    tr = np.array([1, 1, 0, 0], bool)
    va = np.array([0, 1, 1, 0], bool)
    with pytest.raises(DataFormatError, match=r"train_mask and val_mask overlap in 1 node\(s\), e.g. node 1"):
        quiet_build(*BOTH, X4, [0, 1, 0, 1], train_mask=tr, val_mask=va)
    with pytest.raises(DataFormatError, match=r"train_mask holds 1 unlabelled node\(s\) \(y = -1\), e.g. node 0"):
        quiet_build(*BOTH, X4, [-1, 1, 0, 1], train_mask=tr)
    # index arrays are masks too
    g = quiet_build(*BOTH, X4, [0, 1, 0, 1], train_mask=[0, 1], val_mask=[2], test_mask=[3])
    np.testing.assert_array_equal(g.train_mask, tr)
    assert g.meta["split"] == {"kind": "given"}


def test_isolated_nodes_and_classes_without_training_nodes_reported():
    x = np.eye(6, dtype=np.float32)
    y = [0, 1, 2, 0, 1, 2]
    with pytest.warns(DataNotice) as rec:
        build_graph(*BOTH, x, y, train_mask=[0, 1], test_mask=[2, 3, 4, 5])
    msgs = " | ".join(str(w.message) for w in rec)
    assert "2 isolated node(s) (no edge), e.g. node 4" in msgs
    assert "1 class(es) have labelled nodes but no training node, e.g. class 2" in msgs
    assert "no val_mask" in msgs


def test_notices_are_recorded_in_meta_and_can_be_errors():
    g = quiet_build(*PATH, X4, [0, 1, 0, 1], name="toy")
    assert any("directed" in n for n in g.meta["notices"])
    assert g.meta["split"]["kind"] == "stratified"
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataNotice)
        with pytest.raises(DataNotice):
            build_graph(*PATH, X4, [0, 1, 0, 1])


def test_stratified_split_counts_and_seed():
    y = np.repeat(np.arange(4), [10, 5, 1, 0] + [0] * 0)
    y = np.concatenate([y, [-1, -1]])
    tr, va, te = stratified_split(y, 4, 0.6, 0.2, 0.2, seed=3)
    # per class: round(.6 n) train (>= 1), round(.2 n) val, the rest test; unlabelled nowhere
    for c, (a, b, t) in zip(range(3), [(6, 2, 2), (3, 1, 1), (1, 0, 0)]):
        assert ((y == c) & tr).sum() == a and ((y == c) & va).sum() == b and ((y == c) & te).sum() == t
    assert not (tr | va | te)[y < 0].any()
    assert not ((tr & va) | (tr & te) | (va & te)).any()
    tr2, _, _ = stratified_split(y, 4, 0.6, 0.2, 0.2, seed=3)
    assert (tr == tr2).all()
    with pytest.raises(ValueError, match="train \\+ val \\+ test <= 1"):
        stratified_split(y, 4, 0.6, 0.3, 0.3)


def test_class_names_are_labels():
    """Issue 50 item 3: class names (strings) are accepted by build_graph (so by every converter and
    file), numbered in sorted name order; "" marks an unlabelled node."""
    g = quiet_build(*BOTH, X4, np.asarray(["cat", "dog", "", "cat"]), source="mine")
    assert g.y.tolist() == [0, 1, -1, 0] and g.meta["class_names"] == ["cat", "dog"] and g.num_classes == 2
