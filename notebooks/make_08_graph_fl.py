"""Write notebooks/08_graph_fl.ipynb (no outputs): python notebooks/make_08_graph_fl.py"""
from pathlib import Path

import nbformat as nbf

cells = [
    ("md", """# Graph-level FL: label skew on TU data, accuracy per client, the GCFL / GCFL+ cluster tree, FedStar

Each client holds whole graphs (here MUTAG's molecules, dealt with a Dirichlet label skew) and the
federation learns a graph classifier. FedAvg trains one model; GCFL and GCFL+ (Xie et al., NeurIPS
2021) split the federation into clusters when the clients' updates disagree, and keep the cluster
assignment as state on the client axis, so every run below is one jitted program. The split history
(`born`, `parent` in the final state) draws the cluster tree. FedStar (Tan et al., AAAI 2023), last,
shares only a structure channel and keeps each client's feature channel and head. See docs/graph_fl.md.

Without the shared data (`FGL_JAX_DATA`) the notebook writes a small synthetic set in TU format
(cycles vs. trees with a planted node label) and runs on that."""),
    ("code", "QUICK = True  # CI: small run (< 2 min on an idle 2-core machine); False: more rounds"),
    ("code", """import tempfile
from pathlib import Path
import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np
import fgl_jax as fj
from fgl_jax.systems.baseline import graph_model, task_targets


def synthetic_tu(root: Path, graphs: int = 160, seed: int = 0) -> Path:
    \"\"\"A TU-format directory: class 0 = cycles, class 1 = random trees, 8-20 nodes, 3 node labels.\"\"\"
    rng = np.random.default_rng(seed)
    d = root / "SYN"
    d.mkdir(parents=True, exist_ok=True)
    edges, indicator, labels, node_labels, start = [], [], [], [], 1
    for g in range(graphs):
        n, y = int(rng.integers(8, 21)), g % 2
        pairs = [(i, (i + 1) % n) for i in range(n)] if y == 0 else [(i, int(rng.integers(0, i))) for i in range(1, n)]
        for a, b in pairs:
            edges += [(start + a, start + b), (start + b, start + a)]
        indicator += [g + 1] * n
        node_labels += rng.integers(0, 3, n).tolist()
        labels.append(y)
        start += n
    (d / "SYN_A.txt").write_text("".join(f"{a}, {b}\\n" for a, b in edges))
    (d / "SYN_graph_indicator.txt").write_text("".join(f"{i}\\n" for i in indicator))
    (d / "SYN_graph_labels.txt").write_text("".join(f"{y}\\n" for y in labels))
    (d / "SYN_node_labels.txt").write_text("".join(f"{v}\\n" for v in node_labels))
    return d


try:
    dataset, gs = "MUTAG_TU", fj.load("MUTAG_TU")
except Exception as e:                       # no shared data here: the synthetic stand-in
    print("MUTAG_TU not available:", str(e).splitlines()[0])
    path = synthetic_tu(Path(tempfile.mkdtemp()))
    dataset, gs = str(path), fj.load(str(path))
print(dataset, gs.num_graphs, "graphs,", gs.num_classes, "classes,", gs.num_features, "node features")"""),
    ("md", """## Three runs on the same partition and split
Eight clients, label skew Dirichlet(0.3), OpenFGL's 80/10/10 split in each client. GCFL's thresholds
are loosened (eps1 = 10, eps2 = 0.01, 5 warm-up rounds) so that splits happen within a short run; the
paper's 0.05 / 0.1 after 20 rounds need hundreds of rounds. GCFL+ compares windows of 3 rounds of
each client's gradient norm by dynamic time warping."""),
    ("code", """rounds = 15 if QUICK else 60
common = dict(task="graph_cls", dataset=dataset, clients=8, partition="dirichlet", dirichlet_beta=0.3,
              rounds=rounds, hidden=32, graph_batch_size=16)
loose = dict(gcfl_eps1=10.0, gcfl_eps2=0.01, gcfl_warmup=5)
configs = {"FedAvg": dict(algorithm="fedavg"), "GCFL": dict(algorithm="gcfl", **loose),
           "GCFL+": dict(algorithm="gcfl_plus", gcfl_seq_length=3, **loose)}
runs = {}
for name, extra in configs.items():
    cfg = fj.default_config("baseline", **common, **extra)
    prog = fj.build(cfg)
    runs[name] = (cfg, prog, fj.run(prog.algorithm, prog.data, jax.random.key(cfg.seed), cfg.rounds, progress=False))
    res = runs[name][2]
    print(f"{name:7s} final test acc {res.history['test_acc'][-1]:.3f}, clusters "
          f"{int(res.history.get('num_clusters', np.ones(1))[-1])}")"""),
    ("md", """## Test accuracy per client
FedAvg's one model vs. each client's cluster model, on each client's own test graphs."""),
    ("code", """model = graph_model(runs["FedAvg"][0], task_targets(gs, "graph_cls"))
ev = runs["FedAvg"][1].data.eval


def client_accuracy(params, b):
    pred = model.apply(params, b).argmax(-1)
    m = b.test_mask
    return ((pred == b.y) & m).sum() / jnp.maximum(m.sum(), 1), m.sum()


acc = {"FedAvg": jax.vmap(client_accuracy, in_axes=(None, 0))(runs["FedAvg"][2].state.server, ev)[0]}
for name in ("GCFL", "GCFL+"):
    acc[name], tests = jax.vmap(client_accuracy)(runs[name][2].state.models, ev)
c = np.arange(ev.y.shape[0])
fig, ax = plt.subplots(figsize=(8, 3))
for i, (name, a) in enumerate(acc.items()):
    ax.bar(c + (i - 1) * 0.27, np.asarray(a), width=0.27, label=name)
ax.set_xticks(c, [f"client {k}\\n{int(t)} test" for k, t in zip(c, np.asarray(tests))], fontsize=8)
ax.set_ylabel("test accuracy"); ax.set_ylim(0, 1.05); ax.legend(ncol=3, fontsize=8)
plt.tight_layout(); plt.show()"""),
    ("md", """## The cluster tree
Each cluster label is a lane; a split draws a branch from the parent's lane at the round it
happened (`state.born`, `state.parent`); the leaves list their clients."""),
    ("code", """def draw_tree(ax, state, rounds, title):
    born, parent, cluster = (np.asarray(a) for a in (state.born, state.parent, state.cluster))
    labels = [l for l in np.argsort(born, kind="stable") if born[l] >= 0]
    lane = {l: i for i, l in enumerate(labels)}
    for l in labels:
        ax.plot([born[l], rounds], [lane[l], lane[l]], color="C0")
        if parent[l] >= 0:
            ax.plot([born[l], born[l]], [lane[parent[l]], lane[l]], color="C0")
            ax.plot(born[l], lane[parent[l]], "o", color="C3")
        ax.text(rounds + 0.3, lane[l], "clients " + ",".join(map(str, np.flatnonzero(cluster == l))),
                va="center", fontsize=8)
    ax.set_yticks(range(len(labels)), [f"cluster {l}" for l in labels], fontsize=8)
    ax.set_xlim(0, rounds + 5); ax.set_xlabel("round"); ax.set_title(title, fontsize=10)


fig, axes = plt.subplots(1, 2, figsize=(10, 2.8))
for ax, name in zip(axes, ("GCFL", "GCFL+")):
    draw_tree(ax, runs[name][2].state, rounds, name)
plt.tight_layout(); plt.show()"""),
]

cells += [
    ("md", """## FedStar: share the structure, keep the features
FedStar (Tan et al., AAAI 2023; docs/graph_fl.md) gives every node a structure encoding computed
from its graph alone (random-walk return probabilities and a one-hot degree) and trains a model with
two channels: a **structure channel** (a GCN on the encodings) and a **feature channel** (a GIN on
the node features, reading the structure state at every layer), then a fusion layer and a head.
Each round the server averages **only the structure channel** (the parameters named `struct_*`,
weighted by training graphs); the feature channel, the fusion layer and the head never leave their
client, so each client ends with its own model, evaluated on its own graphs. What travels is what
graphs of different clients (or domains) have in common, their structure; what stays local is what
depends on the client's own node features and labels.

A tiny run on PROTEINS with the same label skew (5 clients, Dirichlet 0.3, 3 rounds in QUICK mode,
hidden 16, encodings of 8 steps / 8 degrees) is enough to see the split of the parameters."""),
    ("code", """try:
    fs_dataset = "PROTEINS"
    fj.load(fs_dataset)
except Exception as e:                       # no shared data here: the synthetic stand-in again
    print("PROTEINS not available:", str(e).splitlines()[0])
    fs_dataset = dataset
fs_cfg = fj.default_config("baseline", task="graph_cls", dataset=fs_dataset, algorithm="fedstar", clients=5,
                           partition="dirichlet", dirichlet_beta=0.3, rounds=3 if QUICK else 30, hidden=16,
                           graph_batch_size=64, fedstar_rw_steps=8, fedstar_dg_dims=8)
fs_prog = fj.build(fs_cfg)
fs = fj.run(fs_prog.algorithm, fs_prog.data, jax.random.key(fs_cfg.seed), fs_cfg.rounds, progress=False)
print(f"FedStar on {fs_dataset}: test acc per round", np.round(np.asarray(fs.history["test_acc"]), 3))

# which parameters the server averages (the structure channel) and which stay with each client:
# the server's copy of a local part is never used; the clients' own copies differ from each other
print(f"{'parameters':22s} {'numbers':>8s}  where          max |client - client 0|")
for name, part in fs.state.server["params"].items():
    size = sum(int(np.size(a)) for a in jax.tree.leaves(part))
    if name.startswith("struct_"):
        print(f"{name:22s} {size:8d}  shared (server)  -")
    else:
        own = fs.state.personal["params"][name]
        spread = max(float(np.abs(np.asarray(a) - np.asarray(a)[:1]).max()) for a in jax.tree.leaves(own))
        print(f"{name:22s} {size:8d}  local (client)   {spread:.3g}")"""),
]

nb = nbf.v4.new_notebook()
nb.cells = [nbf.v4.new_markdown_cell(src) if kind == "md" else nbf.v4.new_code_cell(src) for kind, src in cells]
nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
nbf.write(nb, Path(__file__).with_name("08_graph_fl.ipynb"))
