"""The typed algorithm spec: a registration's fields are declared and checked at import."""
import dataclasses

import pytest

from fgl_jax import registry
from fgl_jax.registry import AlgorithmSpec


def _factory(model, common, hp=None):
    return None


@pytest.mark.parametrize("info, words", [
    ({"help": "x y", "hparam": None}, ["'zz_bad'", "unknown field 'hparam'", "did you mean 'hparams'"]),
    ({"help": "x y", "tasks": "node_cls"}, ["'zz_bad'", "field 'tasks' must be tuple", "str"]),
    ({"help": "x y", "tasks": ("node_cls", "node_clust")}, ["'zz_bad'", "field 'tasks'", "node_clust"]),
    ({"help": "x y", "features": "dense"}, ["'zz_bad'", "field 'features'", "'dense'"]),
    ({"help": "x y", "prepare": "not callable"}, ["'zz_bad'", "field 'prepare'"]),
    ({"help": "x y", "hparams": dict}, ["'zz_bad'", "field 'hparams' must be a frozen dataclass"]),
    ({"paper": "someone"}, ["'zz_bad'", "field 'help' is required"]),
])
def test_bad_registration_is_one_line_naming_algorithm_and_field(info, words):
    with pytest.raises((TypeError, ValueError)) as e:
        registry.add("algorithm", "zz_bad", _factory, **info)
    msg = str(e.value)
    assert "\n" not in msg
    for w in words:
        assert w in msg, (w, msg)
    assert not registry.has("algorithm", "zz_bad")


def test_every_registered_algorithm_has_a_typed_spec():
    for e in registry.entries("algorithm"):
        assert isinstance(e.spec, AlgorithmSpec), e.name
        assert registry.algorithm(e.name) is e.spec
        # info keeps every field (old readers of entry.info keep working)
        assert e.info == {f.name: getattr(e.spec, f.name) for f in dataclasses.fields(AlgorithmSpec)}
        assert e.spec.help and set(e.spec.tasks) <= set(registry.ALGORITHM_TASKS)


def test_spec_defaults_and_other_kinds_stay_free_form():
    spec = AlgorithmSpec.build("x", {"help": "one line", "tasks": ["node_cls", "link_pred"]})
    assert spec.tasks == ("node_cls", "link_pred") and spec.hparams is None and spec.prepare is None
    assert registry.algorithm("fedprox").hparams.__name__ == "FedProxHParams"
    assert registry.algorithm("global").data == "full_graph"
    assert registry.entry("system", "baseline").spec is None
