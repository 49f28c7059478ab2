"""FL algorithms, one module each, found by the registry (kind "algorithm").

An algorithm module registers a factory

    @register("algorithm", "<name>", hparams=<HParams dataclass or None>, help="<one line>")
    def <name>(model, common: FedConfig, hp) -> FederatedAlgorithm

The registration's keywords are the fields of `fgl_jax.registry.AlgorithmSpec` (help, paper,
hparams, tasks, features, data, prepare, pre_communication, dp_uncovered), checked at import: an
unknown or wrong-typed field is one line naming the algorithm and the field. In a run's
config.yaml the algorithm's options sit in one block, `algorithm: {name: <name>, <field>: ...}`,
keyed by the hparams field names (the flags' names: `--prox-mu` is `prox_mu`).

where `model` is the flax model, `common` the hyperparameters every baseline shares (local steps,
optimiser, client chunking) and `hp` an instance of the module's own frozen `hparams` dataclass
(fields declared with `fgl_jax.schema.option`). `fgl-jax run --algorithm <name>` gets the module's
hyperparameters as flags, YAML keys and help text from that dataclass: adding an algorithm is one
new file here (+ its test) and no edit anywhere else.

`tasks=("node_cls", "link_pred")` in the registration declares that the algorithm also serves link
prediction: it trains with `fgl_jax.federated.client.node_loss_fn` and reports through
`evaluate_models` / `evaluate_round` only (no class labels, prototypes or node-level CE of its
own), so given a `fgl_jax.nn.link.LinkModel` it is link prediction unchanged. Without `tasks`,
an algorithm is node classification only and `--task link_pred` refuses it.

`features="ell"` declares that the algorithm's code passes the client features only to the model
(whose first layer is `ops.feature_matmul`): `fgl-jax run` then hands it sparse features in
`ops.EllFeatures` layout (a faster first layer, `fgl_jax.batch.with_ell_features`). Without it the
features stay `SparseFeatures` (or dense), whose row/col/val fields an algorithm may read.

An algorithm that keeps a global model aggregates it through the run's aggregator, built once by
`fgl_jax.federated.config.server_aggregator(common)` and called as
`server, agg = _common.aggregate(aggregator, state.aggregator, uploads, weights, key, params=state.server)`
with its state in a field named `aggregator`: DP-FedAvg, `--server-opt` and a user's own aggregator
(`FedConfig.aggregator`) then apply to it without code of its own (docs/aggregators.md).

An algorithm whose rounds change kind part-way (AdaFGL: FedAvg, then personalised training) may
declare `phases` (`fgl_jax.federated.algorithm.Phase`: first round, round function, hand-over):
`run` then executes one compiled program per phase, so no phase carries a branch over another's
work; its `round` stays the whole schedule in one function (sweeps run that).
"""
