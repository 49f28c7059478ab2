"""Write fgl_jax's exported client graphs (an .npz from compare.py) as the `dgl.save_graphs` file
the authors' loader reads (utils.load_data: aifb-hetero_random-<split>_<K>.bin), inside the peer venv.

    <venv>/bin/python to_dgl.py IN.npz OUT.bin

Per client: one heterograph with fgl_jax's node types, canonical edge types (reverse edges
included, as fgl_jax trains on them) and type-local node ids; on the target type `label`,
`train_mask`, `val_mask`, `test_mask` (the authors' names); `_ID` on every node type (the code reads
it as a dummy feature). Labels of unlabelled nodes stay -1: the code only indexes labelled ones.
Not imported by fgl_jax.
"""
import json
import sys

import dgl
import numpy as np
import torch as th

src, dst_path = sys.argv[1], sys.argv[2]
z = np.load(src, allow_pickle=False)
meta = json.loads(str(z["meta"]))
graphs = []
for k, c in enumerate(meta["clients"]):
    data = {tuple(cet): (th.from_numpy(z[f"c{k}_e{i}_src"].astype(np.int64)),
                         th.from_numpy(z[f"c{k}_e{i}_dst"].astype(np.int64)))
            for i, cet in enumerate(c["canonical_etypes"])}
    g = dgl.heterograph(data, num_nodes_dict=dict(zip(c["node_types"], c["num_nodes"])))
    for t, n in zip(c["node_types"], c["num_nodes"]):
        g.nodes[t].data[dgl.NID] = th.arange(n, dtype=th.int64)
    t = c["target"]
    g.nodes[t].data["label"] = th.from_numpy(z[f"c{k}_y"].astype(np.int64))
    for m in ("train_mask", "val_mask", "test_mask"):
        g.nodes[t].data[m] = th.from_numpy(z[f"c{k}_{m}"].astype(np.uint8))
    for cet in g.canonical_etypes:      # the exported edges, unchanged
        s, d = g.edges(etype=cet)
        i = [tuple(x) for x in c["canonical_etypes"]].index(cet)
        assert np.array_equal(s.numpy(), z[f"c{k}_e{i}_src"]) and np.array_equal(d.numpy(), z[f"c{k}_e{i}_dst"])
    graphs.append(g)
dgl.save_graphs(dst_path, graphs, {"num_classes": th.tensor([meta["num_classes"]] * len(graphs))})
print(f"{dst_path}: {len(graphs)} clients, edges {[g.num_edges() for g in graphs]}")
