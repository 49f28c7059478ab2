"""Attribute inference from what FedGCN, FedSage+ and FedTAD share (issue 51 item 2): a linear probe
(`fgl_jax.inference.linear_probe`: closed-form ridge classifier on standardised inputs, its penalty
chosen on a quarter of the fitting half, fitted on half the rows, scored on the other half) against
the majority baseline and against the same probe on raw features nobody shares.

    FedGCN    the server adds the clients' shares of the first-layer aggregates, so it holds
              (S X)_i (A X for the fedgraph variant) of every node (`fgl_jax.fedgcn_server_view`);
              attribute: the node's label.
    FedSage+  NeighGen's generated features of each node's missing neighbours (the run's final
              state, `mend_x` / `mend_n`; `fgl_jax.inference.fedsage_generated_view`): all P slots
              (what a party holding a client's NeighGen computes from its impaired graph) and the
              live slots only (what the mended graph adds); attribute: the node's label.
    FedTAD    the server receives each client's class-wise knowledge reliability ckr_ck
              (`fgl_jax.inference.fedtad_ckr_view`, as a class profile); attribute: the client's most
              frequent training label (`majority_label`), a client-level secret. Its raw-feature
              reference: the probe on each client's mean feature vector (not shared).

    python experiments/robustness/attribute_inference.py [--datasets cora citeseer] [--seeds 0 1 2]

Writes experiments/results/robustness/attribute_inference.json (an `fgl_jax.record/1`) and
attribute_inference.md (the table docs/privacy.md includes), the table rendered from the record.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]
from harness import machine, write_record  # noqa: E402

OUT = ROOT / "experiments" / "results" / "robustness"
RECORD = OUT / "attribute_inference.json"

# FedSage+ run: 10 Louvain clients; NeighGen trained for GEN_ROUNDS rounds (the paper's 10 / width
# 2048 is ~15 M fGen weights on Cora, several minutes per dataset on the shared 2-core machine)
SAGE = dict(clients=10, partition="louvain", fedsage_gen_rounds=5, fedsage_gen_width=256)
# FedTAD: a client-level attribute needs many clients to fit and score a probe on
TAD = dict(clients=100, partition="louvain", split="random")


def _probe(fj, np, emb, attr, seeds, mask=None) -> dict:
    res = [fj.inference.linear_probe(emb, attr, mask=mask, seed=s) for s in seeds]
    return {"nodes": res[0]["nodes"], "probe_acc": [r["probe_acc"] for r in res],
            "majority_acc": [r["majority_acc"] for r in res], "ridge": [r["ridge"] for r in res],
            "probe_acc_mean": float(np.mean([r["probe_acc"] for r in res])),
            "majority_acc_mean": float(np.mean([r["majority_acc"] for r in res]))}


def fedsage_views(fj, np, name: str) -> tuple[dict, dict]:
    """(rows' views, setting) of a FedSage+ run on `name`: the generated-neighbour view and the raw
    features of the same nodes."""
    cfg = fj.default_config("baseline", dataset=name, algorithm="fedsage_plus",
                            rounds=SAGE["fedsage_gen_rounds"] + 1, **SAGE)
    t0 = time.perf_counter()
    res = fj.run_config(cfg, progress=False)
    seconds = time.perf_counter() - t0
    b = fj.build(cfg).data.eval
    # labels from the graph through the node ids: the batch's y holds 0 for an unlabelled node (label -1)
    ids, gy = np.asarray(b.node_ids).reshape(-1), np.asarray(fj.load_graph(name).y)
    y = np.where(ids >= 0, gy[np.maximum(ids, 0)], -1)
    every, mask = fj.inference.fedsage_generated_view(res.state.mend_x, b.node_mask)
    mended, _ = fj.inference.fedsage_generated_view(res.state.mend_x, b.node_mask, res.state.mend_n)
    live = np.asarray(res.state.mend_n)[np.asarray(b.node_mask, bool)]
    setting = {**SAGE, "rounds": cfg.rounds, "run_seconds": round(seconds, 1),
               "nodes_with_generated_neighbours": float((live > 0).mean())}
    return {"FedSage+ NeighGen output, all P slots (NeighGen holder)": (every, y, mask),
            "FedSage+ generated neighbours in the mended graph (client)": (mended, y, mask)}, setting


def fedtad_views(fj, np, name: str) -> tuple[dict, dict]:
    """(rows' views, setting) of FedTAD's upload on `name` split into TAD's clients: each client's class
    profile of reliabilities, and its mean raw feature vector, with its majority training label."""
    # ckr_norm=classes: the prepared ckr rows are each client's own upload over its sum, i.e. the view
    cfg = fj.default_config("baseline", dataset=name, algorithm="fedtad", fedtad_ckr_norm="classes", **TAD)
    data = fj.build(cfg).data
    b = data.eval
    view = fj.inference.fedtad_ckr_view(np.asarray(data.extra["ckr"]))
    major = fj.inference.majority_label(b.y, b.train_mask, b.node_mask)
    g = fj.load_graph(name)
    x = g.x.toarray() if hasattr(g.x, "toarray") else np.asarray(g.x)
    ids, nm = np.asarray(b.node_ids), np.asarray(b.node_mask, bool)
    mean_x = np.stack([x[ids[c][nm[c]]].mean(0) if nm[c].any() else np.zeros(x.shape[1]) for c in range(len(ids))])
    real = np.asarray(b.client_mask, bool) if hasattr(b, "client_mask") else np.ones(len(ids), bool)
    return {"FedTAD class-wise knowledge ckr (server)": (view, major, real),
            "raw features, client mean (not shared)": (mean_x, major, real)}, dict(TAD)


def render(record: dict) -> str:
    """The docs table (attribute_inference.md) from the record."""
    m = record["metrics"]
    seeds = ", ".join(map(str, m["seeds"]))
    command = record["provenance"]["command"]
    md = [f"Probe accuracy on the held-out half (mean of seeds {seeds}); `{command}` "
          f"(record `experiments/results/robustness/attribute_inference.json`).", "",
          "| dataset | what the probe reads (who sees it) | attribute | rows | probe accuracy | majority baseline |",
          "|---|---|---|---:|---:|---:|"]
    md += [f"| {r['dataset']} | {r['view']} | {r['attribute']} | {r['nodes']} | {r['probe_acc_mean']:.3f} | "
           f"{r['majority_acc_mean']:.3f} |" for r in m["rows"]]
    sage = {d: s for d, s in m.get("fedsage", {}).items()}
    if sage:
        md += ["", "FedSage+ run: " + "; ".join(
            f"{d}: {s['clients']} {s['partition']} clients, NeighGen {s['fedsage_gen_rounds']} rounds, fGen width "
            f"{s['fedsage_gen_width']}, {100 * s['nodes_with_generated_neighbours']:.1f} % of nodes given generated "
            f"neighbours" for d, s in sage.items()) + ". FedTAD: " + f"{m['fedtad']['clients']} {m['fedtad']['partition']} "
            f"clients, split {m['fedtad']['split']} (rows = clients)."]
    return "\n".join(md) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", nargs="+", default=["cora", "citeseer"], help="datasets to attack")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="probe split seeds")
    ap.add_argument("--render", action="store_true", help="only rewrite attribute_inference.md from the record")
    args = ap.parse_args()
    if args.render:
        (OUT / "attribute_inference.md").write_text(render(json.loads(RECORD.read_text())))
        return
    import numpy as np
    import fgl_jax as fj

    rows, sage_settings = [], {}
    for name in args.datasets:
        g = fj.load_graph(name)
        x = g.x.toarray() if hasattr(g.x, "toarray") else np.asarray(g.x)
        y = np.asarray(g.y)
        node_views = {"FedGCN S X (server)": (fj.fedgcn_server_view(g, "paper"), y, None),
                      "FedGCN A X, fedgraph variant (server)": (fj.fedgcn_server_view(g, "fedgraph"), y, None),
                      "raw features X (not shared)": (x, y, None)}
        sage, sage_settings[name] = fedsage_views(fj, np, name)
        tad, tad_setting = fedtad_views(fj, np, name)
        for group, attribute in ((node_views, "node label"), (sage, "node label"),
                                 (tad, "client's majority training label")):
            for view, (emb, attr, mask) in group.items():
                t0 = time.process_time()
                row = {"dataset": name, "view": view, "attribute": attribute,
                       **_probe(fj, np, emb, attr, args.seeds, mask)}
                row["probe_cpu_seconds"] = round(time.process_time() - t0, 2)
                rows.append(row)
                print(f"{name:9s} {view:55s} probe {row['probe_acc_mean']:.3f}  majority {row['majority_acc_mean']:.3f}"
                      f"  ({row['nodes']} rows, {row['probe_cpu_seconds']} s CPU)", flush=True)
    command = " ".join(["python", *sys.argv])
    payload = {"experiment": "linear probe (closed-form ridge classifier) of a node's label, or a client's majority "
                             "training label, from what FedGCN's server, a FedSage+ NeighGen holder and FedTAD's "
                             "server receive, vs the majority baseline and the raw features; half the rows to fit, "
                             "half to score", "seeds": args.seeds, "machine": machine(), "command": command,
               "rows": rows, "fedsage": sage_settings, "fedtad": tad_setting}
    OUT.mkdir(parents=True, exist_ok=True)
    write_record(RECORD, payload, kind="experiment")
    (OUT / "attribute_inference.md").write_text(render(json.loads(RECORD.read_text())))
    print(f"wrote {RECORD} and attribute_inference.md")


if __name__ == "__main__":
    main()
