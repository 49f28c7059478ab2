"""The packed one-pass Adam against optax's chain(add_decayed_weights, adam) on the same gradients."""
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from fgl_jax.federated import fused_adam


@pytest.mark.parametrize("wd", [0.0, 5e-4])
def test_packed_adam_follows_optax_over_several_steps(wd):
    rng = np.random.default_rng(0)
    w = jnp.asarray(rng.normal(size=(2, 5, 7)), jnp.float32)
    grads = [jnp.asarray(rng.normal(size=w.shape), jnp.float32) for _ in range(4)]
    ref_opt = optax.chain(optax.add_decayed_weights(wd), optax.adam(1e-2)) if wd else optax.adam(1e-2)
    ref, state = w, ref_opt.init(w)
    packed, count = fused_adam.pack(w), fused_adam.init_count()
    step = jax.jit(lambda pk, g, c: fused_adam.update(pk, g, c, lr=1e-2, weight_decay=wd))
    for g in grads:
        upd, state = ref_opt.update(g, state, ref)
        ref = optax.apply_updates(ref, upd)
        packed, count = step(packed, g, count)
    adam = state[1] if wd else state
    assert int(count) == len(grads) == int(adam[0].count)
    np.testing.assert_allclose(fused_adam.params(packed), ref, rtol=1e-6, atol=1e-7)
    mu, nu = fused_adam.moments(packed)
    np.testing.assert_allclose(mu, adam[0].mu, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(nu, adam[0].nu, rtol=1e-6, atol=1e-9)
    assert not np.allclose(fused_adam.params(packed), w)      # it moved
