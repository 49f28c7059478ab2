"""HeteroGraph container, N-Triples parser, RDF/MAGNN/ACM loaders and RE/RET splits."""
import gzip

import numpy as np
import pytest

from fgl_jax.data.hetero import (HeteroGraph, _AifbRules, _build_rdf, load_acm3025, load_aifb, load_dblp,
                                 load_imdb, load_mutag, parse_ntriples)
from fgl_jax.data.paths import DataFormatError
from fgl_jax.partition.hetero import group_assignment, random_edge_split, random_edge_type_split
from tests.fedhgn_toy import toy_hetero


# ----------------------------------------------------------------------------------- parser
def test_ntriples_terms_and_escapes():
    lines = [
        "# a comment", "",
        '<http://x/s> <http://x/p> <http://x/o> .',
        '_:b1 <http://x/p> "a \\"q\\" \\u00e9\\n"@en .',
        '<http://x/s> <http://x/p> "3.5"^^<http://www.w3.org/2001/XMLSchema#double> . # trailing',
    ]
    out = list(parse_ntriples(lines))
    assert out[0] == (("uri", "http://x/s"), ("uri", "http://x/p"), ("uri", "http://x/o"))
    assert out[1][0] == ("bnode", "b1")
    assert out[1][2] == ("literal", 'a "q" \u00e9\n', "en", None)
    assert out[2][2] == ("literal", "3.5", None, "http://www.w3.org/2001/XMLSchema#double")


@pytest.mark.parametrize("bad", ['<http://x/s> <http://x/p> <http://x/o>',          # no dot
                                 '<http://x/s> "lit" <http://x/o> .',               # literal predicate
                                 '<http://x/s> <http://x/p> "unterminated .'])
def test_ntriples_malformed_line_names_file_and_line(bad):
    with pytest.raises(DataFormatError, match=r"f\.nt, line 2"):
        list(parse_ntriples(["<http://x/a> <http://x/b> <http://x/c> .", bad], "f.nt"))


def _mini_aifb(tmp_path, label_entity):
    base = "http://www.aifb.uni-karlsruhe.de/"
    folder = tmp_path / "rdf" / "aifb"
    folder.mkdir(parents=True)
    triples = [
        f"<{base}Personen/viewPersonOWL/id1instance> <http://swrc.ontoware.org/ontology#author> "
        f"<{base}Publikationen/viewPublikationOWL/id9instance> .",
        f"<{base}Personen/viewPersonOWL/id2instance> <http://swrc.ontoware.org/ontology#author> "
        f"<{base}Publikationen/viewPublikationOWL/id9instance> .",
        f"<{base}Personen/viewPersonOWL/id1instance> <http://swrc.ontoware.org/ontology#affiliation> "
        f"<{base}Forschungsgruppen/viewForschungsgruppeOWL/id1instance> .",   # dropped (label leak)
        f"_:b0 <http://swrc.ontoware.org/ontology#author> <{base}Personen/viewPersonOWL/id1instance> .",  # dropped
        f'<{base}Personen/viewPersonOWL/id2instance> <http://swrc.ontoware.org/ontology#name> "Bob" .',
    ]
    with gzip.open(folder / "aifb_stripped.nt.gz", "wt") as fh:
        fh.write("\n".join(triples) + "\n")
    head = "person\tid\tlabel_affiliation\n"
    (folder / "trainingSet.tsv").write_text(head + f"{base}Personen/viewPersonOWL/id1instance\t1\tg1\n")
    (folder / "testSet.tsv").write_text(head + f"{label_entity}\t2\tg2\n")
    return tmp_path


def test_rdf_filtering_on_a_tiny_file(tmp_path):
    base = "http://www.aifb.uni-karlsruhe.de/"
    root = _mini_aifb(tmp_path, f"{base}Personen/viewPersonOWL/id2instance")
    g = _build_rdf("aifb", root, _AifbRules(), reverse=False, val_fraction=0.0, split_seed=0)
    assert set(g.node_types) == {"Personen", "Publikationen", "_Literal"}
    assert g.num_edges == 3 and g.relations == ("ontology#author", "ontology#name")
    assert g.stats()["train"] == 1 and g.stats()["test"] == 1 and g.num_classes == 2
    assert g.add_reverse().num_edges == 6


def test_label_naming_unknown_entity_is_a_clear_error(tmp_path):
    root = _mini_aifb(tmp_path, "http://www.aifb.uni-karlsruhe.de/Personen/viewPersonOWL/id777instance")
    with pytest.raises(DataFormatError, match="id777instance"):
        _build_rdf("aifb", root, _AifbRules(), reverse=False, val_fraction=0.0, split_seed=0)


def test_container_validates():
    g = toy_hetero()
    with pytest.raises(ValueError, match="target node type"):
        HeteroGraph("x", g.node_types, g.num_nodes, g.canonical_etypes, g.edges, "zzz", g.y, 3,
                    g.train_mask, g.val_mask, g.test_mask)
    bad = list(g.edges)
    bad[0] = (bad[0][0] + 100, bad[0][1])
    with pytest.raises(ValueError, match="out of range"):
        HeteroGraph("x", g.node_types, g.num_nodes, g.canonical_etypes, tuple(bad), "a", g.y, 3,
                    g.train_mask, g.val_mask, g.test_mask)


# ----------------------------------------------------------------------------------- real data
@pytest.mark.slow
def test_aifb_mutag_match_dgl_statistics(data_dir):
    a = load_aifb(data_dir).stats()
    assert (a["nodes"], a["edges"], a["ntypes"], a["etypes"], a["classes"]) == (7262, 48810, 7, 104, 4)
    assert (a["train"], a["val"], a["test"]) == (112, 28, 36)
    m = load_mutag(data_dir).stats()
    assert (m["nodes"], m["edges"], m["ntypes"], m["etypes"], m["classes"]) == (27163, 148100, 5, 50, 2)
    assert (m["train"], m["val"], m["test"]) == (218, 54, 68)
    assert load_aifb(data_dir, reverse=False).num_edges == 48810 // 2


def test_magnn_and_acm_statistics(data_dir):
    d = load_dblp(data_dir)
    assert d.num_nodes == (4057, 14328, 7723, 20) and d.num_edges == 239566 and d.num_classes == 4
    sizes = {c[1]: s.size for c, (s, _) in zip(d.canonical_etypes, d.edges)}
    assert sizes["author-paper"] == 19645 and sizes["paper-term"] == 85810 and sizes["paper-venue"] == 14328
    i = load_imdb(data_dir)
    assert i.num_nodes == (4278, 2081, 5257) and i.num_edges == 34212
    assert (i.stats()["train"], i.stats()["val"], i.stats()["test"]) == (400, 400, 3478)
    acm = load_acm3025(data_dir)
    assert acm.num_nodes == (3025,) and acm.features["paper"].shape == (3025, 1870)
    sizes = {c[1]: s.size for c, (s, _) in zip(acm.canonical_etypes, acm.edges)}
    assert sizes == {"PAP": 26256, "PLP": 2207736, "PMP": 2218674, "PTP": 9147568}


def test_aifb_re_k3_matches_table5_edge_counts(data_dir):
    g = load_aifb(data_dir, reverse=False)
    sp = random_edge_split(g, 3)
    assert np.mean([c.num_edges for c in sp.clients]) == pytest.approx(26032.0)   # Table 5
    assert np.mean([len(c.node_types) for c in sp.clients]) == 7.0


# ----------------------------------------------------------------------------------- splits
@pytest.mark.parametrize("K", [3, 5, 10])
def test_group_assignment_sharing_pattern(K):
    n = 1000
    own = group_assignment(n, K, np.random.default_rng(0))
    cnt = own.sum(1)
    seg = n // (K + 2)
    assert own.any(1).all()                       # union = every item
    assert (cnt == 1).sum() == K * seg            # exclusive groups
    assert ((cnt >= 2) & (cnt <= K - 1)).sum() == seg   # partial group: p in 2..K-1 clients
    assert (cnt == K).sum() == n - (K + 1) * seg          # shared tail incl. remainder


def test_re_split_covers_every_edge_and_adds_reverse():
    g = toy_hetero(1, n=(30, 20, 15), edges_per_type=40)
    sp = random_edge_split(g, 3, seed=7)
    global_edges = set()
    for c, (s, d) in zip(g.canonical_etypes, g.edges):
        global_edges |= {(c, int(a), int(b)) for a, b in zip(s, d)}
    seen = set()
    for cl, col in zip(sp.clients, sp.owners.T):
        fwd = [(c, e) for c, e in zip(cl.canonical_etypes, cl.edges) if not c[1].startswith("rev_")]
        assert cl.num_edges == 2 * sum(s.size for _, (s, _) in fwd)          # reverse edges doubled
        for c, (s, d) in fwd:
            ids_s, ids_d = cl.node_ids[c[0]], cl.node_ids[c[2]]
            seen |= {(c, int(ids_s[a]), int(ids_d[b])) for a, b in zip(s, d)}
        assert sum(s.size for _, (s, _) in fwd) == col.sum()
    assert seen == global_edges


def test_ret_split_schemas_and_errors():
    g = toy_hetero(2)
    sp = random_edge_type_split(g, 3, seed=1)
    union = set()
    for cl, col in zip(sp.clients, sp.owners.T):
        mine = {c for c in cl.canonical_etypes if not c[1].startswith("rev_")}
        assert mine == {g.canonical_etypes[i] for i in np.flatnonzero(col)}
        union |= mine
    assert union == set(g.canonical_etypes)
    sp5 = random_edge_type_split(g, 5)          # 6 types == K+1: client i gets [type i, last]
    assert all(col.sum() == 2 for col in sp5.owners.T)
    with pytest.raises(ValueError, match="num_clients=6 needs at least K\\+1 = 7"):
        random_edge_type_split(g, 6)
    with pytest.raises(ValueError, match="without reverse edges"):
        random_edge_split(g.add_reverse(), 3)


# ----------------------------------------------------------------------------------- official .bin splits
def test_official_bin_reader_rejects_other_files(tmp_path):
    from fgl_jax.data.hetero_dglbin import load_official_split
    f = tmp_path / "x.bin"
    f.write_bytes(b"\x00" * 64)
    with pytest.raises(ValueError, match="x.bin: not a DGL save_graphs file"):
        load_official_split(f)


def test_official_aifb_re3_split_matches_table5():
    """The authors' AIFB RE K=3 file (FEDHGN_OFFICIAL_BIN_DIR = the FedHGN repo's data/aifb-hetero)."""
    import os
    from pathlib import Path
    from fgl_jax.data.hetero_dglbin import load_official_split
    d = os.environ.get("FEDHGN_OFFICIAL_BIN_DIR")
    f = Path(d or "/nonexistent") / "aifb-hetero_random-edges_3.bin"
    if not f.exists():
        pytest.skip("official FedHGN split files not available (set FEDHGN_OFFICIAL_BIN_DIR)")
    gs = load_official_split(f)
    assert len(gs) == 3 and all(g.target == "Personen" and g.num_classes == 4 for g in gs)
    assert np.mean([sum(s.size for s, _ in g.edges) for g in gs]) == pytest.approx(26032.0)   # Table 5
    assert np.mean([g.train_mask.sum() for g in gs]) == pytest.approx(110.67, abs=0.01)
    assert np.mean([g.val_mask.sum() for g in gs]) == pytest.approx(27.67, abs=0.01)
    assert all(len(g.canonical_etypes) == 104 for g in gs)


def test_official_bin_reader_truncated_record(tmp_path):
    """An NDArray record whose declared payload runs past the end of the file: a ValueError naming
    the file, not a struct.error or a short silent array."""
    import struct
    from fgl_jax.data.hetero_dglbin import load_official_split, _GRAPH_MAGIC, _NDARRAY_MAGIC
    rec = _NDARRAY_MAGIC + b"\x00" * 16 + struct.pack("<IBBH", 1, 0, 64, 1) + struct.pack("<qq", 100, 800)
    f = tmp_path / "trunc.bin"
    f.write_bytes(_GRAPH_MAGIC + b"\x00" * 8 + rec + b"\x01" * 40)
    with pytest.raises(ValueError, match="trunc.bin: truncated"):
        load_official_split(f)
    f.write_bytes(_GRAPH_MAGIC + b"\x00" * 8 + rec[:30])
    with pytest.raises(ValueError, match="trunc.bin: truncated"):
        load_official_split(f)


def test_official_bin_reader_truncated_real_file(tmp_path):
    """Cut the authors' file at many points: every cut gives a ValueError naming the file."""
    import os
    from pathlib import Path
    from fgl_jax.data.hetero_dglbin import load_official_split
    src = Path(os.environ.get("FEDHGN_OFFICIAL_BIN_DIR") or "/nonexistent") / "aifb-hetero_random-edges_3.bin"
    if not src.exists():
        pytest.skip("official FedHGN split files not available (set FEDHGN_OFFICIAL_BIN_DIR)")
    buf = src.read_bytes()
    f = tmp_path / "cut.bin"
    for frac in (0.001, 0.01, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99, 0.9999):
        f.write_bytes(buf[:int(len(buf) * frac)])
        with pytest.raises(ValueError, match="cut.bin"):
            load_official_split(f)


def test_official_bin_reader_reverse_types_without_edge_data(tmp_path):
    """tests/data/dglbin_rev_noedata.bin, written by DGL 2.1 (benchmarks/peers/fedhgn_official/toy_bin.py):
    reverse edge types without edge tensors between ones with them (dgl.AddReverse(copy_edata=False), as
    in the authors' MUTAG split files), which the reader once took for a graph boundary. Every edge,
    label and mask must equal the generator's rule, rebuilt here."""
    from pathlib import Path
    from fgl_jax.data.hetero_dglbin import load_official_split
    f = Path(__file__).parent / "data" / "dglbin_rev_noedata.bin"
    gs = load_official_split(f)
    rels = [f"a{i}" for i in range(7)] + [f"z{i}" for i in range(7)]
    assert len(gs) == 2
    for gi, g in enumerate(gs):
        assert g.target == "user" and g.num_classes == 3
        assert dict(zip(g.node_types, g.num_nodes)) == {"user": 5, "item": 6}
        want = {}
        for j, r in enumerate(rels):
            src, dst = np.arange(5), (np.arange(5) * (j + 1) + gi) % 6
            want[("user", r, "item")] = (src, dst)
            want[("item", f"rev_{r}", "user")] = (dst, src)
        got = dict(zip(g.canonical_etypes, g.edges))
        assert set(got) == set(want)
        for c, (s, d) in want.items():
            np.testing.assert_array_equal(got[c][0], s)
            np.testing.assert_array_equal(got[c][1], d)
        np.testing.assert_array_equal(g.y, np.array([0, 1, 0, 1, 0]) + gi)
        np.testing.assert_array_equal(g.train_mask, [1, 1, 0, 0, 0])
        np.testing.assert_array_equal(g.val_mask, [0, 0, 1, 0, 0])
        np.testing.assert_array_equal(g.test_mask, [0, 0, 0, 1, 1])
    # a header whose graph count disagrees with the graph records: one line naming the file
    import struct
    buf = bytearray(f.read_bytes())
    struct.pack_into("<Q", buf, 24, 3)
    bad = tmp_path / "count.bin"
    bad.write_bytes(bytes(buf))
    with pytest.raises(ValueError, match="count.bin: header declares 3 graphs, found 2 graph records"):
        load_official_split(bad)
