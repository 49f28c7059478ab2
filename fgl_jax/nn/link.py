"""Link prediction model: a GNN encoder (any registered model) and a pair decoder.

    model = LinkModel(make_model("gcn", in_dim, num_classes=64), decoder="dot")
    z = model.apply(params, batch)                                  # node embeddings [N, D]
    s = model.apply(params, z, src, dst, method="score")            # pair logits [P]

The encoder is the node model with its output width set to the embedding size (its last layer's
output, no activation, is the embedding, as in PyG's and OGB's link prediction examples); the
decoder turns two embeddings into one logit:

    dot : s(u, v) = <z_u, z_v>                                        (no parameters; GAE's)
    mlp : s(u, v) = w2 . relu(W1 (z_u * z_v) + b1) + b2              (OGB's LinkPredictor, 2 layers)

`task = "link_pred"` tells the shared client functions (`fgl_jax.federated.client.node_loss_fn`,
`fgl_jax.federated.evaluation.evaluate`) to train and evaluate on `ClientBatch.pairs` instead of
node labels, so every algorithm that uses them needs no link-prediction copy.

Parameters live under `encoder` (layers `layer_i`, as the node models: FedPer keeps the encoder's
last layers local) and `dec_hidden` / `dec_out` (names without a layer number: always shared).

Shapes: N nodes, D embedding width, P scored node pairs.
"""
from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

DECODERS = ("dot", "mlp")
NEGATIVES = ("resample", "fixed")


class LinkModel(nn.Module):
    """A link-prediction model: encoder(batch) -> z `[N, D]`; score(z, src `[P]`, dst `[P]`) -> logits `[P]`.

    Also carries how the task is trained and reported (`train_negatives`, `hits_k`), so the
    shared loss and evaluation read one object.

    Attributes:
        encoder: a node model giving embeddings `[N, D]` (e.g. `make_model("gcn", ...)`).
        decoder: "dot" (the embeddings' inner product) or "mlp" (an MLP on z_u * z_v; module docstring).
        hidden: the width of the MLP decoder's hidden layer.
        dropout: the dropout on the MLP decoder's hidden layer.
        train_negatives: "resample" (fresh uniform negatives every local step) or "fixed" (the
            training negatives drawn once on the host, OpenFGL's).
        hits_k: K of the Hits@K metric.
    """

    encoder: nn.Module
    decoder: str = "dot"
    hidden: int = 64          # width of the MLP decoder's hidden layer
    dropout: float = 0.0      # dropout on the MLP decoder's hidden layer
    # how the task trains and reports (read by `fgl_jax.federated.link`, not by the network):
    # "resample" = fresh uniform negatives every local step from the step's key, "fixed" = the
    # training negatives drawn once on the host (OpenFGL's); K of the Hits@K metric
    train_negatives: str = "resample"
    hits_k: int = 50

    task = "link_pred"

    @property
    def num_layers(self) -> int:
        """The encoder's layer count (FedPer's `personal_layers` counts from its end)."""
        return int(getattr(self.encoder, "num_layers", 2))

    def setup(self):
        if self.decoder not in DECODERS:
            raise ValueError(f"LinkModel: decoder must be one of {DECODERS}, got {self.decoder!r}")
        if self.train_negatives not in NEGATIVES:
            raise ValueError(f"LinkModel: train_negatives must be one of {NEGATIVES}, got {self.train_negatives!r}")
        if self.decoder == "mlp":
            self.dec_hidden = nn.Dense(self.hidden)
            self.dec_out = nn.Dense(1)
            self.dec_drop = nn.Dropout(self.dropout)

    def __call__(self, batch, train: bool = False) -> jax.Array:
        z = self.encoder(batch, train=train)
        if self.is_initializing() and self.decoder == "mlp":  # create the decoder's parameters too
            self.score(z, jnp.zeros((1,), jnp.int32), jnp.zeros((1,), jnp.int32))
        return z

    def score(self, z: jax.Array, src: jax.Array, dst: jax.Array, train: bool = False) -> jax.Array:
        """Logits [P] of the pairs (src[i], dst[i]) from embeddings z [N, D]."""
        zu, zv = z[src], z[dst]
        if self.decoder == "dot":
            return (zu * zv).sum(-1)
        h = nn.relu(self.dec_hidden(zu * zv))
        if self.dropout > 0:
            h = self.dec_drop(h, deterministic=not train)
        return self.dec_out(h)[..., 0]
