"""FedDEP (Zhang, Sun, Ding, Yiu, Yang, SDM 2024, arXiv:2401.04336): deep, efficient, private
neighbour generation for subgraph FL, then FedAvg of a classifier that reads the generated
neighbours' embeddings.

FedDEP extends FedSage+ (`fedsage_plus.py`) in three ways (the paper's abstract): (1) the
generator (DGen) produces the GNN *embeddings* of a node's missing neighbours, not their raw
features; (2) what clients exchange for the cross-client generator loss are embedding
*prototypes* (K cluster means of each client's node embeddings), not embeddings or features;
(3) drawing those targets at random gives edge-local DP without added noise.

Host preparation (`feddep_prepare`, once, like OpenFGL's client constructor):
    H = tanh(SAGE_2(X, A))                    [N, h]   an encoder trained on the local labels
    K-means of H into K clusters -> prototypes [K, h]; node i's prototype e_i = proto[c(i)]
    hide `feddep_hidden_portion` of the validation nodes; m_i = hidden neighbours of kept node i,
    their prototypes t_i1..t_iP (the local targets); per node a pool of P prototype slots (its
    hidden neighbours' prototypes, else its own) from which other clients draw.

Round 0 (DGen training, per client, on the impaired graph; its classifier is DGen's own):
    z = SAGE_enc(impaired)  [N, latent];  d~ = relu(z w + b);  g~ = tanh(MLP(z + eps))  [N, P, h]
    mend_i = mean_p [p < round(d~_i)] g~_ip;  logits = Classifier(X, A, mend)
    L_loc = beta_d SmoothL1(d~, m) + beta_c CE + beta_n Greedy(g~, t)       (`feddep_pretrain_epochs` steps)
    then (`feddep_epochs` steps, fresh optimiser)
    L = L_loc / C + sum_{j != i} beta_n / C Greedy(g~, P prototypes drawn from client j's pools)
    and every client mends its graph: mend_i (the kept nodes; hidden nodes get 0).
Rounds >= 1: FedAvg of the classifier  h^{l+1} = SAGE_l(h^l) + W_l e^l,  e^{l+1} = W_l e^l,
e^0 = mend  (the generated embeddings enter every layer), on each client's own mended graph.
The two are `Phase`s (`fgl_jax.federated.algorithm`): `run` compiles round 0 and the FedAvg rounds
as separate programs; `round` holds both (`lax.cond`) for the engines that run one program.

Greedy(g~, t) = 1/(|rows| P) sum_i sum_{p < n_i} min_k mean_h (g~_ip - t_ik)^2 (`greedy_loss`).

The compiled rounds read the client features as `fgl_jax.ops.EllFeatures`
(`fgl_jax.batch.with_ell_features`: registered with features="ell", converted after the host step): the classifier's and DGen's first layers (3,703 x 128 on
CiteSeer) and their weight gradients are row gathers instead of scatters.

Differences from OpenFGL 1.1.0 (openfgl/flcore/feddep), `feddep_variant=openfgl` selects OpenFGL's
behaviour where it changes the numbers (the paper's full text could not be read from this machine,
only its abstract; where the abstract does not decide, both variants follow OpenFGL):
  - prototypes: K-means (Lloyd, k-means++ start) on the embeddings; OpenFGL clusters with DEC
    (a denoising autoencoder pretrained 2 + 3 epochs, then 5 DEC epochs, whose centres start from
    K-means on the autoencoder's codes). Both give K centres and a hard assignment.
  - encoder: trained full batch (`feddep_encoder_epochs` Adam steps, lr 1e-2, L2 5e-4, as OpenFGL's
    constants) with cross-entropy on its logits; OpenFGL trains on neighbour-sampled minibatches of
    64 and applies cross-entropy to *softmax* outputs (a double softmax) after a dropout.
  - the cross-client step: OpenFGL accumulates the other clients' gradients into parameter
    `.grad` buffers that still hold the previous step's gradient and doubles the running sum per
    client (`dep_grad[k] += v.grad` on an alias of `v.grad`), so its update is dominated by stale
    gradients scaled by up to 2^(C-1); we add the gradient of the loss written above
    (`feddep_cross_grad=openfgl` replays OpenFGL's buffers: `openfgl_cross_weights`). One
    forward pass of DGen (one noise and dropout draw) serves the local term and all other
    clients' terms (OpenFGL: one pass per other client and one for the local term).
  - local training after round 0: OpenFGL takes one epoch of minibatches of 64 training nodes
    with 5 sampled neighbours per hop (`openfgl`: one epoch of minibatches of
    `feddep_batch_size`, full neighbourhoods; Cora's mean degree is 3.9, so few nodes have more
    than 5; `feddep_fanout=5` draws OpenFGL's 5 in-neighbours per node, layer and step,
    `sample_in_edges`); `paper`: the run's local steps, full batch.
  - dropout in the classifier's local steps: OpenFGL's client evaluation switches the model to
    eval mode after every round and its local epoch never switches it back, so from round 1 on
    it trains without dropout; we keep dropout (the model's setting), `feddep_local_dropout=False`
    follows OpenFGL. Of the numbers' differences this is the one that counts on CiteSeer
    (benchmarks/peers/openfgl/results_feddep_acc.md: 10 Louvain clients, seeds 0-2, 30 rounds):
    fgl_jax 71.68 -> 70.37 % without it, against OpenFGL's 69.31; OpenFGL 69.31 -> 71.24 % with
    it. OpenFGL's stale cross-client gradients, its 5 sampled neighbours, a zero mend, K-means
    instead of DEC, full batches or Glorot initialisation move the mean of either side by < 0.7
    points.
  - server weights: OpenFGL averages uniformly (`openfgl`); `paper` weights by training nodes.
  - OpenFGL uses a slot of another client's pool only when its entries sum to >= 1e-15 (its test
    for an empty slot), else that node's own prototype; `openfgl` reproduces the test, `paper`
    uses every filled slot.
  - both variants follow OpenFGL where the abstract is silent: validation nodes are hidden, DGen
    and the mending run in training mode (dropout and the generator's noise on), the counts are
    rounded (the cross-client loss truncates them), and other clients draw targets for every node
    of the impaired graph (the denominator counts them all).
  - initialisation: one draw of the FL classifier for every client (OpenFGL: independent draws);
    every client's DGen is its own draw, as in OpenFGL. The classifier starts from Glorot kernels
    and zero biases (fgl_jax's SAGE); `feddep_init=torch` draws PyTorch's U(+-1/sqrt(fan_in))
    kernels and biases (OpenFGL's). With OpenFGL's single minibatch step per round the model is
    still improving at round 30, so the start matters: Cora, seed 0, 10 Louvain clients, 30
    rounds: 78.93% (glorot) vs 77.04% (torch).
  - partial participation: only the clients sampled in round 0 train a DGen; the others keep a
    zero mend (OpenFGL would fail on them in round 1).

Server step (`fgl_jax.aggregators`): the classifiers of the FedAvg rounds go through the run's
aggregator; the generator phase's exchange is FedDEP's own.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import flax
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from fgl_jax.algorithms._common import aggregate, prepared_phase, scatter_clients, stack, weighted_loss
from fgl_jax.algorithms._neighbour_generation import (greedy_loss, hide_validation_nodes, impaired_batch,
                                                      padded_rows, smooth_l1)
from fgl_jax.batch import ClientBatch
from fgl_jax.federated.algorithm import FedData, FederatedAlgorithm, HostInput, Phase
from fgl_jax.federated.config import FedConfig, server_aggregator
from fgl_jax.federated.evaluation import evaluate_models
from fgl_jax.federated.chunking import map_clients
from fgl_jax.federated.client import local_train, lr_scale, make_optimizer
from fgl_jax.federated.metrics import masked_cross_entropy
from fgl_jax.nn import layers
from fgl_jax.nn.models import SAGE, InputDense
from fgl_jax.registry import register
from fgl_jax.schema import option

PyTree = Any


@dataclasses.dataclass(frozen=True)
class FedDEPHParams:
    feddep_num_pred: int = option(5, "P: most neighbour embeddings DGen generates per node", low=1)
    feddep_num_protos: int = option(5, "K: embedding prototypes per client", low=1)
    feddep_emb_dim: int = option(64, "width of the encoder's embeddings (and of the generated ones)", low=1)
    feddep_encoder_epochs: int = option(50, "Adam steps of the prototype encoder (host, once)", low=0)
    feddep_latent: int = option(128, "DGen encoder output width", low=1)
    feddep_gen_width: int = option(2048, "width of DGen's second hidden layer (its first is 256)", low=1)
    feddep_hidden_portion: float = option(0.5, "fraction of each client's validation nodes hidden to "
                                          "simulate missing neighbours", low=0.0, high=1.0)
    feddep_pretrain_epochs: int = option(2, "local DGen steps before the cross-client ones", low=0)
    feddep_epochs: int = option(3, "DGen steps with the cross-client prototype loss", low=0)
    feddep_beta_d: float = option(1.0, "weight of the missing-count loss", low=0.0)
    feddep_beta_n: float = option(1.0, "weight of the embedding (greedy) losses", low=0.0)
    feddep_beta_c: float = option(1.0, "weight of DGen's classification loss", low=0.0)
    feddep_init: str = option("glorot", "classifier initialisation: glorot (fgl_jax's SAGE) or torch "
                              "(U(+-1/sqrt(fan_in)) kernels and biases, OpenFGL's)", choices=("glorot", "torch"))
    feddep_batch_size: int = option(64, "openfgl variant: minibatch size of the local epoch", low=1)
    feddep_variant: str = option("paper", "paper = local steps full batch, training-node weights, every "
                                 "filled slot; openfgl = OpenFGL 1.1.0 (one epoch of minibatches, uniform "
                                 "average, its empty-slot test)", choices=("paper", "openfgl"))
    feddep_cross_grad: str = option("loss", "DGen's cross-client steps: loss = the gradient of the written loss; "
                                    "openfgl = OpenFGL 1.1.0's gradient buffers (the previous step's gradient "
                                    "kept, the running sum doubled per other client; `openfgl_cross_weights`)",
                                    choices=("loss", "openfgl"))
    feddep_local_dropout: bool = option(True, "dropout in the classifier's local steps (rounds >= 1); False = "
                                        "OpenFGL 1.1.0, whose evaluation leaves the model in eval mode")
    feddep_fanout: int = option(0, "openfgl variant: in-neighbours drawn per node and layer in each local "
                                "minibatch step (OpenFGL's sampler: 5); 0 = every neighbour", low=0)


# ----------------------------------------------------------------------------------- models

class DEPClassifier(nn.Module):
    """SAGE whose every layer adds a linear map of the generated-neighbour embedding chain:
    h^{l+1} = SAGE_l(h^l) + W_l e^l, e^{l+1} = W_l e^l, e^0 = the node's mend [N, emb_dim].

    `emb` is passed by DGen (its own classifier); the FL classifier reads it from the variable
    collection "mend" ({"emb": [N, emb_dim]}), so the engine's evaluation applies it unchanged."""

    in_dim: int
    hidden: int
    num_classes: int
    emb_dim: int
    num_layers: int = 2
    dropout: float = 0.0
    init_scheme: str = "glorot"   # "torch": every kernel and bias U(+-1/sqrt(fan_in)) (PyTorch's Linear, PyG's SAGEConv)

    @nn.compact
    def __call__(self, batch, train: bool = False, emb=None, edge_masks=None):
        n = batch.y.shape[-1]
        if emb is None:
            emb = self.variable("mend", "emb", jnp.zeros, (n, self.emb_dim), jnp.float32).value
        s, r, m0 = batch.graph.senders, batch.graph.receivers, batch.edge_mask
        h, e = batch.features, emb
        for i in range(self.num_layers):
            m = m0 if edge_masks is None else edge_masks[i]   # edge_masks: one sampled mask per layer
            last = i == self.num_layers - 1
            width = self.num_classes if last else self.hidden
            if i > 0 and self.dropout > 0 and train:
                h = nn.Dropout(self.dropout, deterministic=False)(h)
            fan_in = self.in_dim if i == 0 else self.hidden
            if self.init_scheme == "torch":
                kinit = nn.initializers.variance_scaling(1.0 / 3.0, "fan_in", "uniform")
                z = InputDense(2 * width, fan_in, use_bias=False, kernel_init=kinit, name=f"layer_{i}")(h, n)
                h = layers.sage_layer(self, i, z, s, r, m, n, use_bias=False) + self.param(
                    f"bias_{i}", _uniform_bias(fan_in), (width,), jnp.float32)
                e_in = e.shape[-1]
                e = nn.Dense(width, kernel_init=kinit, bias_init=_uniform_bias(e_in), name=f"emb_{i}")(e)
            else:
                z = InputDense(2 * width, fan_in, use_bias=False, name=f"layer_{i}")(h, n)
                h = layers.sage_layer(self, i, z, s, r, m, n)
                e = nn.Dense(width, name=f"emb_{i}")(e)
            h = h + e
            if not last:
                h = nn.relu(h)
        return h


def _uniform_bias(fan_in: int):
    """PyTorch's Linear bias initialiser: U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
    bound = 1.0 / np.sqrt(max(fan_in, 1))
    return lambda key, shape, dtype=jnp.float32: jax.random.uniform(key, shape, dtype, -bound, bound)


class DGen(nn.Module):
    """DGen: a 2-layer SAGE encoder, the missing-count head, the embedding generator and its own
    DEPClassifier on the mended impaired graph."""

    in_dim: int
    hidden: int
    num_classes: int
    latent: int
    emb_dim: int
    num_pred: int
    width: int
    dropout: float

    def setup(self):
        self.encoder = SAGE(self.in_dim, self.hidden, self.latent, num_layers=2, dropout=self.dropout)
        self.d_gen = nn.Dense(1)
        self.fc1, self.fc2 = nn.Dense(256), nn.Dense(self.width)
        self.fc_flat = nn.Dense(self.num_pred * self.emb_dim)
        self.drop = nn.Dropout(self.dropout)
        self.classifier = DEPClassifier(self.in_dim, self.hidden, self.num_classes, self.emb_dim, 2, self.dropout)

    def encode(self, batch, train: bool):
        """(z [N, latent], d~ [N])."""
        z = self.encoder(batch, train=train)
        return z, nn.relu(self.d_gen(z))[:, 0]

    def generate(self, z, key, train: bool):
        """g~ [N, P, emb_dim] from z [N, latent] (Gaussian noise added to z first)."""
        h = z + jax.random.normal(key, z.shape)
        h = nn.relu(self.fc2(nn.relu(self.fc1(h))))
        h = self.drop(h, deterministic=not train)
        return jnp.tanh(self.fc_flat(h)).reshape(z.shape[0], self.num_pred, self.emb_dim)

    def __call__(self, batch, key, train: bool = False, nodes=None, nodes_mask=None):
        """(d~ [N], g~ [N, P, emb_dim], logits [N, classes]) on `batch` (the impaired graph).

        nodes int [M] / nodes_mask bool [M]: generate for these nodes only (the impaired graph's;
        g~ is 0 elsewhere): the generator's two wide layers dominate the cost, and OpenFGL's
        impaired graph has no hidden nodes to generate for."""
        z, d = self.encode(batch, train)
        if nodes is None:
            g = self.generate(z, key, train)
        else:
            part = jnp.where(nodes_mask[:, None, None], self.generate(z[nodes], key, train), 0.0)
            g = jnp.zeros((z.shape[0],) + part.shape[1:], part.dtype).at[nodes].add(part)
        return d, g, self.classifier(batch, train=train, emb=mend_embedding(g, d))


def mend_embedding(g: jax.Array, d: jax.Array) -> jax.Array:
    """mean over the P slots of g~ [N, P, D] with slot p kept when p < round(d~_i): [N, D]."""
    p = g.shape[1]
    live = jnp.arange(p)[None, :] < jnp.clip(jnp.round(d), 0, p)[:, None]
    return jnp.sum(jnp.where(live[..., None], g, 0.0), axis=1) / p


class _Encoder(nn.Module):
    """The prototype encoder: H = tanh(SAGE_2(X, A)) [N, h], logits = W dropout(H) + b."""

    in_dim: int
    emb_dim: int
    num_classes: int
    dropout: float = 0.5

    @nn.compact
    def __call__(self, batch, train: bool = False):
        h = jnp.tanh(SAGE(self.in_dim, self.emb_dim, self.emb_dim, num_layers=2, dropout=self.dropout,
                          name="sage")(batch, train=train))
        out = nn.Dense(self.num_classes, name="out")(nn.Dropout(self.dropout, deterministic=not train)(h))
        return h, out


# ----------------------------------------------------------------------------------- host preparation

def node_embeddings(batch: ClientBatch, num_features: int, num_classes: int, emb_dim: int, steps: int,
                    seed: int) -> np.ndarray:
    """Every client's encoder embeddings [C, N, emb_dim] after `steps` full-batch Adam steps on its
    training labels (lr 1e-2, L2 5e-4, dropout 0.5: OpenFGL's constants); one program, vmapped."""
    net = _Encoder(num_features, emb_dim, num_classes)
    opt = optax.chain(optax.add_decayed_weights(5e-4), optax.adam(1e-2))
    jb = jax.tree.map(jnp.asarray, batch)

    def one(b, key):
        k0, k1 = jax.random.split(key)
        params = net.init({"params": k0, "dropout": k0}, b)

        def step(carry, k):
            p, o = carry
            loss = lambda q: masked_cross_entropy(net.apply(q, b, train=True, rngs={"dropout": k})[1], b.y,
                                                  b.train_mask)
            g = jax.grad(loss)(p)
            u, o = opt.update(g, o, p)
            return (optax.apply_updates(p, u), o), None

        (params, _), _ = jax.lax.scan(step, (params, opt.init(params)), jax.random.split(k1, steps))
        return net.apply(params, b)[0]

    keys = jax.random.split(jax.random.key(seed), batch.num_clients)
    return np.asarray(jax.jit(jax.vmap(one))(jb, keys))


def kmeans(x: np.ndarray, k: int, rng: np.random.Generator, iters: int = 100) -> tuple[np.ndarray, np.ndarray]:
    """Lloyd's K-means with a k-means++ start: (centres [k, D], assignment int [n]) of x [n, D].
    A cluster that empties keeps its centre (so every centre is finite)."""
    n = len(x)
    k_eff = min(k, n)
    centres = np.zeros((k, x.shape[1]), np.float64)
    if n == 0:
        return centres, np.zeros(0, np.int64)
    centres[0] = x[rng.integers(n)]
    d2 = ((x - centres[0]) ** 2).sum(1)
    for c in range(1, k_eff):
        prob = d2 / d2.sum() if d2.sum() > 0 else np.full(n, 1.0 / n)
        centres[c] = x[rng.choice(n, p=prob)]
        d2 = np.minimum(d2, ((x - centres[c]) ** 2).sum(1))
    centres[k_eff:] = centres[0]
    assign = np.zeros(n, np.int64)
    for it in range(iters):
        new = ((x[:, None, :] - centres[None, :k_eff, :]) ** 2).sum(-1).argmin(1)
        if it > 0 and (new == assign).all():
            break
        assign = new
        for c in range(k_eff):
            if (assign == c).any():
                centres[c] = x[assign == c].mean(0)
    return centres, assign


def sample_in_edges(receivers: jax.Array, edge_mask: jax.Array, fanout: int, key: jax.Array) -> jax.Array:
    """bool [E]: per receiver, `fanout` of its real in-edges drawn uniformly without replacement (all
    of them when it has fewer), as PyG's NeighborSampler draws one hop: a random key per edge, edges
    ranked by key within their receiver, the first `fanout` kept."""
    e = receivers.shape[0]
    u = jnp.where(edge_mask, jax.random.uniform(key, (e,)), 2.0)
    order = jnp.lexsort((u, receivers))                          # by receiver, then key
    r_sorted = receivers[order]
    rank_sorted = jnp.arange(e) - jnp.searchsorted(r_sorted, r_sorted, side="left")
    rank = jnp.zeros((e,), rank_sorted.dtype).at[order].set(rank_sorted)
    return edge_mask & (rank < fanout)


def openfgl_cross_weights(me: jax.Array, ct: int) -> tuple[jax.Array, float]:
    """OpenFGL 1.1.0's cross-client DGen gradient as weights (`feddep_cross_grad=openfgl`).

    Per step it backpropagates each other client's term into `.grad` buffers that still hold the
    previous step's gradient G_prev, keeps an alias of them as the running sum D and adds the
    buffers to it after every client but the first, which doubles D each time. Over the m = ct - 1
    other clients in index order (rank t = 1..m) that leaves
        D = 2^(m-1) (G_prev + g_1) + sum_{t >= 2} 2^(m-t+1) g_t,
    and the step's gradient is (local gradient) / C + D.
    me: this client's index (traced int); returns (w [ct] f32, weight of client j's g_j, 0 at me;
    2^(m-1), the weight of G_prev; 0 when there is no other client)."""
    m = ct - 1
    j = jnp.arange(ct)
    t = jnp.where(j < me, j + 1, j)                                       # 1-based rank among the others
    w = jnp.exp2(jnp.where(t <= 1, m - 1, m - t + 1).astype(jnp.float32))
    return jnp.where(j == me, 0.0, w), (2.0 ** (m - 1) if m > 0 else 0.0)


def feddep_prepare(inp: HostInput, hp: FedDEPHParams):
    """Prototypes, hidden nodes, targets and the cross-client pools (host, once).

    extra (all [C, ...]): keep bool [C, N], missing f32 [C, N], targets f32 [C, N, P, h] (the
    prototypes of each kept node's first P hidden neighbours, 0-padded), pool f32 [C, N, P, h]
    (the slots other clients draw from), pool_mask bool [C, N] (the client's real nodes), rows int32
    [C, T] / row_mask bool [C, T] (the training nodes), kidx int32 [C, M] / kmask bool [C, M] (the
    impaired graph's nodes), protos f32 [C, K, h], cluster int32 [C, N]."""
    b = inp.batch
    c, n, p, kk = b.num_clients, b.num_nodes, hp.feddep_num_pred, hp.feddep_num_protos
    rng = np.random.default_rng([inp.seed, 0xFEDDE9])
    hid = hide_validation_nodes(b, hp.feddep_hidden_portion, p, rng)
    nm = np.asarray(b.node_mask)
    emb = node_embeddings(b, int(inp.graph.num_features), int(inp.graph.num_classes), hp.feddep_emb_dim,
                          hp.feddep_encoder_epochs, inp.seed)
    protos = np.zeros((c, kk, hp.feddep_emb_dim), np.float32)
    cluster = np.zeros((c, n), np.int32)
    for k in range(c):
        real = np.flatnonzero(nm[k])
        cen, assign = kmeans(emb[k][real].astype(np.float64), kk, rng)
        protos[k], cluster[k, real] = cen, assign
    proto_of = np.take_along_axis(protos, cluster[..., None].astype(np.int64), axis=1)      # [C, N, h]
    keep, missing, nbr, deg = hid["keep"], hid["missing"], hid["nbr"], hid["deg"]
    slot = np.arange(p)[None, None, :]
    filled = slot < np.minimum(missing, p)[..., None]
    targets = np.where(filled[..., None], proto_of[np.arange(c)[:, None, None], hid["targets"]], 0.0)
    # the pool: every real node's first P hidden neighbours (hidden nodes included, as OpenFGL's
    # x_missing), their prototypes, the node's own prototype in an empty slot
    pool = np.repeat(proto_of[:, :, None, :], p, axis=2).copy()
    for k in range(c):
        for i in np.flatnonzero(nm[k]):
            hidden = [j for j in nbr[k, i, :deg[k, i]] if not keep[k, j] and nm[k, j]][:p]
            for s, j in enumerate(hidden):
                if hp.feddep_variant == "paper" or protos[k, cluster[k, j]].sum() >= 1e-15:
                    pool[k, i, s] = proto_of[k, j]
    rows, row_mask = padded_rows(np.asarray(b.train_mask) & keep)
    kidx, kmask = padded_rows(keep)
    # `prepare` puts the features in EllFeatures layout for the compiled rounds after this step (the
    # encoder above read them sparse), as for every algorithm registered with features="ell"
    return b, {"kidx": kidx, "kmask": kmask, "keep": keep, "missing": missing, "targets": targets.astype(np.float32),
               "pool": pool.astype(np.float32), "pool_mask": nm.copy(), "rows": rows, "row_mask": row_mask,
               "protos": protos, "cluster": cluster}


def feddep_pre_bytes(inp: HostInput, hp: FedDEPHParams) -> tuple[int, int]:
    """Bytes of the one-off prototype exchange, summed over clients: each client uploads its K
    prototypes (f32) and, per node, the prototype ids of its pool's P slots (int32); every client
    downloads the others'."""
    nodes = np.asarray(inp.batch.node_mask).sum(axis=1)
    per = hp.feddep_num_protos * hp.feddep_emb_dim * 4 + nodes * hp.feddep_num_pred * 4
    return int(per.sum()), int(sum(per.sum() - x for x in per))


# ----------------------------------------------------------------------------------- algorithm

@flax.struct.dataclass
class FedDEPState:
    round: jax.Array      # int32 scalar: rounds done
    server: PyTree        # the global classifier's "params" collection
    opt: PyTree           # [C_t, ...] the classifier's optimiser states
    mend: jax.Array       # [C, N, emb_dim] each client's generated-neighbour embedding (0 until round 0)
    hp: dict              # traced: lr
    aggregator: PyTree = None  # the server aggregator's state (`fgl_jax.aggregators`)


@register("algorithm", "feddep",
          dp_uncovered="its generator phase's exchange (embeddings and prototypes)",
          features="ell", hparams=FedDEPHParams, prepare=feddep_prepare, pre_communication=feddep_pre_bytes,
          paper="Zhang, Sun, Ding, Yiu, Yang, SDM 2024, arXiv:2401.04336",
          help="FedDEP: a generator of missing neighbours' embeddings trained against other clients' "
               "prototypes, then FedAvg of a GraphSAGE that reads them")
def feddep(model, common: FedConfig, hp: FedDEPHParams) -> FederatedAlgorithm:
    if common.eval_mode.endswith("global_data"):
        raise ValueError(f"feddep: eval_mode={common.eval_mode!r} has no generated neighbours for the global "
                         "graph; use a *_on_local_data mode")
    if hp.feddep_fanout and hp.feddep_variant != "openfgl":
        raise ValueError(f"feddep: feddep_fanout={hp.feddep_fanout} samples neighbours in the openfgl variant's "
                         "minibatch steps only; set feddep_variant=openfgl or feddep_fanout=0")
    f, p, emb_dim = int(model.in_dim), hp.feddep_num_pred, hp.feddep_emb_dim
    hidden, classes = int(model.hidden), int(model.num_classes)
    dropout = float(getattr(model, "dropout", 0.0))
    cls = DEPClassifier(f, hidden, classes, emb_dim, int(getattr(model, "num_layers", 2)), dropout, hp.feddep_init)
    dgen = DGen(f, hidden, classes, hp.feddep_latent, emb_dim, p, hp.feddep_gen_width, dropout)
    optimizer = make_optimizer(common.optim, lr=1.0)
    aggregator = server_aggregator(common)
    steps, openfgl = common.local_steps, hp.feddep_variant == "openfgl"
    local_mode = common.eval_mode == "local_model_on_local_data"

    def variables(params, mend):
        return {"params": params, "mend": {"emb": mend}}

    def init(key: jax.Array, data: FedData) -> FedDEPState:
        one = jax.tree.map(lambda a: a[0], data.eval)
        params = cls.init({"params": key, "dropout": key}, one, train=False)["params"]
        c, ct, n = data.eval.num_clients, data.train.num_clients, data.eval.num_nodes
        return FedDEPState(round=jnp.zeros((), jnp.int32), aggregator=aggregator.init(params), server=params, opt=stack(optimizer.init(params), ct),
                           mend=jnp.zeros((c, n, emb_dim), jnp.float32), hp={"lr": jnp.float32(common.optim.lr)})

    def evaluation(state: FedDEPState, data: FedData, trained=None) -> dict:
        c = data.eval.num_clients
        per = jax.tree.map(lambda s: jnp.broadcast_to(s, (c,) + s.shape), state.server)
        if local_mode and trained is not None:   # every client trains: `trained` itself, no [C, ...] copy
            per = scatter_clients(per, data.train_index, trained)
        return evaluate_models(cls, data, "local_model_on_local_data", local=variables(per, state.mend),
                               chunk=common.client_chunk, average=common.eval_average)

    def dep_round(state: FedDEPState, data: FedData, key: jax.Array):
        """Round 0: every training client trains its DGen and mends its graph."""
        ex, idx, ct = data.extra, data.train_index, data.train.num_clients
        c_all = data.eval.num_clients
        scale = state.hp["lr"] * lr_scale(common.optim, state.round)
        pool, pool_mask = ex["pool"][idx], ex["pool_mask"][idx]                          # [C_t, N, P, h], [C_t, N]

        def client(b, k, me, keep, missing, targets, rows, row_mask, kidx, kmask):
            imp = impaired_batch(b, keep)
            k_init, k_pre, k_dep, k_mend = jax.random.split(k, 4)
            params = dgen.init({"params": k_init, "dropout": k_init}, imp, k_init, train=False)
            m_true = jnp.clip(missing, 0, p).astype(jnp.int32)

            n = keep.shape[0]

            def forward(prm, kk):
                k_noise, k_drop = jax.random.split(kk)
                return dgen.apply(prm, imp, k_noise, True, kidx, kmask, rngs={"dropout": k_drop})

            def local_terms(d, g, logits):
                pc = jnp.clip(jnp.round(d), 0, p).astype(jnp.int32)
                l_d = smooth_l1(d[rows], missing[rows], row_mask)
                l_n = greedy_loss(g[rows], pc[rows], targets[rows], m_true[rows], row_mask, row_mask.sum())
                l_c = masked_cross_entropy(logits, b.y, imp.train_mask)
                return hp.feddep_beta_d * l_d + hp.feddep_beta_c * l_c + hp.feddep_beta_n * l_n

            def cross_terms(d, g, kk, weights=None):   # sum over the other training clients j of beta_n / C Greedy(g~, draws of j)
                pc = jnp.clip(jnp.floor(d), 0, p).astype(jnp.int32)      # OpenFGL: int cast

                def other(j, kj):
                    ku, ks = jax.random.split(kj)
                    live = pool_mask[j]
                    u = jax.random.choice(ku, n, (n,), p=live / jnp.maximum(live.sum(), 1))
                    s = jax.random.randint(ks, (n, p), 0, p)
                    tgt = pool[j][u[:, None], s]                                           # [N, P, h]
                    l = greedy_loss(g, pc, tgt, jnp.full((n,), p, jnp.int32), keep, keep.sum())
                    return jnp.where((j == me) | (live.sum() == 0), 0.0, l)

                ls = jax.vmap(other)(jnp.arange(ct), jax.random.split(kk, ct))
                return hp.feddep_beta_n / c_all * (ls.sum() if weights is None else (weights * ls).sum())

            def local_loss(prm, kk):
                return local_terms(*forward(prm, kk))

            def both_loss(prm, kk):   # one forward serves the local and the cross-client terms
                d, g, logits = forward(prm, kk)
                return local_terms(d, g, logits) / c_all + cross_terms(d, g, jax.random.fold_in(kk, 1))

            def train(prm, loss_fn, n_steps, kk, g_prev=None, amp=0.0):
                """`n_steps` optimiser steps from a fresh optimiser state -> (params, [n_steps] losses, last grad).

                g_prev: None, or OpenFGL's gradient buffers (`feddep_cross_grad=openfgl`): each step adds
                amp x the previous step's gradient, carried through the scan from g_prev; the last
                step's gradient is returned (None without g_prev, whose program has no such carry)."""
                def step(carry, ks):
                    w, o, gp = carry
                    val, g = jax.value_and_grad(loss_fn)(w, ks)
                    if gp is not None:
                        g = jax.tree.map(lambda a, b_: a + amp * b_, g, gp)
                    u, o = optimizer.update(g, o, w)
                    return (jax.tree.map(lambda a, b_: a + scale * b_, w, u), o, None if gp is None else g), val
                (prm, _, g_last), vals = jax.lax.scan(step, (prm, optimizer.init(prm), g_prev),
                                                      jax.random.split(kk, n_steps))
                return prm, vals, g_last

            if hp.feddep_cross_grad == "openfgl":   # OpenFGL's buffers: each step adds amp x the previous step's gradient
                w_cross, amp = openfgl_cross_weights(me, ct)

                def stale_loss(prm, kk):
                    d, g, logits = forward(prm, kk)
                    return local_terms(d, g, logits) / c_all + cross_terms(d, g, jax.random.fold_in(kk, 1), w_cross)

                zeros = jax.tree.map(jnp.zeros_like, params)
                params, vals, g_pre = train(params, local_loss, hp.feddep_pretrain_epochs, k_pre, zeros, 0.0)
                params, _, _ = train(params, stale_loss, hp.feddep_epochs, k_dep, g_pre, amp)
            else:
                params, vals, _ = train(params, local_loss, hp.feddep_pretrain_epochs, k_pre)
                params, _, _ = train(params, both_loss, hp.feddep_epochs, k_dep)
            loss0 = vals[0] if hp.feddep_pretrain_epochs else jnp.float32(0.0)
            d, g, _ = forward(params, k_mend)
            mend = jnp.where(keep[:, None], mend_embedding(g, d), 0.0)
            return mend, loss0

        mend, losses = map_clients(client, common.client_chunk)(
            data.train, jax.random.split(key, ct), jnp.arange(ct), ex["keep"][idx], ex["missing"][idx],
            ex["targets"][idx], ex["rows"][idx], ex["row_mask"][idx], ex["kidx"][idx], ex["kmask"][idx])
        state = dataclasses.replace(state, round=state.round + 1, mend=state.mend.at[idx].set(mend))
        metrics = evaluation(state, data)
        metrics["train_loss"] = weighted_loss(losses, data.train_weight)
        return state, metrics

    def fl_round(state: FedDEPState, data: FedData, key: jax.Array):
        """Rounds >= 1: FedAvg of the classifier on the mended graphs."""
        ex, idx, ct = data.extra, data.train_index, data.train.num_clients
        scale = state.hp["lr"] * lr_scale(common.optim, state.round)
        mend = state.mend[idx]
        start = stack(state.server, ct)

        drop = hp.feddep_local_dropout

        def ce(prm, b, e, mask, k):
            return masked_cross_entropy(cls.apply(variables(prm, e), b, train=drop, rngs={"dropout": k}), b.y, mask)

        def ce_sampled(prm, b, e, mask, k):   # feddep_fanout: a fresh neighbour draw per layer and step
            k_drop, k_nbr = jax.random.split(k)
            masks = [sample_in_edges(b.graph.receivers, b.edge_mask, hp.feddep_fanout, kk)
                     for kk in jax.random.split(k_nbr, cls.num_layers)]
            logits = cls.apply(variables(prm, e), b, train=drop, rngs={"dropout": k_drop}, edge_masks=masks)
            return masked_cross_entropy(logits, b.y, mask)

        if openfgl:   # one epoch of minibatches over the (shuffled) training nodes
            bs = hp.feddep_batch_size
            t = ex["rows"].shape[1]
            nb = -(-t // bs)

            def train(prm, o, b, e, rows, row_mask, k):
                k_perm, k_steps = jax.random.split(k)
                order = jnp.argsort(jnp.where(row_mask, jax.random.uniform(k_perm, (t,)), 2.0))
                order = jnp.concatenate([order, jnp.zeros((nb * bs - t,), order.dtype)])
                valid = jnp.concatenate([row_mask[order[:t]], jnp.zeros((nb * bs - t,), bool)])

                def step(carry, xs):
                    w, opt_s = carry
                    pos, ok, kk = xs
                    mask = jnp.zeros(b.y.shape, jnp.int32).at[rows[pos]].add(ok.astype(jnp.int32)) > 0
                    val, g = jax.value_and_grad(ce_sampled if hp.feddep_fanout else ce)(w, b, e, mask, kk)
                    u, o2 = optimizer.update(g, opt_s, w)
                    w2 = jax.tree.map(lambda a, b_: a + scale * b_, w, u)
                    any_ = ok.any()   # an empty batch (a client with fewer nodes) takes no step
                    w2, o2 = jax.tree.map(lambda x_new, x_old: jnp.where(any_, x_new, x_old), (w2, o2), (w, opt_s))
                    return (w2, o2), jnp.where(any_, val, jnp.nan)

                (prm, o), vals = jax.lax.scan(step, (prm, o), (order.reshape(nb, bs), valid.reshape(nb, bs),
                                                             jax.random.split(k_steps, nb)))
                return prm, o, vals[0]

            new, opt, losses = map_clients(train, common.client_chunk)(
                start, state.opt, data.train, mend, ex["rows"][idx], ex["row_mask"][idx], jax.random.split(key, ct))
            losses = jnp.nan_to_num(losses)
        else:
            def train(prm, o, b, e, k):
                loss = lambda w, bb, kk: ce(w, bb, e, bb.train_mask, kk)
                return local_train(loss, optimizer, steps, prm, o, b, k, scale)

            new, opt, losses = map_clients(train, common.client_chunk)(start, state.opt, data.train, mend,
                                                                      jax.random.split(key, ct))
        w = jnp.ones_like(data.train_weight) if openfgl else data.train_weight
        server, agg = aggregate(aggregator, state.aggregator, new, w, key, params=state.server)
        state = dataclasses.replace(state, round=state.round + 1, server=server, opt=opt, aggregator=agg)
        metrics = evaluation(state, data, trained=new)
        metrics["train_loss"] = weighted_loss(losses, data.train_weight)
        return state, metrics

    def reporting(phase):
        return prepared_phase(phase, "feddep", "pool", "feddep_prepare", common.optim)

    generator, federated = reporting(dep_round), reporting(fl_round)

    def round_fn(state: FedDEPState, data: FedData, key: jax.Array):
        # one program (sweeps, make_scan); `run` executes the phases below as two programs instead
        return jax.lax.cond(state.round == 0, generator, federated, state, data, key)

    # round 0: the generator phase (one program); rounds >= 1: FedAvg of the classifier (another)
    phases = (Phase(0, generator), Phase(1, federated))
    # per round (>= 1): the classifier each way; round 0's prototype exchange is `feddep_pre_bytes`
    return FederatedAlgorithm(init=init, round=round_fn, train_axis=("opt",),
                              messages=lambda s: (s.server, s.server), phases=phases)
