"""fgl_jax: federated graph learning in JAX."""
__version__ = "0.1.0"
