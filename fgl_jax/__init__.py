"""fgl_jax: federated graph learning in JAX.

The flat public API (optax style): everything a user, an experiment, a benchmark or a notebook
needs is importable from here.

    import fgl_jax as fj
    cfg = fj.default_config("baseline", dataset="cora", algorithm="fedavg", clients=10)
    res = fj.run_config(cfg, out="runs/cora")          # config.yaml, metrics.jsonl, summary.json, checkpoints/
    res = fj.run(algorithm, data, key, 50, fj.RunOptions(chunk=10))   # an algorithm on its data
    sw = fj.sweep(algorithm, data, seeds=[0, 1, 2], num_rounds=50, hparams={"lr": [0.01, 0.05]})  # 3 x 2, one program
    fj.names("algorithm")                             # what the registry knows

Names are loaded on first use, so `import fgl_jax` stays cheap.

Three entry points run things: `run`, `sweep` and `run_config` (`run` and `run_config` take one `RunOptions`).

What is public: the names in `fgl_jax.__all__` (functions, classes and namespaces: `schema`
for config files and flags, `aggregators` for the server's aggregation stages, `field` / `lcc` for the prime-field and Lagrange-coding primitives,
`onebit` for the one-bit LDP encoder, `inference` for membership / attribute inference attacks, `node_dp`
for node-level DP of GNN training, `records` for result records, and `engine`, the documented
internal namespace of the engine's inner entry points: `execute`, `run_sharded`, `make_scan`, ...,
importable but not API), and each paper system's package `fgl_jax.systems.<name>`
through its own documented `__all__`. Everything else (`fgl_jax.federated.run`, ...) is internal
layout that may move; notebooks, benchmarks and experiments import only public names
(tests/test_public_api.py checks this).
"""
import importlib as _importlib

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS = {
    # registry and configs
    "register": "fgl_jax.registry", "get": "fgl_jax.registry", "names": "fgl_jax.registry",
    "option": "fgl_jax.schema", "RunSpec": "fgl_jax.schema",
    # one engine
    "run_config": "fgl_jax.experiment", "build": "fgl_jax.experiment", "default_config": "fgl_jax.experiment",
    "config_class": "fgl_jax.experiment", "RunOptions": "fgl_jax.federated.options",
    "FederatedAlgorithm": "fgl_jax.federated", "Program": "fgl_jax.federated", "Hooks": "fgl_jax.federated",
    "HostInput": "fgl_jax.federated", "Phase": "fgl_jax.federated", "with_round": "fgl_jax.federated",
    "RunResult": "fgl_jax.federated", "NonFiniteError": "fgl_jax.federated", "run": "fgl_jax.federated",
    "sweep": "fgl_jax.federated.sweep", "SweepResult": "fgl_jax.federated.sweep", "FedConfig": "fgl_jax.federated",
    "OptimConfig": "fgl_jax.federated", "baseline": "fgl_jax.federated", "make_fed_data": "fgl_jax.federated",
    "local_train": "fgl_jax.federated", "make_optimizer": "fgl_jax.federated",
    "masked_cross_entropy": "fgl_jax.federated", "client_mesh": "fgl_jax.federated",
    # simulation knobs (docs/simulation.md): partial participation, communication bytes, DP, perturbations
    "with_participation": "fgl_jax.federated.participation", "participants": "fgl_jax.federated.participation",
    "sample_clients": "fgl_jax.federated.participation", "message_bytes": "fgl_jax.federated.communication",
    "dp_epsilons": "fgl_jax.privacy.dp", "fedgcn_server_view": "fgl_jax.algorithms.fedgcn", "private_mean": "fgl_jax.aggregators", "perturb": "fgl_jax.data.processing",
    # FedStar's dual-channel model of a run's graph classifier (what a FedStar run trains)
    "dual_channel_model": "fgl_jax.algorithms.fedstar",
    # server aggregation (fgl_jax.aggregators): composable like optax's transformations
    # (the namespace `fgl_jax.aggregators` holds the stages: mean, clip, gaussian_noise, server_optimizer, ...)
    "Aggregator": "fgl_jax.aggregators",
    # the x64 scope an algorithm that needs 64-bit integers (HiFGL's field arithmetic) runs under
    # (the compiled round loop, `make_scan`, is in the internal namespace `fgl_jax.engine`)
    "x64_scope": "fgl_jax.federated.algorithm", "environment": "fgl_jax.experiment",
    # message-passing primitives the models are built from (sparse first layer, GCN propagation)
    "SparseFeatures": "fgl_jax.ops", "feature_matmul": "fgl_jax.ops", "gcn_propagate": "fgl_jax.ops",
    # the caches between commands (compiled programs, partitions): on in the CLI, opt-in in Python
    "enable_cache": "fgl_jax.cache",
    # data, partitions, client batches, models
    "Graph": "fgl_jax.graph", "load": "fgl_jax.data", "load_graph": "fgl_jax.data",
    "register_dataset": "fgl_jax.data", "list_datasets": "fgl_jax.data", "csbm": "fgl_jax.data", "block_csbm": "fgl_jax.data",
    "random_split": "fgl_jax.data", "per_class_split": "fgl_jax.data", "symmetrize": "fgl_jax.graph",
    "load_planetoid": "fgl_jax.data", "load_facebook": "fgl_jax.data", "load_lastfm_asia": "fgl_jax.data",
    "load_aifb": "fgl_jax.data.hetero", "load_official_split": "fgl_jax.data.hetero_dglbin",
    "Hypergraph": "fgl_jax.data.hypergraph", "load_hypergraph": "fgl_jax.data.hypergraph",
    "safe_load": "fgl_jax.data", "resolve_data_dir": "fgl_jax.data", "DataError": "fgl_jax.data",
    "DatasetNotFoundError": "fgl_jax.data",
    # a user's own graph: paths in load(), what kind a name or path is, the checks and their notices,
    # and a new file format (registry kind "format")
    "data_kind": "fgl_jax.data", "DataNotice": "fgl_jax.data", "build_graph": "fgl_jax.data",
    "register_format": "fgl_jax.data", "save_graph": "fgl_jax.data",
    "path_sha256": "fgl_jax.data", "DataFormatError": "fgl_jax.data",
    "from_edge_index": "fgl_jax.data", "from_scipy": "fgl_jax.data", "from_networkx": "fgl_jax.data",
    "from_jraph": "fgl_jax.data", "from_pyg": "fgl_jax.data", "from_dgl": "fgl_jax.data",
    "inspect_dataset": "fgl_jax.inspection",
    "make_partition": "fgl_jax.partition", "louvain_partition": "fgl_jax.partition",
    "random_partition": "fgl_jax.partition", "partition_stats": "fgl_jax.partition",
    "partition_report": "fgl_jax.partition", "Partition": "fgl_jax.partition",
    "louvain_communities": "fgl_jax.partition",
    # OpenFGL's cached clients and split (--partition-file DIR), read from torch's zip files without torch
    "read_openfgl_cache": "fgl_jax.partition.openfgl_cache", "read_torch": "fgl_jax.data.torch_zip",
    "random_edge_type_split": "fgl_jax.partition.hetero", "EdgeSplit": "fgl_jax.partition.edges",
    "ClientBatch": "fgl_jax.batch", "build_client_batch": "fgl_jax.batch",
    "with_ell_features": "fgl_jax.batch", "full_graph_batch": "fgl_jax.batch",
    "stack_partition": "fgl_jax.batch", "padding_ratio": "fgl_jax.batch", "padding_report": "fgl_jax.batch",
    "make_model": "fgl_jax.nn", "ModelSpec": "fgl_jax.nn",
    # link prediction (docs/simulation.md): per-client edge splits, the encoder + decoder model, metrics
    "link_client_batch": "fgl_jax.batch", "LinkPairs": "fgl_jax.batch", "LinkModel": "fgl_jax.nn.link",
    "random_edge_split": "fgl_jax.partition.edges", "link_metrics": "fgl_jax.federated.link",
    "hits_at_k": "fgl_jax.federated.metrics", "binary_scores": "fgl_jax.federated.metrics",
    # a paper's comparisons (experiments/): HiFGL's gain over Local, clients' views of one graph
    "graph_information_gain": "fgl_jax.federated.metrics", "stack_graphs": "fgl_jax.batch",
    # each system's config (its one schema)
    "RunConfig": "fgl_jax.systems.baseline", "HiFGLConfig": "fgl_jax.systems.hifgl.config",
    "LumosConfig": "fgl_jax.systems.lumos.config", "FedHGNConfig": "fgl_jax.systems.fedhgn.config",
    "FedGCConfig": "fgl_jax.systems.fedgc.config", "FedHGLConfig": "fgl_jax.systems.fedhgl.config",
    # result files
    "plot_runs": "fgl_jax.plot",
    "table": "fgl_jax.report", "write_results": "fgl_jax.report", "provenance": "fgl_jax.report",
}
_RENAMED = {"register_dataset": "register", "dp_epsilons": "epsilons", "enable_cache": "enable"}

# public namespaces: name -> the module itself (its names without a leading underscore, or its __all__
# where it has one)
_MODULES = {"schema": "fgl_jax.schema", "aggregators": "fgl_jax.aggregators", "field": "fgl_jax.privacy.field",
            "lcc": "fgl_jax.privacy.lcc", "onebit": "fgl_jax.privacy.onebit", "records": "fgl_jax.records",
            "secure_sum": "fgl_jax.privacy.secure_sum", "rdp": "fgl_jax.privacy.rdp",
            "inference": "fgl_jax.privacy.inference", "node_dp": "fgl_jax.privacy.node_dp",
            "engine": "fgl_jax.engine"}

__all__ = sorted({*_EXPORTS, *_MODULES})

# names earlier releases exported -> where they are now: they still resolve, with a DeprecationWarning,
# so existing scripts keep running; they are not in __all__ (tests/test_public_api.py)
_MOVED = {"run_sweep": ("fgl_jax.federated.sweep", "sweep", "fgl_jax.sweep"),
          **{n: ("fgl_jax.engine", n, f"fgl_jax.engine.{n}")
             for n in ("execute", "run_sharded", "make_scan", "make_chunk", "Tracker")}}


def __getattr__(name: str) -> object:
    if name in _MOVED:
        module, attr, now = _MOVED[name]
        import warnings
        warnings.warn(f"fgl_jax.{name} is now {now} (issue 46: run, sweep and run_config are the entry points)",
                      DeprecationWarning, stacklevel=2)
        return getattr(_importlib.import_module(module), attr)  # not cached: each use warns
    if name in _MODULES:
        value = _importlib.import_module(_MODULES[name])
    elif name in _EXPORTS:
        value = getattr(_importlib.import_module(_EXPORTS[name]), _RENAMED.get(name, name))
    else:
        raise AttributeError(f"module 'fgl_jax' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list:
    # the public names and the package's own dunders; not its private helpers
    return sorted({n for n in globals() if n.startswith('__')} | set(__all__))
