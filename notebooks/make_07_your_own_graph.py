"""Write notebooks/07_your_own_graph.ipynb (no outputs): python notebooks/make_07_your_own_graph.py"""
from pathlib import Path

import nbformat as nbf

cells = [
    ("md", """# Your own graph: from networkx to a FedAvg and a HiFGL run

A researcher's graph in, federated results out: a networkx graph becomes an `fgl_jax` graph
(`from_networkx`, with the checks every user graph passes), is looked at before training
(`inspect_dataset`: homophily, degrees, split, what a Louvain partition cuts), saved as a plain
`.npz` (so every command and a replay in a fresh process can read it), and trained with FedAvg
(cross-client edges dropped) and HiFGL (cross-silo edges kept through secure message passing).
See docs/your_own_graph.md for the file formats and the checks."""),
    ("code", "QUICK = True  # CI: small run (< 60 s); False: more rounds"),
    ("code", """import tempfile
from pathlib import Path
import networkx as nx
import numpy as np
import yaml
import fgl_jax as fj

# a stochastic block model: 3 communities of 100 nodes, features = a noisy class signal
G = nx.stochastic_block_model([100, 100, 100], [[0.08, 0.01, 0.01], [0.01, 0.08, 0.01], [0.01, 0.01, 0.08]], seed=0)
rng = np.random.default_rng(0)
centres = rng.normal(size=(3, 16))
for v, data in G.nodes(data=True):
    data["y"] = data["block"]
    data["x"] = centres[data["block"]] + 2.0 * rng.normal(size=16)
g = fj.from_networkx(G)                        # x and y from the node attributes "x" and "y"
print(g.num_nodes, "nodes,", g.num_undirected_edges(), "edges; split:", g.meta["split"])"""),
    ("md", """## Look before training
Homophily, degrees and the split, and what 5 Louvain clients would get: the edges a plain federated
GNN loses are the cut ones."""),
    ("code", """print("\\n".join(fj.inspect_dataset(g, partition="louvain", clients=5)))"""),
    ("md", """## Save it, run FedAvg and HiFGL on the file
The plain `.npz` layout is `edge_index`, `x`, `y` and optional masks. A run on a path records the
absolute path and the file's sha256 in its `config.yaml`."""),
    ("code", """work = Path(tempfile.mkdtemp())
path = work / "sbm.npz"
np.savez(path, edge_index=np.stack([g.senders, g.receivers]), x=g.dense_x(), y=g.y,
         train_mask=g.train_mask, val_mask=g.val_mask, test_mask=g.test_mask)
rounds = 20 if QUICK else 100
fedavg = fj.run_config(fj.default_config("baseline", dataset=str(path), algorithm="fedavg", model="gcn",
                                         clients=5, partition="louvain", rounds=rounds), out=str(work / "fedavg"))
hifgl = fj.run_config(fj.HiFGLConfig(dataset=str(path), clients=5, rounds=rounds), out=str(work / "hifgl"))
for name, res in (("FedAvg-GCN, 5 Louvain clients", fedavg), ("HiFGL-GCN, 5 random silos", hifgl)):
    print(f"{name}: test accuracy {100 * res.best['best_test']:.1f} % at the best-validation round {res.best['best_round']}")"""),
    ("code", """cfg = yaml.safe_load((work / "fedavg" / "config.yaml").read_text())
print({k: cfg[k] for k in ("dataset", "dataset_sha256", "split")})
# `fgl-jax run --config <that file>` replays it in any process; a changed file gets a one-line warning"""),
]

nb = nbf.v4.new_notebook()
nb.cells = [nbf.v4.new_markdown_cell(src) if kind == "md" else nbf.v4.new_code_cell(src) for kind, src in cells]
nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
nbf.write(nb, Path(__file__).with_name("07_your_own_graph.ipynb"))
