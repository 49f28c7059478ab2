"""Federated self-training (FedGC Algorithm 1 line 5; spec §2.4): FedSGD on the clients' training
nodes; its argmax labels the clients' own non-training nodes for the IB (or the PL baseline).

Simulation shortcut (same numbers up to float reassociation): in FedSGD every client takes its
gradient at the same broadcast φ, and the server's plain mean of the M gradients is the gradient
of the mean of the M losses. The first GCN layer's product X W1 is the same for a node in every
client that holds it (the 2-hop expansions overlap: on Cora the 10 local graphs hold ~4x the 2,708
nodes), so it is taken once over the distinct nodes (`shared_rows`) and each client gathers its
rows; the weight gradient is then one sparse contraction over the distinct nodes instead of one
per client copy. The loss and the selection accuracy read only the training and selection nodes'
logits, so each propagation sums only the edges into the rows the next step reads (`target_edges`).

Host-side preparation, not a run of the engine (docs/architecture.md, "One round body"): this
federated loop runs while FedGC's Program is built (`data.prepare`), because its output, φ_st and the
pseudo-labels, is an input of the condensation that makes the Program's data. It keeps the round with
the best selection accuracy's *parameters* (`best_p` in its scan), which the engine's tracker, keeping
metrics only, does not carry (a model copy in the tracker would sit in every run's state and
checkpoints), and its result is shared between cells through the prepared-data cache. Going through
`fgl_jax.run` would cost a second Program per cell with its own run directory and a parameter tracker
for this one loop.
"""
from __future__ import annotations

import functools
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
import optax
import scipy.sparse as sp

from fgl_jax import ops

from fgl_jax.batch import ELL_MAX_GROUPS, ELL_UNROLL, ClientBatch
from fgl_jax.federated.metrics import masked_cross_entropy
from fgl_jax.nn import make_model
from fgl_jax.systems.fedgc.rows import closed_neighbourhoods, pad_lists, propagate_into

Array = jax.Array
OPTIMIZERS = ("sgd", "adam")


def self_train_optimizer(optimizer: str = "sgd", lr: float = 1.0, weight_decay: float = 0.0):
    """The server's update rule on the mean client gradient g: SGD or Adam on g + wd·φ (torch-style
    L2 weight decay, as torch.optim's `weight_decay`)."""
    if optimizer not in ("sgd", "adam"):
        raise ValueError(f"self-training optimizer must be 'sgd' or 'adam', got {optimizer!r}")
    if not weight_decay >= 0:
        raise ValueError(f"self-training weight_decay must be >= 0, got {weight_decay!r}")
    opt = optax.sgd(lr) if optimizer == "sgd" else optax.adam(lr)
    return optax.chain(optax.add_decayed_weights(weight_decay), opt) if weight_decay else opt


@functools.lru_cache(maxsize=8)
def _program(in_dim: int, num_classes: int, hidden: int, rounds: int, optimizer: str, lr: float,
             weight_decay: float, mask_name: str, n_rows: int, m: int, n: int) -> Callable:
    """self_train's jitted FedSGD run for one configuration, built once per process: a second
    call (another seed, another test) finds its trace instead of tracing and compiling anew."""
    model = make_model("gcn", in_dim, num_classes, hidden=hidden, num_layers=2, dropout=0.0)
    server_opt = self_train_optimizer(optimizer, lr, weight_decay)

    def mean_loss(p, rows, pick, clients, edges):
        """(1/M) Σ_j NLL_j(φ) (its gradient is the server's mean of the clients' FedSGD gradients)
        and each client's (correct, total) on its selection mask, from one forward."""
        q = p["params"]
        xw = ops.feature_matmul(rows, q["layer_0"]["kernel"], n_rows)  # X W1 once per distinct node

        xi = ops.feature_matmul(pick, xw, m * n).reshape(m, n, -1)   # xw[index], exactly

        def client(b, xw_b, edges):
            logits = gcn_from_projection(q, xw_b, b, edges)
            m = getattr(b, mask_name)
            return (masked_cross_entropy(logits, b.y, b.train_mask),
                    ((jnp.argmax(logits, -1) == b.y) & m).sum(), m.sum())

        losses, correct, total = jax.vmap(client)(clients, xi, edges)
        return losses.mean(), (correct, total)

    @jax.jit
    def run(params, rows, pick, clients, edges):  # data as arguments: closed-over arrays would be constant-folded
        def body(carry, _):
            p, o, best_p, best_acc = carry
            g, (correct, total) = jax.grad(mean_loss, has_aux=True)(p, rows, pick, clients, edges)
            acc = correct.sum() / jnp.maximum(total.sum(), 1)  # accuracy of p (before this update)
            better = acc > best_acc
            best_p = jax.tree.map(lambda a, b: jnp.where(better, a, b), p, best_p)
            best_acc = jnp.where(better, acc, best_acc)
            u, o = server_opt.update(g, o, p)
            p = optax.apply_updates(p, u)
            return (p, o, best_p, best_acc), None
        init = (params, server_opt.init(params), params, jnp.float32(-1.0))
        (p, _, best_p, best_acc), _ = jax.lax.scan(body, init, None, length=rounds + 1)
        preds = jax.vmap(lambda b: jnp.argmax(model.apply(best_p, b, train=False), -1))(clients)
        labels = jnp.where(clients.train_mask, clients.y, preds)
        return best_p, labels, best_acc

    return run


def self_train(key: Array, clients: ClientBatch, in_dim: int, num_classes: int, rounds: int = 500,
               lr: float = 1.0, hidden: int = 256, select: str = "val", optimizer: str = "sgd",
               weight_decay: float = 0.0):
    """φ_st by FedSGD: every round each client's full-batch ∇ NLL on its own training nodes, the
    server's unweighted mean, φ -= lr · mean. Keeps the round with the best pooled `select`
    accuracy ("val"; "test" reproduces the code). Returns (φ_st, pseudo labels [M, N], best acc).

    Pseudo-labels: argmax φ_st on each client's own non-training nodes; ground truth stays on the
    training nodes (never overwritten).
    """
    model = make_model("gcn", in_dim, num_classes, hidden=hidden, num_layers=2, dropout=0.0)
    one = jax.tree.map(lambda a: a[0], clients)
    params = model.init(key, one, train=False)
    mask_name = "val_mask" if select == "val" else "test_mask"
    rows, index = shared_rows(clients)
    n_rows = int(index.max()) + 1
    if isinstance(rows, ops.SparseFeatures):
        # gather-only layout: XLA:CPU runs the COO product's segment sum and its transpose's
        # scatter element by element (X W1 and its gradient at width 256 took ~6x as long)
        rows = jax.tree.map(jnp.asarray, ops.ell_features(rows.row, rows.col, rows.val, n_rows, in_dim,
                                                          max_groups=ELL_MAX_GROUPS, unroll=ELL_UNROLL))
    m, n = index.shape
    # each client slot's row of X W1 as the product with a 0/1 selection matrix [M·N, G] in the
    # gather-only layout: its transpose (the gradient's sum over a node's client copies) is then
    # gathers too, not the scatter-add autodiff makes of `xw[index]` (~4x slower on XLA:CPU)
    pick = jax.tree.map(jnp.asarray, ops.ell_features(np.arange(m * n), index.ravel(), np.ones(m * n, np.float32),
                                                      m * n, n_rows, max_groups=ELL_MAX_GROUPS, unroll=ELL_UNROLL))
    edges = target_edges(clients, mask_name)

    run = _program(in_dim, num_classes, hidden, rounds, optimizer, float(lr), float(weight_decay), mask_name,
                   n_rows, m, n)
    best_p, labels, acc = run(params, rows, pick, clients, edges)
    return best_p, labels, float(acc)


def target_edges(clients: ClientBatch, select_mask: str) -> tuple:
    """The edges FedSGD's forward needs (host, NumPy): with T = train ∪ selection nodes, the edges into
    T ∪ N(T) (layer 1) and into T (layer 2); the loss and the selection accuracy read only T's logits.
    Returns (e1, m1, e2, m2): edge indices int32 [M, E_l] into the client's edge list and their
    validity masks, padded per layer to the largest client."""
    t = np.asarray(clients.train_mask, bool) | np.asarray(getattr(clients, select_mask), bool)
    _, e2, e1 = closed_neighbourhoods(clients.graph.senders, clients.graph.receivers, clients.edge_mask, t)
    return tuple(jnp.asarray(a) for a in (*pad_lists(e1), *pad_lists(e2)))


def gcn_from_projection(q: dict, xw: Array, b: ClientBatch, edges: tuple = None) -> Array:
    """Logits [N, C] of `fgl_jax.nn`'s 2-layer GCN (dropout 0) on one client slice `b`, given the
    first layer's product xw = X W1 [N, H]: Â xw + b0, ReLU, Â (h W2) + b1 (the model's own order;
    tests/test_fedgc_ib_attack.py checks it against `model.apply`). q: the params' "params" dict.
    edges: one client's (e1, m1, e2, m2) of `target_edges`: each propagation sums only the edges
    into the rows the next step reads (Â's degrees still from all edges); the logits are then
    exact on T and meaningless elsewhere. None = all edges."""
    n = b.y.shape[-1]
    s, r, em = b.graph.senders, b.graph.receivers, b.edge_mask

    def prop(h, e=None, ok=None):
        return ops.gcn_propagate(h, s, r, em, n) if e is None else propagate_into(h, s, r, em, n, e, ok)

    e1, m1, e2, m2 = edges if edges is not None else (None,) * 4
    h = jax.nn.relu(prop(xw, e1, m1) + q["bias_0"])
    return prop(h @ q["layer_1"]["kernel"], e2, m2) + q["bias_1"]


def shared_rows(clients: ClientBatch):
    """The clients' feature rows with every source node once (host, NumPy).

    clients: stacked client graphs whose `node_ids` name each row's node in a common graph.
    Returns (rows, index): rows = the distinct nodes' features plus one empty row that every padding
    slot shares (SparseFeatures when the clients' are, else dense [G, F]); index int32 [M, N] = each
    client slot's row, so clients.features[j] == rows[index[j]] row by row. When the ids do not name
    one feature row each, no row is shared (every slot keeps its own).
    """
    ids = np.asarray(clients.node_ids).astype(np.int64)
    real = np.asarray(clients.node_mask, bool)
    m, n = ids.shape
    feats = clients.features
    sparse = isinstance(feats, ops.SparseFeatures)
    if sparse:
        r, c, v = (np.asarray(a) for a in (feats.row, feats.col, feats.val))
        f = int(c.max()) + 1 if c.size else 1
        local = [sp.csr_matrix((v[j], (r[j], c[j])), shape=(n, f)) for j in range(m)]
        for x in local:
            x.eliminate_zeros()  # padded entries carry 0
        stacked = sp.vstack(local, format="csr")                      # slot j*n + i
    else:
        stacked = np.asarray(feats).reshape(m * n, -1)

    def differ(rows, inv):
        if sparse:
            return bool((stacked - rows[inv]).count_nonzero())
        return not np.array_equal(stacked, rows[inv])

    slot = np.arange(m * n).reshape(m, n)
    lowest = np.iinfo(np.int64).min                                   # every padding slot: one key
    for key in (np.where(real & (ids >= 0), ids, -1 - slot), -1 - slot):  # shared ids, else none shared
        key = np.where(real, key, lowest).ravel()
        _, first, inv = np.unique(key, return_index=True, return_inverse=True)
        rows = stacked[first]
        if not differ(rows, inv.ravel()):                              # ids name one row each
            break
    inv = inv.reshape(m, n)
    index = inv.astype(np.int32)
    if sparse:
        coo = rows.tocoo()
        out = ops.SparseFeatures(jnp.asarray(coo.row, jnp.int32), jnp.asarray(coo.col, jnp.int32),
                                 jnp.asarray(coo.data, jnp.float32))
    else:
        out = jnp.asarray(rows, jnp.float32)
    return out, index
