"""flax.linen layers and models on segment sums."""
from fgl_jax.nn.models import APPNP, GAT, GCN, MLP, SAGE, SGC, ChebNet, GCondCheby, ModelSpec, make_model

__all__ = ["APPNP", "ChebNet", "GAT", "GCondCheby", "GCN", "MLP", "SAGE", "SGC", "ModelSpec", "make_model"]
