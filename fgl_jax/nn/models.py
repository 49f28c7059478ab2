"""Node-classification models on one (padded) client graph.

Every model is called as `model.apply(params, batch, train=..., rngs={"dropout": key})` with a
single client's `ClientBatch` slice (no client axis; the engine vmaps over clients) and returns
logits [N, num_classes]. Layers are named `layer_0 .. layer_{L-1}` so that personalisation
(FedPer: the last layer stays local) can select parameters by name.

The first layer multiplies the raw features through `ops.feature_matmul`, so bag-of-words
features stay sparse; every later layer works on dense hidden states.

Shapes: N nodes, F input features, H hidden width, K classes.
"""
from __future__ import annotations

from typing import Callable, NamedTuple, Optional

import flax.linen as nn
import jax
import jax.numpy as jnp

from fgl_jax import ops, registry
from fgl_jax.nn import layers


# How a model treats edge direction (registry info "direction"; `--directed keep` reads it):
#   "uses"       messages flow u -> v only (each node aggregates its in-neighbours; GCN-style
#                normalisations use in-degrees, as PyG's gcn_norm does on a directed edge_index)
#   "symmetric"  needs an undirected graph (a spectral filter: the scaled Laplacian with
#                lambda_max = 2 holds for a symmetric adjacency only); refused with --directed keep
#   "none"       reads no edges
DIRECTION = ("uses", "symmetric", "none")


def _model(*names: str, direction: str = "uses") -> Callable[[type], type]:
    """Register a model class in the one registry (kind "model") under `names`: its name, then
    its aliases ("graphsage" for "sage"); `make_model` and the CLI choices read the registry.
    direction: one of `DIRECTION` (what a directed graph means to the model)."""
    assert direction in DIRECTION, direction
    def deco(cls: type) -> type:
        for name in names:
            registry.add("model", name, cls, help=(cls.__doc__ or name).strip().splitlines()[0], direction=direction)
        return cls
    return deco


class InputDense(nn.Module):
    """Linear map whose input may be SparseFeatures (then `in_dim` must be given)."""

    features: int
    in_dim: int
    use_bias: bool = True
    kernel_init: Callable = nn.initializers.glorot_uniform()

    @nn.compact
    def __call__(self, x, num_nodes: int):
        w = self.param("kernel", self.kernel_init, (self.in_dim, self.features), jnp.float32)
        out = ops.feature_matmul(x, w, num_nodes)
        if self.use_bias:
            out = out + self.param("bias", nn.initializers.zeros, (self.features,), jnp.float32)
        return out


def _dropout(x, rate: float, train: bool, module: nn.Module):
    if rate <= 0.0 or not train or isinstance(x, ops.SparseFeatures):
        return x
    return nn.Dropout(rate, deterministic=False)(x)


EMBEDDING = "embedding"


def apply_with_embedding(model: nn.Module, params, batch, train: bool = False, rngs=None
                         ) -> tuple[jax.Array, jax.Array]:
    """(h, logits): the node embeddings h [N, D] (the input of the last layer, after the ReLU and
    before dropout) and the usual logits [N, num_classes] of one call.

    The models store h with `sow` (a no-op in ordinary calls, so params and outputs are unchanged);
    models with a single layer or without a hidden layer (SGC) have no embedding.
    """
    logits, state = model.apply(params, batch, train=train, rngs=rngs, mutable=["intermediates"])
    found = state.get("intermediates", {}).get(EMBEDDING)
    if not found:
        raise ValueError(f"model {type(model).__name__} (num_layers={getattr(model, 'num_layers', '?')}) has no "
                         "hidden node embedding: use a model with >= 2 layers (gcn, sage, gat, mlp, ...)")
    return found[0], logits


def _relu_stack(module: nn.Module, batch, train: bool, layer: Callable) -> jax.Array:
    """The layer skeleton GCN, SAGE and MLP share: dropout before every layer but the first, then
    `layer(i, h, width, in_dim, n)` (linear map + propagation), a bias `bias_i`, then between layers
    the module's normalisation `module.norm` (`layers.normalise`) and a ReLU.

    Called from inside the module's compact `__call__`, so parameter names stay `layer_i`/`bias_i`.
    """
    n = batch.y.shape[-1]
    h = batch.features
    for i in range(module.num_layers):
        last = i == module.num_layers - 1
        width = module.num_classes if last else module.hidden
        if last and i > 0:  # the node embedding (penultimate representation), see `apply_with_embedding`
            module.sow("intermediates", EMBEDDING, h)
        h = _dropout(h, module.dropout, train, module) if i > 0 else h
        h = layer(i, h, width, module.in_dim if i == 0 else module.hidden, n)
        h = h + module.param(f"bias_{i}", nn.initializers.zeros, (width,), jnp.float32)
        if not last:
            h = nn.relu(layers.normalise(module, i, h, module.norm, batch.node_mask))
    return h


@_model("gcn")
class GCN(nn.Module):
    """Kipf & Welling GCN: H' = D^-1/2 (A+I) D^-1/2 H W + b, ReLU between layers.

    aggregate: the neighbour sum (`ops.neighbour_sum` signature); None = plain segment sums.
    HiFGL passes its secure sum here. self_loop=False: HiFGL's Eq. 2/3 without the self term.
    propagate: a normalised propagation replacing `ops.gcn_propagate` (see `layers.gcn_layer`;
    HiFGL's authors'-code normalisation); None = the symmetric one above.
    """

    in_dim: int
    hidden: int
    num_classes: int
    num_layers: int = 2
    dropout: float = 0.0
    norm: str = "none"  # normalisation after each hidden layer: none, batch, layer (`layers.normalise`)
    aggregate: Optional[Callable] = None
    self_loop: bool = True
    propagate: Optional[Callable] = None
    # True: the input features already are the first layer's neighbour aggregate (FedGCN's
    # pre-communicated S X), so layer 0 is a linear map without propagation (FedGraph's AggreGCN)
    pre_aggregated: bool = False

    @nn.compact
    def __call__(self, batch, train: bool = False):
        s, r, m = batch.graph.senders, batch.graph.receivers, batch.edge_mask

        def layer(i, h, width, in_dim, n):
            # propagate after the projection: S (X W) == (S X) W, and X W is the small side.
            lin = InputDense(width, in_dim, use_bias=False, name=f"layer_{i}")
            if i == 0 and self.pre_aggregated:
                return lin(h, n)
            return layers.gcn_layer(self, i, lin(h, n), s, r, m, n, aggregate=self.aggregate,
                                    self_loop=self.self_loop, use_bias=False,    # bias_i: _relu_stack
                                    propagate=self.propagate)

        return _relu_stack(self, batch, train, layer)


@_model("sage", "graphsage")
class SAGE(nn.Module):
    """GraphSAGE with the mean aggregator: H' = H W_r + mean_N(H) W_n + b.

    aggregate: the neighbour sum (`ops.neighbour_sum` signature) the mean divides by the degree;
    None = plain segment sums.
    """

    in_dim: int
    hidden: int
    num_classes: int
    num_layers: int = 2
    dropout: float = 0.0
    norm: str = "none"  # normalisation after each hidden layer: none, batch, layer (`layers.normalise`)
    aggregate: Optional[Callable] = None

    @nn.compact
    def __call__(self, batch, train: bool = False):
        s, r, m = batch.graph.senders, batch.graph.receivers, batch.edge_mask

        def layer(i, h, width, in_dim, n):
            # one matmul for [W_r | W_n]; the mean commutes with the linear map.
            both = InputDense(2 * width, in_dim, use_bias=False, name=f"layer_{i}")(h, n)
            return layers.sage_layer(self, i, both, s, r, m, n, aggregate=self.aggregate, use_bias=False)

        return _relu_stack(self, batch, train, layer)


@_model("gat")
class GAT(nn.Module):
    """GAT (Velickovic et al.): multi-head attention over in-neighbours plus a self-loop.

    Hidden layers concatenate `heads` heads; the output layer averages `out_heads` heads.
    """

    in_dim: int
    hidden: int
    num_classes: int
    num_layers: int = 2
    heads: int = 8
    out_heads: int = 1
    dropout: float = 0.0
    norm: str = "none"  # normalisation after each hidden layer: none, batch, layer (`layers.normalise`)
    negative_slope: float = 0.2

    @nn.compact
    def __call__(self, batch, train: bool = False):
        n = batch.y.shape[-1]
        s, r, m = layers.add_self_loops(batch.graph.senders, batch.graph.receivers, batch.edge_mask, n,
                                        loop_mask=batch.node_mask)
        h = batch.features
        for i in range(self.num_layers):
            last = i == self.num_layers - 1
            k = self.out_heads if last else self.heads
            width = self.num_classes if last else self.hidden
            if last and i > 0:
                self.sow("intermediates", EMBEDDING, h)
            h = _dropout(h, self.dropout, train, self) if i > 0 else h
            in_dim = self.in_dim if i == 0 else self.hidden * self.heads
            z = InputDense(k * width, in_dim, use_bias=False, name=f"layer_{i}")(h, n)
            h = layers.gat_layer(self, i, z, s, r, m, n, heads=k, concat=not last,
                                 negative_slope=self.negative_slope)
            h = h if last else nn.elu(layers.normalise(self, i, h, self.norm, batch.node_mask))
        return h


@_model("sgc")
class SGC(nn.Module):
    """SGC (Wu et al.): logits = S^K X W + b with S the GCN-normalised adjacency."""

    in_dim: int
    hidden: int  # unused; kept for a uniform constructor
    num_classes: int
    num_layers: int = 2  # K propagation steps
    dropout: float = 0.0

    @nn.compact
    def __call__(self, batch, train: bool = False):
        n = batch.y.shape[-1]
        s, r, m = batch.graph.senders, batch.graph.receivers, batch.edge_mask
        h = InputDense(self.num_classes, self.in_dim, use_bias=False, name="layer_0")(batch.features, n)
        for _ in range(self.num_layers):
            h = ops.gcn_propagate(h, s, r, m, n)
        return h + self.param("bias_0", nn.initializers.zeros, (self.num_classes,), jnp.float32)


@_model("mlp", direction="none")
class MLP(nn.Module):
    """Graph-agnostic MLP on node features."""

    in_dim: int
    hidden: int
    num_classes: int
    num_layers: int = 2
    dropout: float = 0.0
    norm: str = "none"  # normalisation after each hidden layer: none, batch, layer (`layers.normalise`)

    @nn.compact
    def __call__(self, batch, train: bool = False):
        def layer(i, h, width, in_dim, n):
            return InputDense(width, in_dim, use_bias=False, name=f"layer_{i}")(h, n)

        return _relu_stack(self, batch, train, layer)


@_model("appnp")
class APPNP(nn.Module):
    """APPNP (Gasteiger et al. 2019): predict then propagate.

    H = MLP(X) (`num_layers` linear layers, ReLU + dropout between them, as `MLP`), then K steps of
    personalised-PageRank propagation  Z_{k+1} = (1 - alpha) S Z_k + alpha H,  Z_0 = H,  with S the
    GCN-normalised adjacency D̃^{-1/2}(A+I)D̃^{-1/2} (`ops.gcn_propagate`, so edge weights in
    `edge_mask` enter exactly as in GCN). Defaults K=10, alpha=0.1 (PyG/GCond, FedGC spec §5.18).
    No dropout on the propagation (GCond's APPNP1 leaves its adjacency dropout commented out).
    """

    in_dim: int
    hidden: int
    num_classes: int
    num_layers: int = 2   # MLP depth before propagation
    dropout: float = 0.0
    norm: str = "none"  # normalisation after each hidden layer: none, batch, layer (`layers.normalise`)
    K: int = 10           # propagation steps
    alpha: float = 0.1    # teleport probability

    def __post_init__(self):
        if int(self.K) < 0:
            raise ValueError(f"APPNP: K must be >= 0, got {self.K}")
        if not 0.0 <= float(self.alpha) <= 1.0:
            raise ValueError(f"APPNP: alpha must be in [0, 1], got {self.alpha}")
        super().__post_init__()

    @nn.compact
    def __call__(self, batch, train: bool = False):
        n = batch.y.shape[-1]
        s, r, m = batch.graph.senders, batch.graph.receivers, batch.edge_mask

        def layer(i, h, width, in_dim, n):
            return InputDense(width, in_dim, use_bias=False, name=f"layer_{i}")(h, n)

        h = _relu_stack(self, batch, train, layer)

        # Python loop: K is static and small; unrolled it fuses better than a scan of 10 steps.
        z = h
        for _ in range(self.K):
            z = (1.0 - self.alpha) * ops.gcn_propagate(z, s, r, m, n) + self.alpha * h
        return z


def _cheb_scaled_laplacian(h: jax.Array, senders, receivers, edge_mask, num_nodes: int) -> jax.Array:
    """L̂ h for the Chebyshev basis with sym normalisation and lambda_max = 2 (PyG ChebConv defaults):

    L̂ = 2 L / lambda_max - I = (I - D^{-1/2} A D^{-1/2}) - I = -D^{-1/2} A D^{-1/2}.

    Edge weights come from `edge_mask` (as in `ops.gcn_propagate`); self-loop edges are dropped
    (PyG's get_laplacian removes them) and no self-loop is added, so isolated/padded nodes map to 0.
    h: [N, H] -> [N, H].
    """
    w = jnp.where(senders == receivers, 0.0, edge_mask.astype(h.dtype))
    deg = jax.ops.segment_sum(w, receivers, num_segments=num_nodes)
    pos = deg > 0
    # double where: rsqrt(0) = inf would turn the zero cotangent of the unused branch into NaN.
    inv_sqrt = jnp.where(pos, jax.lax.rsqrt(jnp.where(pos, deg, 1.0)), 0.0)
    coef = -w * inv_sqrt[senders] * inv_sqrt[receivers]
    return jax.ops.segment_sum(h[senders] * coef[:, None], receivers, num_segments=num_nodes)


@_model("cheb", "chebnet", "cheby", direction="symmetric")
class ChebNet(nn.Module):
    """ChebNet (Defferrard et al. 2016) with PyG ChebConv layers: H' = sum_{k<K} T_k(L̂) H W_k + b,

    T_0 = I, T_1 = L̂, T_k = 2 L̂ T_{k-1} - T_{k-2}, L̂ = -D^{-1/2} A D^{-1/2} (see
    `_cheb_scaled_laplacian`). Default K=2 (FedGC spec §5.18): H' = H W_0 - D^{-1/2} A D^{-1/2} H W_1 + b.
    Layers as GCN: ReLU and dropout between layers. Layer i's kernel `layer_i` is [in, K*width]
    = [W_0 | ... | W_{K-1}]: one matmul, then the polynomial is applied to the projections by
    Clenshaw's recurrence (K-1 sparse propagations of width-sized arrays).
    """

    in_dim: int
    hidden: int
    num_classes: int
    num_layers: int = 2
    dropout: float = 0.0
    norm: str = "none"  # normalisation after each hidden layer: none, batch, layer (`layers.normalise`)
    K: int = 2  # Chebyshev order (number of terms T_0..T_{K-1}, PyG convention)

    def __post_init__(self):
        if int(self.K) < 1:
            raise ValueError(f"ChebNet: K must be >= 1, got {self.K}")
        super().__post_init__()

    @nn.compact
    def __call__(self, batch, train: bool = False):
        s, r, m = batch.graph.senders, batch.graph.receivers, batch.edge_mask
        k_terms = self.K

        def layer(i, h, width, in_dim, n):
            z = InputDense(k_terms * width, in_dim, use_bias=False, name=f"layer_{i}")(h, n)
            zs = [z[:, k * width:(k + 1) * width] for k in range(k_terms)]
            lap = lambda v: _cheb_scaled_laplacian(v, s, r, m, n)
            # Clenshaw: b_k = Z_k + 2 L̂ b_{k+1} - b_{k+2};  sum_k T_k(L̂) Z_k = Z_0 + L̂ b_1 - b_2.
            b1 = b2 = jnp.zeros_like(zs[0])
            for k in range(k_terms - 1, 0, -1):
                b1, b2 = zs[k] + 2.0 * lap(b1) - b2 if k < k_terms - 1 else zs[k], b1
            return zs[0] + lap(b1) - b2 if k_terms > 1 else zs[0]

        return _relu_stack(self, batch, train, layer)


@_model("cheb_gcond", direction="symmetric")
class GCondCheby(nn.Module):
    """GCond's `Cheby` (models/mycheby.py with its defaults single_param=True, K=2), the model behind
    the "Cheby" column of FedGC's Table 3 (GCond's cross-architecture tester):

        H' = (H + S H) W + b,   S = D̃^{-1/2}(A+I)D̃^{-1/2}  (`ops.gcn_propagate`),

    one weight matrix for both terms ("single_param ... to alleviate the overfitting issue"), ReLU and
    dropout between layers as GCN. Not a Chebyshev filter in the scaled Laplacian: with a shared
    weight the sign of the T_1 term matters, and GCond's is +S where PyG's L̂ = -D^{-1/2}AD^{-1/2}
    (`ChebNet`). GCond normalises the condensed graph without the self-loop (it passes A' - I to
    its normaliser, and A' has a zero diagonal: S = D^{-1/2} A' D^{-1/2}) but the real graphs with
    it: `self_loops=False` gives the former; the parameters are the same either way, so one set of
    weights can train on G' and be tested on a real graph.
    """

    in_dim: int
    hidden: int
    num_classes: int
    num_layers: int = 2
    dropout: float = 0.0
    norm: str = "none"  # normalisation after each hidden layer: none, batch, layer (`layers.normalise`)
    self_loops: bool = True

    @nn.compact
    def __call__(self, batch, train: bool = False):
        s, r, m = batch.graph.senders, batch.graph.receivers, batch.edge_mask
        if self.self_loops:
            prop = lambda z, n: ops.gcn_propagate(z, s, r, m, n)
        else:  # D^{-1/2} A D^{-1/2} without the loop is minus ChebNet's scaled Laplacian
            prop = lambda z, n: -_cheb_scaled_laplacian(z, s, r, m, n)

        def layer(i, h, width, in_dim, n):
            z = InputDense(width, in_dim, use_bias=False, name=f"layer_{i}")(h, n)  # (H + S H) W = Z + S Z
            return z + prop(z, n)

        return _relu_stack(self, batch, train, layer)


def _uniform_fan_out(key, shape, dtype=jnp.float32):
    """U(-1/sqrt(fan_out), 1/sqrt(fan_out)) for a [fan_in, fan_out] kernel (OpenFGL's GraphConvolution)."""
    bound = 1.0 / jnp.sqrt(shape[-1])
    return jax.random.uniform(key, shape, dtype, -bound, bound)


@_model("gcn_sum")
class SumGCN(nn.Module):
    """GCN layers on the raw adjacency: H' = A H W + b (no self-loops, no normalisation), ReLU between.

    OpenFGL 1.1.0's FGGP and FedGL train this model (their `FedGCN`: torch.spmm with the unnormalised
    client adjacency), so their algorithm modules offer it to reproduce OpenFGL's numbers; its
    initialisation is that model's too: W ~ U(-1/sqrt(fan_out), 1/sqrt(fan_out)), b = 0.
    aggregate: the neighbour sum (`ops.neighbour_sum` signature), as GCN's."""

    in_dim: int
    hidden: int
    num_classes: int
    num_layers: int = 2
    dropout: float = 0.0
    norm: str = "none"  # normalisation after each hidden layer: none, batch, layer (`layers.normalise`)
    aggregate: Optional[Callable] = None

    @nn.compact
    def __call__(self, batch, train: bool = False):
        s, r, m = batch.graph.senders, batch.graph.receivers, batch.edge_mask
        aggregate = self.aggregate or ops.neighbour_sum

        def layer(i, h, width, in_dim, n):
            z = InputDense(width, in_dim, use_bias=False, kernel_init=_uniform_fan_out, name=f"layer_{i}")(h, n)
            return aggregate(z, s, r, m, n, layer=i)

        return _relu_stack(self, batch, train, layer)


class ModelSpec(NamedTuple):
    """The model a run was configured with, as data.

    For algorithms that build a variant of it (e.g. FedPub's masked GCN or a generator of FedSage+):
    `spec.build()` == the run's model.

    Attributes:
        name: the model's registered name ("gcn", "sage", ...).
        in_dim: F, the input feature width.
        num_classes: K, the output width.
        hidden: H, the hidden width.
        num_layers: the number of layers.
        dropout: the dropout rate.
    """

    name: str
    in_dim: int
    num_classes: int
    hidden: int = 64
    num_layers: int = 2
    dropout: float = 0.0
    norm: str = "none"

    def build(self, **overrides) -> nn.Module:
        """make_model of this spec, fields replaced by `overrides` (e.g. name="mlp")."""
        return make_model(**{**self._asdict(), **overrides})


def make_model(name: str, in_dim: int, num_classes: int, hidden: int = 64, num_layers: int = 2,
               dropout: float = 0.0, norm: str = "none", **kwargs) -> nn.Module:
    """Build a model by name ("gcn", "sage", "gat", "sgc", "mlp", "appnp", "cheb").

    Args:
        name: a registered model name (case-insensitive).
        in_dim: F, the input feature width, > 0.
        num_classes: K, the output width, > 0.
        hidden: H, the hidden width, > 0.
        num_layers: the number of layers, > 0.
        dropout: the dropout rate in [0, 1).
        norm: the normalisation after each hidden layer (`layers.normalise`: none, batch, layer); a
            model without hidden layers to normalise (sgc) takes only "none".
        **kwargs: model-specific options (e.g. GAT's heads), passed to its constructor.

    Returns:
        The flax module; applied to one client's batch it gives logits `[N, K]`.

    Raises:
        ValueError: an unknown name, a non-positive size, a dropout outside [0, 1) or a bad norm.
    """
    key = name.lower()
    if not registry.has("model", key):
        raise ValueError(f"unknown model {name!r}; choose one of {registry.names('model')}")
    for field, value in (("in_dim", in_dim), ("num_classes", num_classes), ("hidden", hidden),
                         ("num_layers", num_layers)):
        if int(value) <= 0:
            raise ValueError(f"model {name!r}: {field} must be positive, got {value}")
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"model {name!r}: dropout must be in [0, 1), got {dropout}")
    if norm not in layers.NORMS:
        raise ValueError(f"model {name!r}: norm must be one of {', '.join(layers.NORMS)}, got {norm!r}")
    cls = registry.get("model", key)
    if norm != "none":
        if "norm" not in getattr(cls, "__dataclass_fields__", {}):
            raise ValueError(f"model {name!r}: norm={norm!r} is not available (the model has no hidden layer "
                             "output to normalise); use norm none")
        kwargs["norm"] = norm
    return cls(in_dim=in_dim, hidden=hidden, num_classes=num_classes, num_layers=num_layers,
               dropout=dropout, **kwargs)
