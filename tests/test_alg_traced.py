"""Every traced option of the new algorithms lives in its state.hp (so `fgl-jax sweep --grid` can
vectorise it), and a model without a hidden embedding is refused with one clear line."""
import jax
import pytest

from fgl_jax import registry, schema
from tests.alg_helpers import toy_setup

NEW = ("fedadam", "fedyogi", "scaffold", "moon", "fedproto", "feddc", "fedtgp")


@pytest.mark.parametrize("name", NEW)
def test_traced_options_are_in_state_hp(name):
    data, model, common = toy_setup()
    cls = registry.entry("algorithm", name).info.get("hparams")
    alg = registry.get("algorithm", name)(model, common, cls())
    state = jax.eval_shape(alg.init, jax.random.key(0), data)
    assert set(schema.traced_names(cls)) <= set(state.hp), (name, schema.traced_names(cls), list(state.hp))


def test_embedding_algorithms_refuse_a_model_without_hidden_layer():
    data, model, common = toy_setup()
    alg = registry.get("algorithm", "fedproto")(model.clone(num_layers=1), common,
                                                registry.entry("algorithm", "fedproto").info["hparams"]())
    with pytest.raises(ValueError, match="no hidden node embedding"):
        jax.eval_shape(alg.init, jax.random.key(0), data)
