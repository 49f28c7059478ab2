"""Rebuild the authors' MUTAG client-split files from their centralised file, inside the peer venv.

    <venv>/bin/python regen_split.py --src <FedHGN checkout> --out DIR

Why: the authors' repository ships its MUTAG split files (mutag-hetero_random-<edges|etypes>_<K>.bin)
at 4-9 MB each, above what the stored snapshot keeps, while the centralised files of AIFB and MUTAG
(`*_centralized_1.bin`) and every AIFB split file are there. The split is a pure function of those
graphs and of Python's `random` seeded once with 12345 (the repository's prepare_data.ipynb): per
dataset in the order AIFB, MUTAG, one shuffle of the training indices (the first 20 % become the
validation set), then for K = 3, 5, 10 a random-edges split and a random-etypes split of the graph
without reverse edges, each client's graph then getting reverse edges (dgl.AddReverse,
sym_new_etype). This script replays that stream on the graph recovered from the centralised file
(its non-`rev_` edge types, edge ids unchanged) and checks itself three ways before writing
anything: each dataset's replayed validation set equals the one stored in its centralised file, and
each of the six AIFB split files it rebuilds equals the shipped one (node types, node counts, edge
types, every edge, masks and labels). The random calls are the notebook's, in its order (that is
what makes the stream line up); the code is this project's.

Not imported by fgl_jax.
"""
import argparse
import itertools
import random
from pathlib import Path

import dgl
import torch as th

VAL_FRACTION = 0.2
KS = (3, 5, 10)
DATASETS = ("aifb-hetero", "mutag-hetero")     # the notebook's order (BGS came after MUTAG)


def base_graph(g_rev):
    """The dataset graph before AddReverse: the centralised graph's non-reverse edge types."""
    keep = [c for c in g_rev.canonical_etypes if not c[1].startswith("rev_")]
    return dgl.edge_type_subgraph(g_rev, keep)


def edges_split(g, k: int, rng: random.Random):
    """Random edges: K exclusive groups, one group shared by 2..K-1 random clients, the rest shared by all."""
    pool = [(c, i) for c in g.canonical_etypes for i in range(g.num_edges(etype=c))]
    rng.shuffle(pool)
    seg = len(pool) // (k + 2)
    per = [pool[i * seg:(i + 1) * seg] + pool[(k + 1) * seg:] for i in range(k)]
    for e in pool[k * seg:(k + 1) * seg]:
        for c in rng.sample(range(k), rng.randint(2, k - 1)):
            per[c].append(e)
    out = []
    for es in per:
        es.sort()
        ids = {c: th.tensor([i for _, i in grp]) for c, grp in itertools.groupby(es, key=lambda x: x[0])}
        sub = dgl.edge_subgraph(g, ids)
        out.append(dgl.edge_type_subgraph(sub, [c for c in sub.canonical_etypes if sub.num_edges(c) > 0]))
    return out


def etypes_split(g, k: int, rng: random.Random):
    """Random edge types, grouped the same way as edges_split; each client graph compacted."""
    cets = list(g.canonical_etypes)
    rng.shuffle(cets)
    if len(cets) > k + 1:
        seg = len(cets) // (k + 2)
        per = [cets[i * seg:(i + 1) * seg] + cets[(k + 1) * seg:] for i in range(k)]
        for c in cets[k * seg:(k + 1) * seg]:
            for j in rng.sample(range(k), rng.randint(2, k - 1)):
                per[j].append(c)
    else:
        per = [[cets[i], cets[-1]] for i in range(k)]
    return [dgl.compact_graphs(dgl.edge_type_subgraph(g, sorted(cs))) for cs in per]


def same_graphs(a, b) -> str:
    """'' if the client graph lists agree exactly, else what differs first."""
    if len(a) != len(b):
        return f"{len(a)} vs {len(b)} clients"
    for k, (x, y) in enumerate(zip(a, b)):
        if x.ntypes != y.ntypes or x.canonical_etypes != y.canonical_etypes:
            return f"client {k}: types differ"
        for t in x.ntypes:
            if x.num_nodes(t) != y.num_nodes(t):
                return f"client {k}: {t} has {x.num_nodes(t)} vs {y.num_nodes(t)} nodes"
            for key in set(x.nodes[t].data) | set(y.nodes[t].data):
                if key not in x.nodes[t].data or key not in y.nodes[t].data or \
                        not th.equal(x.nodes[t].data[key], y.nodes[t].data[key]):
                    return f"client {k}: node data {t}/{key} differs"
        for c in x.canonical_etypes:
            sx, dx = x.edges(etype=c, order="eid")
            sy, dy = y.edges(etype=c, order="eid")
            if not (th.equal(sx, sy) and th.equal(dx, dy)):
                return f"client {k}: edges of {c} differ"
    return ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", required=True, help="checkout of github.com/cynricfu/FedHGN")
    ap.add_argument("--out", required=True, help="where the rebuilt mutag-hetero_*.bin files go")
    a = ap.parse_args()
    src, out = Path(a.src) / "data", Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(12345)
    add_rev = dgl.AddReverse(copy_edata=False, sym_new_etype=True)
    for name in DATASETS:
        (g_rev,), info = dgl.load_graphs(str(src / name / f"{name}_centralized_1.bin"))
        g = base_graph(g_rev)
        target = [t for t in g.ntypes if "train_mask" in g.nodes[t].data][0]
        tr, va = g.nodes[target].data["train_mask"].bool(), g.nodes[target].data["val_mask"].bool()
        train_idx = (tr | va).nonzero().flatten()            # the training set before the val split
        index = list(range(len(train_idx)))
        rng.shuffle(index)
        val = th.zeros_like(va)
        val[train_idx[index[:round(len(index) * VAL_FRACTION)]]] = True
        if not th.equal(val, va):
            raise SystemExit(f"{name}: the replayed validation set differs from the centralised file's")
        print(f"{name}: validation set replayed ({int(va.sum())} nodes)", flush=True)
        for k in KS:
            for kind, fn in (("edges", edges_split), ("etypes", etypes_split)):
                graphs = [add_rev(s) for s in fn(g, k, rng)]
                path = f"{name}_random-{kind}_{k}.bin"
                if name == "aifb-hetero":
                    shipped, _ = dgl.load_graphs(str(src / name / path))
                    diff = same_graphs(graphs, shipped)
                    if diff:
                        raise SystemExit(f"{path}: rebuilt split differs from the shipped one: {diff}")
                    print(f"{path}: equals the shipped file", flush=True)
                else:
                    dgl.save_graphs(str(out / path), graphs, {"num_classes": info["num_classes"].repeat(k)})
                    print(f"{path}: written, edges per client {[g_.num_edges() for g_ in graphs]}", flush=True)


if __name__ == "__main__":
    main()
