"""HiFGL (Guo et al., KDD 2024): cross-silo cross-device FGL with Secret Message Passing.

Roles (spec §1): every node is a device, every subgraph a silo, one server. Devices hold their
features and neighbour lists; silos hold only device lists, a model and LCC parameters mu_i;
the server averages silo models. One round (spec §5.2 decision 8) =

  1. SecMP forward over the WHOLE federated graph, layer by layer (Fig. 3 / Algorithm 1):
       source device v:  m_v = (h_v W) / sqrt(deg_v)                                  (Eq. 2 + projection)
                         shares of m_v under the TARGET silo's mu, fresh masks z       (Eq. 4-5)
       target device u:  S_k(u) = sum_{v in N(u)} share_k(v)   (field sums, per share index)
       silo of u:        decodes the aggregate only: sum_v m_v  (lambda weights, exact in F_p)
       target device u:  h_u' = agg_u / sqrt(deg_u) [+ self term] + b, ReLU           (Eq. 3)
  2. per-silo losses (mean CE over each silo's training devices), per-silo gradients by a
     vmapped VJP; the backward pass is straight-through (forward = SecMP, VJP = plain GCN), spec 5.2.7
  3. each silo takes one optax (Adam) step with its own optimiser state       (Alg. 1 line 20)
  4. the server averages the silo models, unweighted                          (Alg. 1 line 23)

Privacy boundaries are visible in argument lists: `device_encode` sees one device's message and
the target silo's public encoding matrix; `device_aggregate` sees only coded shares;
`silo_decode` sees only per-target aggregates of shares and its own decoding weights;
`server_average` sees only silo parameters.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Optional

import flax
import jax
import jax.numpy as jnp
import numpy as np
import optax

from fgl_jax import ops
from fgl_jax.federated.algorithm import FederatedAlgorithm
from fgl_jax.federated.client import OptimConfig, lr_scale, make_optimizer
from fgl_jax.graph import Graph
from fgl_jax.nn import make_model
from fgl_jax.privacy import field as F
from fgl_jax.privacy import lcc
from fgl_jax import validate as V

PyTree = Any
MODES = ("field", "real", "plain")
NORMS = ("gcn_selfloop", "paper_eq23")
Z_MODES = ("fresh", "silo_fixed")


@dataclasses.dataclass(frozen=True)
class HiFGLConfig:
    """HiFGL hyperparameters (paper §6.1 and the spec's [DECIDE] defaults).

    mode: "field" = LCC over F_p with fixed-point quantisation (the method); "real" = the same
    coding over float64 (speed comparisons); "plain" = no coding (the reference computation).
    norm: "gcn_selfloop" (A + I, parity with Global-GCN; default) or "paper_eq23" (Eq. 2/3 literally).
    z_mode: "fresh" masks per message (default, spec 5.2.5) or "silo_fixed" (z inside mu, literal).
    """

    model: str = "gcn"
    hidden: int = 64
    num_layers: int = 2
    T: int = 1
    p: int = F.MERSENNE_31
    frac_bits: int = 16
    mode: str = "field"
    norm: str = "gcn_selfloop"
    z_mode: str = "fresh"
    optim: OptimConfig = OptimConfig(lr=0.01, gamma=0.9, decay_every=4)
    track_silo_acc: bool = False  # per-silo training accuracy every round (Fig. 4a); costs S forwards

    def __post_init__(self):
        V.one_of("HiFGLConfig", "model", self.model, ("gcn", "sage"))
        V.one_of("HiFGLConfig", "mode", self.mode, MODES)
        V.one_of("HiFGLConfig", "norm", self.norm, NORMS)
        V.one_of("HiFGLConfig", "z_mode", self.z_mode, Z_MODES)
        V.at_least("HiFGLConfig", "T", self.T, 1)  # the privacy threshold
        if self.mode == "field":
            F.validate_modulus(self.p)
            F.validate_frac_bits(self.frac_bits, self.p)
            if 2 * self.T + 2 >= self.p:
                raise ValueError(f"T={self.T} needs 2T+2={2 * self.T + 2} distinct nonzero field elements, "
                                 f"but the field has only {self.p - 1}")
        V.positive("HiFGLConfig", "hidden", self.hidden)
        V.positive("HiFGLConfig", "num_layers", self.num_layers)


@flax.struct.dataclass
class HiFGLData:
    """The federated graph as the devices hold it, plus silo membership (host-built, once).

    senders/receivers/edge_mask [E]: every directed edge, cross-silo ones included (devices keep them).
    features: [N, F] dense or SparseFeatures; y, train/val/test_mask [N]; silo [N] int32.
    silo_train [S, N] bool: each silo's training devices (whose gradients it averages).
    """

    senders: jax.Array
    receivers: jax.Array
    edge_mask: jax.Array
    features: Any
    y: jax.Array
    train_mask: jax.Array
    val_mask: jax.Array
    test_mask: jax.Array
    node_mask: jax.Array
    silo: jax.Array
    silo_train: jax.Array

    @property
    def num_nodes(self) -> int:
        return int(self.y.shape[0])

    @property
    def num_silos(self) -> int:
        return int(self.silo_train.shape[0])


def make_hifgl_data(graph: Graph, assignment: np.ndarray, num_silos: int) -> HiFGLData:
    """Host side: the full graph's arrays and each device's silo."""
    import scipy.sparse as sp
    assignment = np.asarray(assignment, np.int32)
    if assignment.shape != (graph.num_nodes,):
        raise ValueError(f"assignment has shape {assignment.shape}, expected ({graph.num_nodes},)")
    counts = np.bincount(assignment, minlength=num_silos)
    if (counts == 0).any():
        raise ValueError(f"silo(s) {np.flatnonzero(counts == 0).tolist()} have no device")
    if sp.issparse(graph.x):
        coo = sp.coo_matrix(graph.x)
        feats = ops.SparseFeatures(jnp.asarray(coo.row, jnp.int32), jnp.asarray(coo.col, jnp.int32),
                                   jnp.asarray(coo.data, jnp.float32))
    else:
        feats = jnp.asarray(graph.dense_x())
    labelled = graph.y >= 0
    train = graph.train_mask & labelled
    silo_train = np.stack([train & (assignment == i) for i in range(num_silos)])
    return HiFGLData(
        senders=jnp.asarray(graph.senders, jnp.int32), receivers=jnp.asarray(graph.receivers, jnp.int32),
        edge_mask=jnp.ones(graph.num_edges, bool), features=feats, y=jnp.asarray(np.where(labelled, graph.y, 0)),
        train_mask=jnp.asarray(train), val_mask=jnp.asarray(graph.val_mask & labelled),
        test_mask=jnp.asarray(graph.test_mask & labelled), node_mask=jnp.ones(graph.num_nodes, bool),
        silo=jnp.asarray(assignment), silo_train=jnp.asarray(silo_train))


# ------------------------------------------------------------------------------------------------
# The parties' functions (argument lists = what each party may see).
# ------------------------------------------------------------------------------------------------

def device_encode(message_q: jax.Array, masks: jax.Array, u_target: jax.Array, p: Optional[int]) -> jax.Array:
    """A source device encodes its quantised message under its target's silo matrix U (Eq. 4-5).

    message_q [d], masks [T, d], u_target [T+1, T+1] -> shares [T+1, d].
    """
    if p is None:
        return lcc.encode_real(message_q, masks, u_target)
    return lcc.encode(message_q, masks, u_target, p)


def device_aggregate(shares: jax.Array, receivers: jax.Array, num_nodes: int, p: Optional[int]) -> jax.Array:
    """Each target device adds, per share index, the coded shares it received: [T+1, E, d] -> [T+1, N, d]."""
    if p is None:
        return lcc.segment_sum_real(shares, receivers, num_nodes, axis=1)
    return lcc.field_segment_sum(shares, receivers, num_nodes, p, axis=1)


def silo_decode(coded_aggregate: jax.Array, lam: jax.Array, p: Optional[int]) -> jax.Array:
    """The device's silo decodes ONE aggregate with its own lambda: [T+1, d] -> [d] (Dec, §2.2)."""
    if p is None:
        return lcc.decode_real(coded_aggregate, lam)
    return lcc.decode(coded_aggregate, lam, p)


def server_average(silo_params: PyTree) -> PyTree:
    """FedAvg over silos, unweighted (Alg. 1 line 23): [S, ...] -> [...]."""
    return jax.tree.map(lambda a: a.mean(axis=0), silo_params)


@flax.struct.dataclass
class SiloCodes:
    """Per-silo LCC parameters: encoding matrices U [S, T+1, T+1] (shared with the devices that send to
    the silo's members), decoding weights lam [S, T+1] (used only by the silo), fixed masks
    z [S, T, d_max] for z_mode="silo_fixed" (unused otherwise)."""

    U: jax.Array
    lam: jax.Array
    z: jax.Array


def sample_codes(key: jax.Array, cfg: HiFGLConfig, num_silos: int, width: int) -> SiloCodes:
    if cfg.mode == "plain":  # no coding: placeholders keep the state's structure
        t1 = cfg.T + 1
        return SiloCodes(jnp.zeros((num_silos, t1, t1)), jnp.zeros((num_silos, t1)),
                         jnp.zeros((num_silos, cfg.T, width)))
    keys = jax.random.split(key, num_silos + 1)
    us, lams = [], []
    for i in range(num_silos):  # host-side, once per run
        mu = lcc.sample_mu(keys[i], cfg.T, cfg.p) if cfg.mode == "field" else lcc.sample_mu_real(keys[i], cfg.T)
        us.append(lcc.encode_matrix(mu))
        lams.append(lcc.decode_coeffs(mu))
    with F.x64():
        if cfg.mode == "field":
            z = lcc.sample_masks(keys[-1], cfg.T, (num_silos, width), cfg.p)
        else:
            z = lcc.sample_masks_real(keys[-1], cfg.T, (num_silos, width))
        return SiloCodes(jnp.stack(us), jnp.stack(lams), jnp.moveaxis(z, 0, 1))


def secure_neighbour_sum(messages: jax.Array, data: HiFGLData, codes: SiloCodes, cfg: HiFGLConfig,
                         key: jax.Array) -> tuple[jax.Array, jax.Array]:
    """sum_{v in N(u)} messages_v for every device u, computed through SecMP. [N, d] -> [N, d] float32.

    Also returns an overflow flag: True if any aggregate leaves the fixed-point range of the field.
    """
    n, d = messages.shape
    e = data.senders.shape[0]
    p = cfg.p if cfg.mode == "field" else None
    with F.x64():
        if p is not None:
            plain_sum = jax.ops.segment_sum(jnp.abs(messages)[data.senders], data.receivers, num_segments=n)
            overflow = F.overflow_flag(plain_sum, cfg.frac_bits, p)
            msg = F.quantize(messages, cfg.frac_bits, p)
        else:
            overflow = jnp.array(False)
            msg = messages.astype(jnp.float64)
        target_silo = data.silo[data.receivers]
        if cfg.z_mode == "fresh":
            z = lcc.sample_masks(key, cfg.T, (e, d), p) if p is not None else lcc.sample_masks_real(key, cfg.T, (e, d))
        else:
            z = jnp.moveaxis(codes.z[target_silo][:, :, :d], 1, 0)
        shares = jax.vmap(device_encode, in_axes=(0, 1, 0, None), out_axes=1)(
            msg[data.senders], z, codes.U[target_silo], p)                   # [T+1, E, d]
        shares = jnp.where(data.edge_mask[None, :, None], shares, 0)       # padded edges send nothing
        coded = device_aggregate(shares, data.receivers, n, p)             # [T+1, N, d]
        decoded = jax.vmap(silo_decode, in_axes=(1, 0, None))(coded, codes.lam[data.silo], p)  # [N, d]
        out = F.dequantize(decoded, cfg.frac_bits, p) if p is not None else decoded.astype(jnp.float32)
    return out.astype(jnp.float32), overflow


def _layers(params: PyTree, data: HiFGLData, codes: SiloCodes, cfg: HiFGLConfig, key: jax.Array,
            secure: bool) -> tuple[jax.Array, jax.Array]:
    """The K-layer network; neighbour sums through SecMP when `secure`, else plain segment sums."""
    p = params["params"]
    n = data.num_nodes
    s, r, m = data.senders, data.receivers, data.edge_mask.astype(jnp.float32)
    deg = jax.ops.segment_sum(m, r, num_segments=n)
    overflow = jnp.array(False)
    h = data.features
    keys = jax.random.split(key, cfg.num_layers)
    for i in range(cfg.num_layers):
        last = i == cfg.num_layers - 1
        proj = ops.feature_matmul(h, p[f"layer_{i}"]["kernel"], n)  # source-side projection (spec 5.2.2)
        if cfg.model == "gcn":
            d_hat = deg + 1.0 if cfg.norm == "gcn_selfloop" else jnp.maximum(deg, 1.0)
            msg = proj * jax.lax.rsqrt(d_hat)[:, None]                  # Eq. 2
        else:
            w = proj.shape[1] // 2
            msg = proj[:, w:]                                           # SAGE: degree-free source side
        if secure:
            agg, flag = secure_neighbour_sum(msg, data, codes, cfg, keys[i])
            overflow = overflow | flag
        else:
            agg = jax.ops.segment_sum(msg[s] * m[:, None], r, num_segments=n)
        if cfg.model == "gcn":
            h = agg * jax.lax.rsqrt(d_hat)[:, None]                    # Eq. 3
            if cfg.norm == "gcn_selfloop":
                h = h + msg * jax.lax.rsqrt(d_hat)[:, None]              # self-loop term, added by u itself
        else:
            h = proj[:, :w] + agg / jnp.maximum(deg, 1.0)[:, None]      # root term + mean of neighbours
        h = h + p[f"bias_{i}"]                                          # bias after decoding (spec 5.2.3)
        if not last:
            h = jax.nn.relu(h)
    return h, overflow


def forward(params: PyTree, data: HiFGLData, codes: SiloCodes, cfg: HiFGLConfig, key: jax.Array,
            secure: bool = True) -> tuple[jax.Array, jax.Array]:
    """Logits [N, C] of the GCN/SAGE over the whole federated graph, and an overflow flag.

    Forward values are the SecMP computation (every layer's neighbour sums through the LCC
    pipeline); the backward pass is the plain network's VJP exactly (spec 5.2.7, straight-through:
    out = plain + stop_gradient(secmp - plain)), since backpropagation across devices is unspecified.
    """
    plain, _ = _layers(params, data, codes, cfg, key, secure=False)
    if not secure or cfg.mode == "plain":
        return plain, jnp.array(False)
    sec, overflow = _layers(jax.lax.stop_gradient(params), data, codes, cfg, key, secure=True)
    return plain + jax.lax.stop_gradient(sec - plain), overflow


@flax.struct.dataclass
class HiFGLState:
    round: jax.Array
    params: PyTree          # the global model theta broadcast to every silo
    opt: PyTree             # per-silo optimiser states [S, ...]
    codes: SiloCodes        # per-silo mu (U, lam, fixed z)
    hp: dict


def _accuracies(logits: jax.Array, data: HiFGLData) -> dict:
    correct = jnp.argmax(logits, -1) == data.y
    out = {}
    for split in ("train", "val", "test"):
        mask = getattr(data, f"{split}_mask")
        out[f"{split}_acc"] = ((correct & mask).sum() / jnp.maximum(mask.sum(), 1)).astype(jnp.float32)
    ce = optax.softmax_cross_entropy_with_integer_labels(logits, data.y)
    out["val_loss"] = ((ce * data.val_mask).sum() / jnp.maximum(data.val_mask.sum(), 1)).astype(jnp.float32)
    return out


def hifgl(cfg: HiFGLConfig, in_dim: int, num_classes: int) -> FederatedAlgorithm:
    """HiFGL as a FederatedAlgorithm over HiFGLData."""
    model = make_model(cfg.model, in_dim, num_classes, hidden=cfg.hidden, num_layers=cfg.num_layers)
    optimizer = make_optimizer(cfg.optim, lr=1.0)  # LR applied as a traced multiplier (sweepable)

    def init(key, data: HiFGLData) -> HiFGLState:
        # the model key is used exactly as the baselines use theirs, so equal seeds give equal θ^(0)
        k_model, k_codes = key, jax.random.fold_in(key, 1)
        # the same parameter layout as fgl_jax.nn's GCN/SAGE, so Global and HiFGL share initialisations
        dummy = _dummy_batch(data)
        params = model.init({"params": k_model, "dropout": k_model}, dummy)
        # float32 even when traced under x64 (the field arithmetic alone needs int64)
        params = jax.tree.map(lambda a: a.astype(jnp.float32), params)
        codes = sample_codes(k_codes, cfg, data.num_silos, max(cfg.hidden, num_classes) * 2)
        opt = jax.tree.map(lambda a: jnp.broadcast_to(a, (data.num_silos,) + a.shape), optimizer.init(params))
        return HiFGLState(jnp.zeros((), jnp.int32), params, opt, codes, {"lr": jnp.float32(cfg.optim.lr)})

    def round_fn(state: HiFGLState, data: HiFGLData, key: jax.Array):
        k_train, k_eval = jax.random.split(key)

        def silo_losses(params):
            logits, overflow = forward(params, data, state.codes, cfg, k_train)
            ce = optax.softmax_cross_entropy_with_integer_labels(logits, data.y)     # per device loss l_j
            st = data.silo_train.astype(jnp.float32)
            return (st @ ce) / jnp.maximum(st.sum(1), 1.0), overflow             # mean over silo's devices

        losses, vjp, overflow = jax.vjp(silo_losses, state.params, has_aux=True)
        # one forward, S backward passes vmapped: row i of the identity selects silo i's loss
        grads = jax.vmap(lambda ct: vjp(ct)[0])(jnp.eye(data.num_silos, dtype=losses.dtype))
        scale = state.hp["lr"] * lr_scale(cfg.optim, state.round)

        def silo_step(g, o):  # each silo: one optimiser step from the shared theta (Alg. 1 line 20)
            upd, o = optimizer.update(g, o, state.params)
            return optax.apply_updates(state.params, jax.tree.map(lambda u: u * scale, upd)), o

        silo_params, opt = jax.vmap(silo_step)(grads, state.opt)
        params = server_average(silo_params)
        logits, overflow_eval = forward(params, data, state.codes, cfg, k_eval)
        metrics = _accuracies(logits, data)
        metrics["train_loss"] = losses.mean()
        metrics["field_overflow"] = (overflow | overflow_eval).astype(jnp.float32)
        if cfg.track_silo_acc:
            metrics["silo_train_acc"] = _silo_train_acc(silo_params, data, state.codes, cfg, k_eval)
        metrics["lr"] = scale
        return HiFGLState(state.round + 1, params, opt, state.codes, state.hp), metrics

    return FederatedAlgorithm(init=init, round=round_fn, needs_x64=cfg.mode != "plain")


def _silo_train_acc(silo_params, data, codes, cfg, key) -> jax.Array:
    """Training accuracy of each silo's model on its own devices (Fig. 4a), plain forward. [S]."""
    def one(params, mask):
        logits, _ = forward(params, data, codes, cfg, key, secure=False)
        return (((jnp.argmax(logits, -1) == data.y) & mask).sum() / jnp.maximum(mask.sum(), 1)).astype(jnp.float32)
    return jax.vmap(one)(silo_params, data.silo_train)


def _dummy_batch(data: HiFGLData):
    """A one-graph ClientBatch view, only for flax parameter initialisation (shapes)."""
    import jraph
    from fgl_jax.batch import ClientBatch
    n = data.num_nodes
    gt = jraph.GraphsTuple(nodes=None, edges=None, globals=None, senders=data.senders, receivers=data.receivers,
                           n_node=jnp.array([n]), n_edge=jnp.array([data.senders.shape[0]]))
    return ClientBatch(graph=gt, features=data.features, y=data.y, node_mask=data.node_mask,
                       edge_mask=data.edge_mask, train_mask=data.train_mask, val_mask=data.val_mask,
                       test_mask=data.test_mask, node_ids=jnp.arange(n), client_mask=jnp.ones((1,), bool))


# ------------------------------------------------------------------------------------------------
# Command line: `fgl-jax hifgl ...`
# ------------------------------------------------------------------------------------------------

def register_cli(subparsers) -> None:
    p = subparsers.add_parser("hifgl", help="HiFGL: Secret Message Passing over silos of devices")
    p.add_argument("--dataset", default="cora")
    p.add_argument("--data-dir", default=None)
    p.add_argument("--model", default="gcn", choices=["gcn", "sage"])
    p.add_argument("--silos", type=int, default=5)
    p.add_argument("--rounds", type=int, default=50)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--T", type=int, default=1)
    p.add_argument("--frac-bits", type=int, default=16)
    p.add_argument("--mode", default="field", choices=list(MODES))
    p.add_argument("--norm", default="gcn_selfloop", choices=list(NORMS))
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None)
    p.add_argument("--resume", action="store_true")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=_cli_main)


def hifgl_split(graph: Graph, seed: int = 0) -> Graph:
    """FederatedScope's random Planetoid split used by the paper (spec §4): 60/20/20 per-class caps."""
    from fgl_jax.data import per_class_split
    n, c = graph.num_nodes, graph.num_classes
    return per_class_split(graph, int(round(0.6 * n / c)), int(round(0.2 * n)), seed=seed)


def _cli_main(args) -> int:
    from fgl_jax.data import load
    from fgl_jax.federated import run
    from fgl_jax.partition import random_partition
    graph = hifgl_split(load(args.dataset, data_dir=args.data_dir))
    part = random_partition(graph, args.silos, seed=0)
    data = make_hifgl_data(graph, part.assignment, args.silos)
    cfg = HiFGLConfig(model=args.model, hidden=args.hidden, num_layers=args.layers, T=args.T,
                      frac_bits=args.frac_bits, mode=args.mode, norm=args.norm,
                      optim=OptimConfig(lr=args.lr, gamma=0.9, decay_every=4))
    alg = hifgl(cfg, graph.num_features, graph.num_classes)
    res = run(alg, data, jax.random.key(args.seed), args.rounds, progress=not args.no_progress, out_dir=args.out,
              resume=args.resume)
    print(f"HiFGL-{args.model} on {args.dataset}, {args.silos} silos, {args.rounds} rounds, mode={args.mode}")
    print(f"best-val round {res.best['best_round']}: val_acc={res.best['best_val']:.4f} "
          f"test_acc={res.best['best_test']:.4f}; compile {res.compile_seconds:.1f} s, run {res.run_seconds:.1f} s")
    return 0


def build_program(options: dict, data_dir: Optional[str] = None):
    """HiFGL as a `fgl_jax.federated.Program` from the `fgl-jax hifgl` options (argparse dests):
    dataset, data_dir, model, silos, rounds, hidden, layers, T, frac_bits, mode, norm, lr, seed.

    The same data and algorithm as `fgl-jax hifgl` builds (FederatedScope split, random silos with
    seed 0), so `run(program.algorithm, program.data, key(seed), program.num_rounds)` gives the same
    numbers; `state.hp` holds `lr` (sweepable). Missing keys take the CLI defaults.
    """
    from fgl_jax.data import load
    from fgl_jax.federated import Program
    from fgl_jax.partition import random_partition
    defaults = {"dataset": "cora", "data_dir": None, "model": "gcn", "silos": 5, "rounds": 50, "hidden": 64,
                "layers": 2, "T": 1, "frac_bits": 16, "mode": "field", "norm": "gcn_selfloop", "lr": 0.01, "seed": 0}
    from fgl_jax.sysconfig import merge_options, require_at_least_one
    o = merge_options("hifgl", options, defaults)
    require_at_least_one("hifgl", o, ("silos", "rounds"))
    graph = hifgl_split(load(o["dataset"], data_dir=data_dir if data_dir is not None else o["data_dir"]))
    part = random_partition(graph, int(o["silos"]), seed=0)
    data = make_hifgl_data(graph, part.assignment, int(o["silos"]))
    cfg = HiFGLConfig(model=o["model"], hidden=int(o["hidden"]), num_layers=int(o["layers"]), T=int(o["T"]),
                      frac_bits=int(o["frac_bits"]), mode=o["mode"], norm=o["norm"],
                      optim=OptimConfig(lr=float(o["lr"]), gamma=0.9, decay_every=4))
    return Program(hifgl(cfg, graph.num_features, graph.num_classes), data, int(o["rounds"]),
                   {"method": f"HiFGL-{o['model']}", "dataset": o["dataset"], "silos": int(o["silos"]),
                    "mode": o["mode"], "T": int(o["T"])})
