"""flax.linen layers and models on segment sums."""
from fgl_jax.nn.models import GAT, GCN, MLP, SAGE, SGC, MODELS, make_model

__all__ = ["GAT", "GCN", "MLP", "SAGE", "SGC", "MODELS", "make_model"]
