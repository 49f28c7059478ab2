"""apply_with_embedding: h is the last layer's input (NumPy re-derivation for a 2-layer MLP), the
logits equal an ordinary call for every model that has an embedding."""
import jax
import numpy as np
import pytest

from fgl_jax.nn import make_model
from fgl_jax.nn.models import apply_with_embedding
from tests.alg_helpers import toy_setup


def test_mlp_embedding_is_the_hidden_layer():
    data, _, _ = toy_setup()
    b = jax.tree.map(lambda a: a[0], data.eval)
    model = make_model("mlp", b.features.shape[-1], 3, hidden=5)
    params = model.init(jax.random.key(0), b)
    h, logits = apply_with_embedding(model, params, b)
    p = jax.tree.map(lambda a: np.asarray(a, np.float64), params["params"])
    want = np.maximum(np.asarray(b.features, np.float64) @ p["layer_0"]["kernel"] + p["bias_0"], 0)
    np.testing.assert_allclose(np.asarray(h), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(logits), want @ p["layer_1"]["kernel"] + p["bias_1"], rtol=1e-4, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("name,width", [("gcn", 6), ("sage", 6), ("gat", 6 * 8), ("appnp", 6)])
def test_logits_unchanged_and_embedding_shape(name, width):
    data, _, _ = toy_setup()
    b = jax.tree.map(lambda a: a[0], data.eval)
    model = make_model(name, b.features.shape[-1], 3, hidden=6)
    params = model.init(jax.random.key(1), b)
    h, logits = apply_with_embedding(model, params, b)
    assert h.shape == (b.y.shape[0], width)
    np.testing.assert_array_equal(np.asarray(logits), np.asarray(model.apply(params, b)))
