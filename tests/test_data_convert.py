"""Converters (`fgl_jax.data.convert`): each input built with the real library, the Graph compared with
the arrays the input was built from (undirected, no self-loops, as documented)."""
import warnings

import jraph
import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from fgl_jax.data import DataFormatError, DataNotice
from fgl_jax.data.convert import from_dgl, from_edge_index, from_jraph, from_networkx, from_pyg, from_scipy

N, F = 12, 5
RNG = np.random.default_rng(7)
S = RNG.integers(0, N, 30)
R = RNG.integers(0, N, 30)
X = RNG.random((N, F)).astype(np.float32)
Y = np.arange(N) % 3
PAIRS = {(min(a, b), max(a, b)) for a, b in zip(S.tolist(), R.tolist()) if a != b}
WANT = PAIRS | {(b, a) for a, b in PAIRS}


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataNotice)
        yield


def check(g, x=X, y=Y, want=WANT):
    assert {(int(a), int(b)) for a, b in zip(g.senders, g.receivers)} == want and g.num_edges == len(want)
    np.testing.assert_array_equal(g.dense_x(), np.asarray(x, np.float32))
    np.testing.assert_array_equal(g.y, y)


def test_from_edge_index():
    g = from_edge_index(np.stack([S, R]), X, Y, name="mine")
    check(g)
    assert g.name == "mine" and g.num_classes == 3 and g.meta["split"]["kind"] == "stratified"
    with pytest.raises(DataFormatError, match=r"edge_index has shape \(3, 30\)"):
        from_edge_index(np.stack([S, R, R]), X)
    with pytest.raises(DataFormatError, match="mine: field y has 1 label"):
        from_edge_index(np.stack([S, R]), X, np.where(np.arange(N) == 4, 3, Y), num_classes=3, name="mine")


def test_from_scipy_sparse_and_dense():
    adj = sp.coo_matrix((np.ones(len(S)), (S, R)), shape=(N, N)).tocsr()
    check(from_scipy(adj, X, Y))
    check(from_scipy(adj.toarray(), sp.csr_matrix(X), Y))
    tr = np.arange(N) < 6
    g = from_scipy(adj, X, Y, train_mask=tr, test_mask=~tr)
    np.testing.assert_array_equal(g.train_mask, tr)
    g0 = from_scipy(adj, X)  # unlabelled
    assert (g0.y == -1).all()
    with pytest.raises(DataFormatError, match="x has 11 rows but the adjacency has 12"):
        from_scipy(adj, X[:-1])


def test_from_networkx_attributes_arrays_identity_and_digraph():
    G = nx.Graph()
    names = [f"n{i}" for i in range(N)]  # non-integer keys: order is G.nodes order
    for i, v in enumerate(names):
        G.add_node(v, feat=X[i], label=int(Y[i]), train_mask=bool(i < 6))
    G.add_edges_from((names[a], names[b]) for a, b in zip(S, R))
    g = from_networkx(G, x="feat", y="label")
    check(g)
    assert g.meta["nodes"] == names
    np.testing.assert_array_equal(g.train_mask, np.arange(N) < 6)
    g2 = from_networkx(G, x=X, y=None, masks=())  # unlabelled: its masks would be refused
    check(g2, y=np.full(N, -1))
    g3 = from_networkx(G, x="identity", y=Y)
    check(g3, x=np.eye(N))
    D = nx.DiGraph()
    D.add_nodes_from(range(N))
    D.add_edges_from(zip(S.tolist(), R.tolist()))
    with pytest.warns(DataNotice, match="directed"):
        warnings.simplefilter("always", DataNotice)
        check(from_networkx(D, x=X, y=Y))
    with pytest.raises(DataFormatError, match="no node has the feature attribute 'x'"):
        from_networkx(D)
    G.nodes["n3"].pop("feat")
    with pytest.raises(DataFormatError, match="node 'n3' has no attribute 'feat'"):
        from_networkx(G, x="feat")


def test_from_networkx_karate_docstring_numbers():
    G = nx.karate_club_graph()
    g = from_networkx(G, x="identity", y=[int(G.nodes[v]["club"] == "Officer") for v in G])
    assert (g.num_nodes, g.num_edges) == (34, 2 * G.number_of_edges()) == (34, 156)


def test_from_jraph_arrays_and_dict_nodes():
    gt = jraph.GraphsTuple(nodes=X, edges=None, senders=S, receivers=R, n_node=np.array([N]),
                           n_edge=np.array([len(S)]), globals=None)
    check(from_jraph(gt, y=Y))
    tr = np.arange(N) < 4
    gt2 = gt._replace(nodes={"x": X, "y": Y, "train_mask": tr})
    g = from_jraph(gt2)
    check(g)
    np.testing.assert_array_equal(g.train_mask, tr)
    # two graphs batched: one disjoint graph with global ids
    both = jraph.batch([gt, gt])
    g2 = from_jraph(both, y=np.concatenate([Y, Y]))
    assert g2.num_nodes == 2 * N and g2.num_edges == 2 * len(WANT)
    with pytest.raises(DataFormatError, match="no node features"):
        from_jraph(gt._replace(nodes=None))
    with pytest.raises(TypeError, match="jraph.GraphsTuple"):
        from_jraph(np.zeros(3))


def test_from_pyg():
    torch = pytest.importorskip("torch")
    tg = pytest.importorskip("torch_geometric")
    masks = np.stack([np.arange(N) < 6, np.arange(N) >= 9], 1)  # two splits as columns
    data = tg.data.Data(x=torch.tensor(X), edge_index=torch.tensor(np.stack([S, R])),
                        y=torch.tensor(Y)[:, None], train_mask=torch.tensor(masks))
    g = from_pyg(data)
    check(g)
    np.testing.assert_array_equal(g.train_mask, masks[:, 0])
    np.testing.assert_array_equal(from_pyg(data, split=1).train_mask, masks[:, 1])
    with pytest.raises(TypeError, match="torch_geometric"):
        from_pyg(tg.data.Data(edge_index=torch.tensor(np.stack([S, R]))))


def test_from_dgl():
    torch = pytest.importorskip("torch")
    dgl = pytest.importorskip("dgl")
    g = dgl.graph((torch.tensor(S), torch.tensor(R)), num_nodes=N)
    g.ndata["feat"] = torch.tensor(X)
    g.ndata["label"] = torch.tensor(Y)
    g.ndata["train_mask"] = torch.tensor(np.arange(N) < 6)
    out = from_dgl(g)
    check(out)
    np.testing.assert_array_equal(out.train_mask, np.arange(N) < 6)
    with pytest.raises(DataFormatError, match="no feature field 'x'"):
        from_dgl(g, x="x")
