"""Each model against a dense NumPy reference written from the papers' formulas."""
import jax
import numpy as np
import pytest

from fgl_jax.batch import full_graph_batch, unstack
from fgl_jax.nn import make_model
from tests.helpers import dense_adj, toy_graph


def _params_np(params):
    return jax.tree.map(np.asarray, params)["params"]


def _relu(x):
    return np.maximum(x, 0)


def _gcn_norm(a):
    a_hat = a + np.eye(len(a))
    d = a_hat.sum(1)
    return a_hat / np.sqrt(d)[:, None] / np.sqrt(d)[None, :]


def ref_gcn(p, x, a):
    s = _gcn_norm(a)
    h = _relu(s @ x @ p["layer_0"]["kernel"] + p["bias_0"])
    return s @ h @ p["layer_1"]["kernel"] + p["bias_1"]


def ref_sage(p, x, a):
    deg = np.maximum(a.sum(1), 1)
    mean = a / deg[:, None]
    h = x
    for i in range(2):
        k = p[f"layer_{i}"]["kernel"]
        w = k.shape[1] // 2
        h = h @ k[:, :w] + mean @ h @ k[:, w:] + p[f"bias_{i}"]
        if i == 0:
            h = _relu(h)
    return h


def ref_gat(p, x, a, heads):
    n = len(a)
    a_loop = a + np.eye(n)
    h = x
    for i, k in enumerate((heads, 1)):
        w = p[f"layer_{i}"]["kernel"]
        width = w.shape[1] // k
        z = (h @ w).reshape(n, k, width)
        es = (z * p[f"att_src_{i}"]).sum(-1)
        ed = (z * p[f"att_dst_{i}"]).sum(-1)
        out = np.zeros((n, k, width))
        for v in range(n):
            nb = np.flatnonzero(a_loop[v])
            e = es[nb] + ed[v][None]
            e = np.where(e > 0, e, 0.2 * e)
            att = np.exp(e - e.max(0))
            att /= att.sum(0)
            out[v] = (att[..., None] * z[nb]).sum(0)
        if i == 0:
            h = out.reshape(n, k * width) + p["bias_0"]
            h = np.where(h > 0, h, np.expm1(np.minimum(h, 0)))
        else:
            h = out.mean(1) + p["bias_1"]
    return h


def ref_sgc(p, x, a, k=2):
    s = _gcn_norm(a)
    return np.linalg.matrix_power(s, k) @ x @ p["layer_0"]["kernel"] + p["bias_0"]


def ref_mlp(p, x, a):
    h = _relu(x @ p["layer_0"]["kernel"] + p["bias_0"])
    return h @ p["layer_1"]["kernel"] + p["bias_1"]


REFS = {"gcn": ref_gcn, "sage": ref_sage, "sgc": ref_sgc, "mlp": ref_mlp}


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("name", ["gcn", "sage", "sgc", "mlp", "gat"])
def test_model_matches_dense_numpy(name, sparse):
    g = toy_graph(sparse=sparse, seed=3)
    batch = unstack(full_graph_batch(g), 0)
    kw = {"heads": 3} if name == "gat" else {}
    model = make_model(name, g.num_features, g.num_classes, hidden=8, **kw)
    params = model.init(jax.random.key(1), batch)
    out = np.asarray(model.apply(params, batch))[: g.num_nodes]
    p = _params_np(params)
    x, a = g.dense_x().astype(np.float64), dense_adj(g)
    ref = ref_gat(p, x, a, 3) if name == "gat" else REFS[name](p, x, a)
    np.testing.assert_allclose(out, ref, rtol=2e-4, atol=2e-4)


def test_make_model_rejects_bad_input():
    with pytest.raises(ValueError, match="unknown model"):
        make_model("transformer", 4, 2)
    with pytest.raises(ValueError, match="hidden"):
        make_model("gcn", 4, 2, hidden=0)
    with pytest.raises(ValueError, match="dropout"):
        make_model("gcn", 4, 2, dropout=1.5)
