"""How much of fgl_jax's graph-level training batch is padding, in the harness's setting (10 clients,
label skew Dirichlet 0.5, partition and split seed 0, mini-batches of 128 graphs, compare_graph_fl.py's
defaults), under both `--graph-batching` modes: node and edge slots of the [C, M] training batch
(every client padded to the largest client's mini-batch count and the largest mini-batch's node /
edge budget, and all computed under vmap) over the real training nodes and edges.

`vmap_floor` is the least any common [C, M, N] shape can reach: C x the largest client's training
nodes over all training nodes (every client pays for the largest one under vmap, whatever the
cut). Optionally (--time) the wall time per FedAvg round of each mode, alternating the modes.
Writes the record `results_graph_fl_padding.json` (+ .md) next to this file.

    FGL_JAX_DATA=/work/shared/data python -m benchmarks.peers.openfgl.graph_fl_padding \
        PROTEINS IMDB-BINARY NCI1 [--time ROUNDS]
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
MODES = ("count", "budget")


def config(dataset: str, batching: str, rounds: int = 2):
    """The harness's RunConfig of `dataset` (FedAvg, seed 0) with graph batching `batching`."""
    from fgl_jax import RunConfig
    return RunConfig(dataset=dataset, algorithm="fedavg", task="graph_cls", clients=10, partition="dirichlet",
                     dirichlet_beta=0.5, graph_batch_size=128, graph_batching=batching, hidden=64, dropout=0.5,
                     local_steps=3, rounds=rounds, eval_mode="local_model_on_local_data", eval_average="client_nodes",
                     split_seed=0, seed=0)


def padding(prep) -> dict:
    """Slots, real entries and their ratio for the nodes and edges of a prepared run's training batch.

    Args:
        prep: `fgl_jax.systems.baseline.prepare(cfg)` of a graph-level run.

    Returns:
        {"train_batch", nodes / edges: {slots, real, slots_per_real}, "vmap_floor"}.
    """
    tb = prep.data.train
    out = {"train_batch": prep.report["train_batch"]}
    for what, mask in (("nodes", tb.node_mask), ("edges", tb.edge_mask)):
        m = np.asarray(mask)
        real, slots = int(m.sum()), int(m.size)
        out[what] = {"slots": slots, "real": real, "slots_per_real": round(slots / real, 2)}
    per_client = np.asarray(tb.node_mask).sum(axis=(1, 2))
    out["vmap_floor"] = round(float(per_client.size * per_client.max() / per_client.sum()), 2)
    return out


def round_ms(cfg, prep) -> float:
    """Wall ms per training round (evaluation included) of FedAvg on `prep`, after compilation."""
    import jax
    from fgl_jax import run
    from fgl_jax.systems.baseline import algorithm_from_config
    res = run(algorithm_from_config(cfg, prep.graph), prep.data, jax.random.key(0), cfg.rounds)
    return round(1000.0 * res.run_seconds / res.rounds_run, 1)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("datasets", nargs="*", default=["PROTEINS", "IMDB-BINARY", "NCI1"], help="TU sets of the shared data")
    ap.add_argument("--time", type=int, default=0, metavar="ROUNDS",
                    help="also time this many FedAvg rounds per mode (0: padding only)")
    ap.add_argument("--out", default=str(HERE / "results_graph_fl_padding"), help="stem of the record <out>.json / .md")
    a = ap.parse_args(argv)
    from fgl_jax import records, table
    from fgl_jax.systems.baseline import prepare
    started = time.time()
    rows, results = [], {}
    for i, ds in enumerate(a.datasets):
        results[ds] = {}
        modes = MODES if i % 2 == 0 else MODES[::-1]   # alternate which mode is timed first
        for mode in modes:
            cfg = config(ds, mode, max(a.time, 1))
            prep = prepare(cfg)
            res = padding(prep)
            if a.time:
                res["ms_per_round"] = round_ms(cfg, prep)
            results[ds][mode] = res
        for mode in MODES:
            r = results[ds][mode]
            rows.append({"dataset": ds, "batching": mode, "train batch [M, N, E, G]":
                         "{minibatches}, {nodes}, {edges}, {graph_slots}".format(**r["train_batch"]),
                         "node slots / real": r["nodes"]["slots_per_real"],
                         "edge slots / real": r["edges"]["slots_per_real"], "vmap floor": r["vmap_floor"],
                         "ms/round": r.get("ms_per_round", "")})
    md = table(rows, disable_numparse=True)
    note = ("\nSetting: compare_graph_fl.py's (10 clients, label skew Dirichlet 0.5, seeds 0, 128 graphs per "
            "mini-batch, GIN 2 x 64, FedAvg, 3 local epochs). slots / real: padded [C, M, N] (or [C, M, E]) training "
            "slots over real training nodes (edges). vmap floor: C x the largest client's training nodes / all "
            "training nodes, the least a common shape can reach. ms/round: wall time per round after compilation "
            "on a shared 2-core machine (load average in the provenance).")
    rec = records.make(Path(a.out).name, {"rows": rows, "results": results}, config=vars(a), seeds=[0],
                       provenance=records.provenance(started=started),
                       title="Padding of fgl_jax's graph-level training batches, count vs budget batching")
    records.write(Path(a.out).with_suffix(".json"), rec, markdown=md + "\n" + note)
    print(md)


if __name__ == "__main__":
    main()
