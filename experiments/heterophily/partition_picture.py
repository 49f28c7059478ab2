"""The picture of docs/your_own_graph.md's "Heterophily statistics": one Louvain partition (10 clients)
of a heterophilous graph, per client: edge homophily of its own edges, the fraction of its edges that
cross to another client, and its label distribution (`fgl_jax.partition_stats`, `fgl_jax.homophily`).

    python experiments/heterophily/partition_picture.py [--dataset PATH] [--clients 10]

Default graph: Platonov et al.'s chameleon (2,277 nodes, 5 classes; roman-empire and amazon-ratings
are not in the offline data). Writes docs/img/heterophily_partition.png and
experiments/results/heterophily/partition.json (the numbers drawn; overwritten).
"""
from __future__ import annotations

import argparse
import os
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]
from harness import write_record  # noqa: E402
DATA = Path(os.environ.get("FGL_JAX_DATA", "/work/shared/data"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default=str(DATA / "heterophily" / "chameleon.npz"), help="graph file")
    ap.add_argument("--clients", type=int, default=10, help="Louvain clients")
    args = ap.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    import fgl_jax as fj
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the loader's "symmetrised" notice
        g = fj.load(args.dataset)
    part = fj.make_partition(g, "louvain", args.clients, seed=0)
    s = fj.partition_stats(g, part)
    counts = np.asarray(s["label_counts"], float)
    share = counts / np.maximum(counts.sum(1, keepdims=True), 1)
    k = np.arange(args.clients)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.6))
    w = 0.38
    a1.bar(k - w / 2, [np.nan if v is None else v for v in s["edge_homophily"]], w, label="edge homophily (own edges)")
    a1.bar(k + w / 2, s["client_cross_edge_fraction"], w, label="cross-client edge fraction")
    a1.axhline(s["homophily"]["edge"], color="k", lw=0.8, ls="--", label=f"whole graph: {s['homophily']['edge']:.2f}")
    a1.set_xticks(k)
    a1.set_xlabel("client")
    a1.set_ylim(0, 1)
    a1.legend(fontsize=8, loc="upper right")
    a1.set_title(f"{g.name}: Louvain, {args.clients} clients (adjusted homophily "
                 f"{s['homophily']['adjusted']:.3f})", fontsize=9)
    bottom = np.zeros(args.clients)
    for c in range(share.shape[1]):
        a2.bar(k, share[:, c], bottom=bottom, label=f"class {c}")
        bottom += share[:, c]
    a2.set_xticks(k)
    a2.set_xlabel("client")
    a2.set_ylabel("share of the client's labelled nodes")
    a2.legend(fontsize=7, ncol=5, loc="upper center", bbox_to_anchor=(0.5, 1.15))
    fig.tight_layout()
    img = ROOT / "docs" / "img" / "heterophily_partition.png"
    img.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(img, dpi=110)
    out = ROOT / "experiments" / "results" / "heterophily" / "partition.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    keep = ("num_nodes", "edge_homophily", "client_cross_edge_fraction", "label_counts", "homophily",
            "cross_edge_fraction")
    write_record(out, {"command": "python experiments/heterophily/partition_picture.py " + " ".join(sys.argv[1:]),
                       "dataset": g.name, "partition": "louvain", "clients": args.clients, "seed": 0,
                       **{key: s[key] for key in keep}}, kind="experiment")
    print(f"wrote {img} and {out}")


if __name__ == "__main__":
    main()
