"""Local graph transformation with the information bottleneck (FedGC Eq. 4-10, Algorithm 1 line 6).

Every client trains its own encoder q(z|x) against a frozen shared decoder φ; Z (one draw of the
posterior, standardised per client) replaces the raw features for condensation and evaluation.
`ib_resample` draws a fresh Z from the same posterior (the attack's fresh-draw query).
"""
from __future__ import annotations

import dataclasses
import functools
import os
import threading
from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
import optax

from fgl_jax import ops
from fgl_jax.batch import ClientBatch
from fgl_jax.federated.ahead import Ahead, compile_ahead, program
from fgl_jax.federated.metrics import masked_cross_entropy
from fgl_jax.nn import make_model

Array = jax.Array
KL_ESTIMATORS = ("mc", "analytic")
DECODER_INITS = ("self_train", "random")


@dataclasses.dataclass(frozen=True)
class IBConfig:
    """Local graph transformation (spec §2.5). gamma = γ (the paper's trade-off, code `gib_beta`).

    hidden: width of the encoder's hidden layer (paper: d, i.e. W1 ∈ R^{d×d}); None = d.
    kl: "mc" (one-sample estimate, code) or "analytic".
    decoder_init: "self_train" (φ := φ_st, frozen; paper) or "random" (code).
    """

    gamma: float = 5e-4
    epochs: int = 100
    lr: float = 2e-3
    hidden: Optional[int] = None
    dim: Optional[int] = None       # dim(z); None = d (paper). Other values force a random decoder.
    kl: str = "mc"
    decoder_init: str = "self_train"
    decoder_hidden: int = 256
    decoder_dropout: float = 0.5

    def __post_init__(self):
        check_gamma(self.gamma)
        if self.epochs <= 0 or not self.lr > 0:
            raise ValueError(f"IBConfig: epochs and lr must be positive, got {self.epochs}, {self.lr}")
        if self.kl not in ("mc", "analytic"):
            raise ValueError(f"IBConfig.kl must be 'mc' or 'analytic', got {self.kl!r}")
        if self.decoder_init not in ("self_train", "random"):
            raise ValueError(f"IBConfig.decoder_init must be 'self_train' or 'random', got {self.decoder_init!r}")
        if self.dim is not None and self.dim <= 0:
            raise ValueError(f"IBConfig.dim must be positive or None, got {self.dim}")
        if self.hidden is not None and self.hidden <= 0:
            raise ValueError(f"IBConfig.hidden must be positive or None, got {self.hidden}")


def check_gamma(gamma: float) -> float:
    if not isinstance(gamma, (int, float)) or isinstance(gamma, bool) or not np.isfinite(gamma) or gamma < 0:
        raise ValueError(f"IB trade-off gamma must be a finite number >= 0, got {gamma!r}")
    return float(gamma)


def init_encoder(key: Array, in_dim: int, hidden: int, z_dim: Optional[int] = None) -> dict:
    """h = W2 ReLU(W1 x): W1 [d, hidden], W2 [hidden, 2·dim(z)] (dim(z) = d by default), with biases."""
    z_dim = z_dim or in_dim
    k1, k2, k3, k4 = jax.random.split(key, 4)
    s1, s2 = 1.0 / np.sqrt(in_dim), 1.0 / np.sqrt(hidden)
    u = lambda k, shape, s: jax.random.uniform(k, shape, jnp.float32, -s, s)
    return {"w1": u(k1, (in_dim, hidden), s1), "b1": u(k2, (hidden,), s1),
            "w2": u(k3, (hidden, 2 * z_dim), s2), "b2": u(k4, (2 * z_dim,), s2)}


def encode(enc: dict, batch: ClientBatch, key: Array):
    """Eq. 9-10: ẑ = Â (W2 ReLU(W1 x)), μ = ẑ[:, :d], σ = softplus(ẑ[:, d:]) + 1e-10, z = μ + σ ε.
    Â is applied on the narrower side of W2 (the product reassociated).

    batch: one client's slice (no client axis). Returns (z, μ, σ), each [N, d].
    """
    n = batch.y.shape[-1]
    d = enc["w2"].shape[1] // 2
    g = batch.graph
    h = jax.nn.relu(ops.feature_matmul(batch.features, enc["w1"], n) + enc["b1"])
    # μ and σ's pre-activation as two products with W2's column halves, not one product sliced
    # after: XLA:CPU fuses the slices' backward (a concatenate of the two cotangents) into the dot
    # and runs it element by element (the encoder's gradient took 2.3x as long; same floats up to
    # the dot's blocking)
    w_mu, w_sg, b_mu, b_sg = enc["w2"][:, :d], enc["w2"][:, d:], enc["b2"][:d], enc["b2"][d:]
    if h.shape[-1] < enc["w2"].shape[1]:
        # Â (h W2 + b2) = (Â h) W2 + (Â 1) b2: propagate at the hidden width, not at 2·dim(z)
        ones = jnp.ones((n, 1), h.dtype)
        zh = ops.gcn_propagate(jnp.concatenate([h, ones], 1), g.senders, g.receivers, batch.edge_mask, n)
        ah, a1 = zh[:, :-1], zh[:, -1:]
        mu, pre_sg = ah @ w_mu + a1 * b_mu, ah @ w_sg + a1 * b_sg
    else:
        prop = lambda x: ops.gcn_propagate(x, g.senders, g.receivers, batch.edge_mask, n)
        mu, pre_sg = prop(h @ w_mu + b_mu), prop(h @ w_sg + b_sg)
    sigma = jax.nn.softplus(pre_sg) + 1e-10
    z = mu + sigma * jax.random.normal(key, mu.shape, mu.dtype)
    return z, mu, sigma


def kl_mc(z: Array, mu: Array, sigma: Array, mask: Array) -> Array:
    """One-sample estimate of KL(N(μ,σ²) ‖ N(0,I)) (Eq. 7), mean over masked nodes, summed over dims:
    log N(z; μ, σ) − log N(z; 0, 1) = −log σ − (z−μ)²/(2σ²) + z²/2."""
    per = (-jnp.log(sigma) - 0.5 * jnp.square((z - mu) / sigma) + 0.5 * jnp.square(z)).sum(-1)
    m = mask.astype(per.dtype)
    return (per * m).sum() / jnp.maximum(m.sum(), 1.0)


def kl_analytic(mu: Array, sigma: Array, mask: Array) -> Array:
    """KL(N(μ,σ²) ‖ N(0,I)) = Σ_dims (σ² + μ² − 1)/2 − log σ, mean over masked nodes."""
    per = (0.5 * (jnp.square(sigma) + jnp.square(mu) - 1.0) - jnp.log(sigma)).sum(-1)
    m = mask.astype(per.dtype)
    return (per * m).sum() / jnp.maximum(m.sum(), 1.0)


class IBPosterior(NamedTuple):
    """What a client's encoder output at the epoch whose sample became Z: q(z|x) = N(μ, σ²) per node
    and the client's standardisation (Z = (z − mean)/std on real nodes). mu, sigma [M, N, d];
    mean, std [M, d]. Only the attack's fresh-sample query uses it: Z itself is one draw of q."""

    mu: Array
    sigma: Array
    mean: Array
    std: Array


@jax.jit
def ib_resample(key: Array, post: IBPosterior, node_mask: Array) -> Array:
    """A fresh draw of every client's Z from the same posterior and scaler:
    Z' = (μ + σ ε' − mean)/std, ε' ~ N(0, I), zero on padding. node_mask [M, N]; returns [M, N, d]."""
    z = post.mu + post.sigma * jax.random.normal(key, post.mu.shape, post.mu.dtype)
    return (z - post.mean[:, None]) / post.std[:, None] * node_mask[..., None].astype(z.dtype)


def ib_transform(key: Array, clients: ClientBatch, labels: Array, label_mask: Array, decoder_params,
                 num_classes: int, cfg: IBConfig, select: str = "val", in_dim: Optional[int] = None,
                 posterior: bool = False, ahead: Optional[Ahead] = None):
    """Every client trains its own encoder (never shared) against the frozen decoder φ (Eq. 8):
    loss = CE(GCN_φ(z, Â)[labelled], labels) + γ · KL; `epochs` Adam steps (lr 2e-3) on the encoder
    only; keeps the SAMPLED z of the epoch with the best own-validation accuracy (select="test"
    reproduces the code) and standardises it over the client's real nodes.

    clients: [M, ...] stacked local graphs (raw features); labels/label_mask: [M, N] (train ∪
    pseudo-labelled); decoder_params: φ (shared, frozen). Clients run sequentially (lax.map):
    the per-client encoder is d×hidden + hidden×2d, too large to vmap ten copies of on a CPU; on
    a multi-core CPU with an even number of clients, as two groups in two threads.
    in_dim: raw feature width (default: dim(z), the paper's setting).
    Returns (Z [M, N, dim(z)] standardised, zeros on padding; per-client final KL [M]), and with
    posterior=True also the `IBPosterior` of the kept epoch (the same Z either way).
    ahead: the handle `ib_precompile` returned (this program compiled ahead, in a thread), used when
    it was compiled for these arguments' shapes and setting; otherwise the program compiles here.
    """
    run, parts = _ib_call(key, clients, labels, label_mask, decoder_params, num_classes, cfg, select, in_dim,
                          posterior)
    fn = program(ahead, run, *parts[0])
    if len(parts) == 1:
        return fn(*parts[0])
    # the clients' encoders are independent: the halves run side by side in two threads (XLA:CPU
    # runs one program on about one core; the program releases the GIL)
    out = [None] * len(parts)

    def work(i):
        out[i] = jax.block_until_ready(fn(*parts[i]))
    threads = [threading.Thread(target=work, args=(i,), name=f"fedgc-ib-{i}") for i in range(1, len(parts))]
    for th in threads:
        th.start()
    work(0)
    for th in threads:
        th.join()
    if any(o is None for o in out):
        raise RuntimeError("IB: a client group's program failed")
    return jax.tree.map(lambda *a: jnp.concatenate(a), *out)


def ib_precompile(key: Array, clients: ClientBatch, labels, label_mask, decoder_params, num_classes: int,
                  cfg: IBConfig, select: str = "val", in_dim: Optional[int] = None, posterior: bool = False) -> Ahead:
    """Start compiling `ib_transform`'s program for arguments shaped like these (values unused:
    arrays or jax.ShapeDtypeStruct) in a background thread (XLA releases the GIL), so the IB's
    compilation overlaps the self-training that produces its labels and decoder. Returns the handle:
    `ib_transform(..., ahead=handle)` with these shapes runs that executable."""
    run, parts = _ib_call(key, clients, labels, label_mask, decoder_params, num_classes, cfg, select, in_dim,
                          posterior)
    return compile_ahead(run, *parts[0], name="fedgc-ib-compile")


def _ib_call(key, clients, labels, label_mask, decoder_params, num_classes, cfg, select, in_dim, posterior):
    """The jitted program and its arguments (every client's key split here, labels as int32)."""
    d = int(decoder_params["params"]["layer_0"]["kernel"].shape[0])  # dim(z)
    run = _ib_program(d, num_classes, cfg, select, in_dim or d, posterior)
    m = clients.y.shape[0]
    if isinstance(key, jax.ShapeDtypeStruct):
        keys = jax.ShapeDtypeStruct((m,) + key.shape, key.dtype)
    else:
        keys = jax.random.split(key, m)
    as_int = lambda a: (jax.ShapeDtypeStruct(a.shape, jnp.int32) if isinstance(a, jax.ShapeDtypeStruct)
                        else jnp.asarray(a, jnp.int32))
    args = (clients, as_int(labels), label_mask, keys)
    if not _split_clients(m):
        return run, [args + (decoder_params,)]
    h = m // 2

    def part(a, lo):
        if isinstance(a, jax.ShapeDtypeStruct):
            return jax.ShapeDtypeStruct((h,) + a.shape[1:], a.dtype)
        return a[lo:lo + h]
    return run, [jax.tree.map(lambda a: part(a, lo), args) + (decoder_params,) for lo in (0, h)]


def _split_clients(m: int) -> bool:
    """Two groups of clients in two threads: on a CPU backend with at least two cores and an even
    number of clients (both groups one compiled shape)."""
    return m >= 2 and m % 2 == 0 and jax.default_backend() == "cpu" and (os.cpu_count() or 1) >= 2


@functools.lru_cache(maxsize=8)
def _ib_program(d: int, num_classes: int, cfg: IBConfig, select: str, in_dim: int, posterior: bool):
    """`ib_transform`'s jitted program for one static setting; φ is an argument (not closed over,
    so XLA does not constant-fold through it and φ_st's program compiles before φ_st exists)."""
    hidden = cfg.hidden or d
    # z is propagated once per epoch at width dim(z) and the decoder's layer 0 is the product
    # (Â z) W (`pre_aggregated`), when dim(z) <= its hidden width: instead of two propagations
    # (train and selection forwards) at the hidden width. Same φ, the product reassociated.
    pre = d <= cfg.decoder_hidden
    decoder = make_model("gcn", d, num_classes, hidden=cfg.decoder_hidden, num_layers=2, dropout=cfg.decoder_dropout,
                         pre_aggregated=pre)
    opt = optax.adam(cfg.lr)
    gamma = check_gamma(cfg.gamma)

    def one_client(args, phi):
        b, lab, lmask, k = args
        k_init, k_run = jax.random.split(k)
        enc = init_encoder(k_init, in_dim, hidden, d)
        o = opt.init(enc)
        sel = b.val_mask if select == "val" else b.test_mask

        def step(carry, kk):
            enc, o, best, best_acc = carry  # best: (z,) or (z, μ, σ) of the best epoch so far
            k_eps, k_drop = jax.random.split(kk)

            def decoder_input(z):
                if not pre:
                    return b.replace(features=z)
                n = b.y.shape[-1]
                return b.replace(features=ops.gcn_propagate(z, b.graph.senders, b.graph.receivers, b.edge_mask, n))

            def loss(e):
                z, mu, sigma = encode(e, b, k_eps)
                zb = decoder_input(z)
                logits = decoder.apply(phi, zb, train=True, rngs={"dropout": k_drop})
                ce = masked_cross_entropy(logits, lab, lmask)
                kl = kl_mc(z, mu, sigma, b.node_mask) if cfg.kl == "mc" else kl_analytic(mu, sigma, b.node_mask)
                return ce + gamma * kl, (z, kl, mu, sigma, zb)

            (l, (z, kl, mu, sigma, zb)), g = jax.value_and_grad(loss, has_aux=True)(enc)
            logits = decoder.apply(phi, zb, train=False)
            acc = ((jnp.argmax(logits, -1) == b.y) & sel).sum() / jnp.maximum(sel.sum(), 1)
            better = acc > best_acc
            best = tuple(jnp.where(better, v, w) for v, w in zip((z, mu, sigma), best))
            u, o = opt.update(g, o, enc)
            return (optax.apply_updates(enc, u), o, best, jnp.where(better, acc, best_acc)), kl

        n = b.y.shape[-1]
        best0 = (jnp.zeros((n, d), jnp.float32),) * (3 if posterior else 1)
        init = (enc, o, best0, jnp.float32(-1.0))
        (_, _, best, _), kls = jax.lax.scan(step, init, jax.random.split(k_run, cfg.epochs))
        z = best[0]
        # per-client StandardScaler over its real local nodes
        m = b.node_mask[:, None].astype(z.dtype)
        cnt = jnp.maximum(m.sum(), 1.0)
        mean = (z * m).sum(0) / cnt
        std = jnp.sqrt((jnp.square(z - mean) * m).sum(0) / cnt)
        std = jnp.where(std > 0, std, 1.0)
        z = (z - mean) / std * m
        if posterior:
            return z, kls[-1], IBPosterior(best[1], best[2], mean, std)
        return z, kls[-1]

    @jax.jit
    def run(clients, labels, label_mask, keys, decoder_params):
        phi = jax.lax.stop_gradient(decoder_params)  # frozen: only the encoder is differentiated
        return jax.lax.map(lambda a: one_client(a, phi), (clients, labels, label_mask, keys))

    return run
