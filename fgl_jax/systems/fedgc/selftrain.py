"""Federated self-training (FedGC Algorithm 1 line 5; spec §2.4): FedSGD on the clients' training
nodes; its argmax labels the clients' own non-training nodes for the IB (or the PL baseline)."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import optax

from fgl_jax.batch import ClientBatch
from fgl_jax.reduce import client_mean
from fgl_jax.federated.metrics import masked_cross_entropy
from fgl_jax.nn import make_model

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
    server_opt = self_train_optimizer(optimizer, lr, weight_decay)
    mask_name = "val_mask" if select == "val" else "test_mask"

    def client(p, b):
        def loss(q):
            logits = model.apply(q, b, train=True)
            return masked_cross_entropy(logits, b.y, b.train_mask), logits
        (l, logits), g = jax.value_and_grad(loss, has_aux=True)(p)
        m = getattr(b, mask_name)
        return g, ((jnp.argmax(logits, -1) == b.y) & m).sum(), m.sum()

    @jax.jit
    def run(params, clients):  # clients as an argument: closed-over arrays would be constant-folded
        def body(carry, _):
            p, o, best_p, best_acc = carry
            g, correct, total = jax.vmap(client, in_axes=(None, 0))(p, clients)
            acc = correct.sum() / jnp.maximum(total.sum(), 1)  # accuracy of p (before this update)
            better = acc > best_acc
            best_p = jax.tree.map(lambda a, b: jnp.where(better, a, b), p, best_p)
            best_acc = jnp.where(better, acc, best_acc)
            # unweighted mean (code), summed client by client: XLA:CPU's reduce over the client axis of
            # [C, F, hidden] gradients is ~15x slower (see client_mean)
            u, o = server_opt.update(client_mean(g), o, p)
            p = optax.apply_updates(p, u)
            return (p, o, best_p, best_acc), None
        init = (params, server_opt.init(params), params, jnp.float32(-1.0))
        (p, _, best_p, best_acc), _ = jax.lax.scan(body, init, None, length=rounds + 1)
        preds = jax.vmap(lambda b: jnp.argmax(model.apply(best_p, b, train=False), -1))(clients)
        labels = jnp.where(clients.train_mask, clients.y, preds)
        return best_p, labels, best_acc

    best_p, labels, acc = run(params, clients)
    return best_p, labels, float(acc)
