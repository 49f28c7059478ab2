"""Attribute inference from what FedGCN's server receives (issue 51 item 2): before training every
client sends its share of the first-layer neighbour aggregates, and the server adds them, so it holds
(S X)_i for every node (`fgl_jax.fedgcn_server_view`). A linear probe (`fgl_jax.inference.linear_probe`,
multinomial logistic regression fitted on half the nodes, scored on the other half) recovers a node's
label, an attribute no client shares, from those rows; reported against the majority baseline and
against the same probe on the raw features X (which the server never sees).

    python experiments/robustness/attribute_inference.py [--datasets cora citeseer] [--seeds 0 1 2]

Writes experiments/results/robustness/attribute_inference.json (an `fgl_jax.record/1`) and
attribute_inference.md (the table docs/privacy.md shows).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]
from harness import machine, write_record  # noqa: E402

OUT = ROOT / "experiments" / "results" / "robustness"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", nargs="+", default=["cora", "citeseer"], help="datasets to attack")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="probe split seeds")
    args = ap.parse_args()
    import numpy as np
    import fgl_jax as fj

    rows = []
    for name in args.datasets:
        g = fj.load_graph(name)
        x = g.x.toarray() if hasattr(g.x, "toarray") else np.asarray(g.x)
        views = {"fedgcn_server (S X)": fj.fedgcn_server_view(g, "paper"),
                 "fedgcn_server fedgraph (A X)": fj.fedgcn_server_view(g, "fedgraph"),
                 "raw features X (not shared)": x}
        for view, emb in views.items():
            res = [fj.inference.linear_probe(emb, np.asarray(g.y), seed=s) for s in args.seeds]
            rows.append({"dataset": name, "view": view, "nodes": res[0]["nodes"], "seeds": args.seeds,
                         "probe_acc": [r["probe_acc"] for r in res], "majority_acc": [r["majority_acc"] for r in res],
                         "probe_acc_mean": float(np.mean([r["probe_acc"] for r in res])),
                         "majority_acc_mean": float(np.mean([r["majority_acc"] for r in res]))})
            print(f"{name:10s} {view:30s} probe {rows[-1]['probe_acc_mean']:.3f}  majority "
                  f"{rows[-1]['majority_acc_mean']:.3f}")
    md = [f"Probe accuracy (mean of seeds {', '.join(map(str, args.seeds))}); `{' '.join(['python', *sys.argv])}`.", "",
          "| dataset | what the probe reads | probe accuracy | majority baseline |", "|---|---|---|---|"]
    md += [f"| {r['dataset']} | {r['view']} | {r['probe_acc_mean']:.3f} | {r['majority_acc_mean']:.3f} |" for r in rows]
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "attribute_inference.md").write_text("\n".join(md) + "\n")
    command = " ".join(["python", *sys.argv])
    write_record(OUT / "attribute_inference.json", {
        "experiment": "linear probe of the node label from what FedGCN's server receives (S X, A X) vs the raw "
                      "features, half the nodes to fit, half to score", "attribute": "node label (never shared)",
        "seeds": args.seeds, "machine": machine(), "command": command, "rows": rows}, kind="experiment")
    print(f"wrote {OUT / 'attribute_inference.json'}")


if __name__ == "__main__":
    main()
