"""Write tests/data/dglbin_rev_noedata.bin: a tiny `dgl.save_graphs` file in the shape of the authors'
split files that fgl_jax's reader once mis-split (peer venv; DGL 2.1).

    <venv>/bin/python benchmarks/peers/fedhgn_official/toy_bin.py tests/data/dglbin_rev_noedata.bin

Two client graphs, node types "item" (6 nodes) and "user" (target, 5 nodes, label/masks), 14
relations user->item: "a0".."a6" and "z0".."z6", each carrying an edge tensor `_ID`, then
dgl.AddReverse(copy_edata=False, sym_new_etype=True) as the authors' prepare_data does: the 14
reverse types "rev_*" carry no edge tensors and sort between the "a*" and "z*" types, so the file
holds a run of empty edge-data maps (over 100 bytes) between two edge tensors, which the old
reader took for the start of a new graph. Relation j of graph g has edges
src = [0..4], dst = (src * (j + 1) + g) % 6 (user -> item); labels = [0, 1, 0, 1, 0] + g,
train = [1, 1, 0, 0, 0], val = [0, 0, 1, 0, 0], test = [0, 0, 0, 1, 1]; num_classes = 3.
tests/test_fedhgn_data.py rebuilds these from the same rule and compares them with what fgl_jax reads.
Not imported by fgl_jax.
"""
import sys

import dgl
import torch as th

RELS = [f"a{i}" for i in range(7)] + [f"z{i}" for i in range(7)]


def toy_graph(g: int):
    src = th.arange(5)
    data = {("user", r, "item"): (src, (src * (j + 1) + g) % 6) for j, r in enumerate(RELS)}
    gr = dgl.heterograph(data, num_nodes_dict={"user": 5, "item": 6})
    for c in gr.canonical_etypes:
        gr.edges[c].data[dgl.EID] = th.arange(gr.num_edges(c))
    for t in gr.ntypes:
        gr.nodes[t].data[dgl.NID] = th.arange(gr.num_nodes(t))
    u = gr.nodes["user"].data
    u["label"] = th.tensor([0, 1, 0, 1, 0]) + g
    u["train_mask"] = th.tensor([1, 1, 0, 0, 0], dtype=th.uint8)
    u["val_mask"] = th.tensor([0, 0, 1, 0, 0], dtype=th.uint8)
    u["test_mask"] = th.tensor([0, 0, 0, 1, 1], dtype=th.uint8)
    return dgl.AddReverse(copy_edata=False, sym_new_etype=True)(gr)


if __name__ == "__main__":
    graphs = [toy_graph(g) for g in range(2)]
    dgl.save_graphs(sys.argv[1], graphs, {"num_classes": th.tensor([3, 3])})
    print(sys.argv[1], [g.canonical_etypes[:3] for g in graphs])
