"""Write notebooks/02_lumos.ipynb (no outputs; then python notebooks/execute.py stores them). Run: python experiments/lumos/make_notebook.py"""
from pathlib import Path

import nbformat as nbf

ROOT = Path(__file__).resolve().parents[2]
cells = [
    ("md", "# Lumos: federated GNN over devices (trees, workload trimming, LDP features)\n\n"
           "Every vertex is a device holding its ego network. This notebook shows the workload CDF before and "
           "after trimming (Fig. 7), one device's tree (Fig. 2) and Lumos training curves next to centralised GCN. "
           "`QUICK = True` uses a synthetic power-law graph (no data files, < 60 s); `QUICK = False` uses LastFM Asia "
           "(set `FGL_JAX_DATA`)."),
    ("code", "QUICK = True"),
    ("code", "import os\nimport numpy as np\nimport networkx as nx\n%matplotlib inline\n"
             "import matplotlib.pyplot as plt\n"
             "import jax\n"
             "from fgl_jax import Graph, random_split, run, symmetrize\n"
             "from fgl_jax.systems.lumos import (EdgeSet, LumosConfig, build_trees, exact_min_max, greedy_init, is_covered,\n"
             "                                   lumos_algorithm, max_workload, mcmc_trim, minmax_scale, prepare, train_central,\n"
             "                                   workload_cdf, workloads)"),
    ("code", "if QUICK:\n"
             "    # power-law graph with class-informative features (stand-in when no data is present)\n"
             "    n, k = 600, 4\n"
             "    rng = np.random.default_rng(0)\n"
             "    nxg = nx.barabasi_albert_graph(n, 3, seed=0)\n"
             "    e = np.array(nxg.edges())\n"
             "    s, r = symmetrize(e[:, 0], e[:, 1], n)\n"
             "    y = rng.integers(0, k, n).astype(np.int32)\n"
             "    x = (rng.normal(size=(n, 16)) + 1.5 * np.eye(k, 16)[y]).astype(np.float32)\n"
             "    mask = np.zeros(n, bool)\n"
             "    g = Graph('ba_synthetic', s, r, x, y, k, mask, mask, mask)\n"
             "    epochs, iters = 60, 300\n"
             "else:\n"
             "    from fgl_jax import load_lastfm_asia\n"
             "    g = load_lastfm_asia()\n"
             "    epochs, iters = 300, 300\n"
             "g = random_split(g, 0.5, 0.25, 0.25, seed=0)\n"
             "print(g.name, g.num_nodes, 'devices,', g.num_undirected_edges(), 'edges')"),
    ("md", "## Workload balancing\nGreedy initialisation (Alg. 1), MCMC trimming (Alg. 2, Metropolis–Hastings), and "
           "the exact optimum of Eq. 10 by max-flow (beyond the paper; the problem is polynomial)."),
    ("code", "es = EdgeSet.from_graph(g)\n"
             "keep0, _ = greedy_init(es)\n"
             "res = mcmc_trim(es, keep0, iters, seed=0)\n"
             "opt, keep_opt = exact_min_max(es)\n"
             "print('max degree', es.degree.max(), '| greedy', max_workload(es, keep0), '| MCMC', res.f_history[-1],\n"
             "      '| exact', opt, '| covered', is_covered(es, res.keep))\n"
             "fig, ax = plt.subplots(1, 2, figsize=(10, 3.5))\n"
             "for label, wl in [('no trimming', es.degree), ('greedy', workloads(es, keep0)),\n"
             "                  ('MCMC', workloads(es, res.keep)), ('exact', workloads(es, keep_opt))]:\n"
             "    v, c = workload_cdf(wl)\n"
             "    ax[0].step(v, c, where='post', label=label)\n"
             "ax[0].set_xscale('log'); ax[0].set_xlabel('workload |N_v|'); ax[0].set_ylabel('CDF'); ax[0].legend()\n"
             "ax[1].plot(res.f_history); ax[1].axhline(opt, ls='--', c='k', label='exact optimum')\n"
             "ax[1].set_xlabel('MCMC iteration'); ax[1].set_ylabel('max workload f(X)'); ax[1].legend()\n"
             "plt.tight_layout(); plt.show()"),
    ("md", "## One device's tree (Fig. 2)\nLeaf pairs (self copy `s`, neighbour `l`), parent virtual nodes `P`, root `R`: 3n+1 nodes."),
    ("code", "tb, meta = build_trees(es, res.keep, g.num_features)\n"
             "v = int(np.flatnonzero((meta.workload >= 3) & (meta.workload <= 5))[0])\n"
             "o, m = int(meta.device_offset[v]), int(meta.device_size[v])\n"
             "snd, rcv, em = (np.asarray(a) for a in (tb.senders, tb.receivers, tb.edge_mask))\n"
             "sel = em & (snd >= o) & (snd < o + m)\n"
             "T = nx.Graph(); T.add_edges_from(zip(snd[sel] - o, rcv[sel] - o))\n"
             "types = np.asarray(tb.node_type)[o:o + m]; verts = np.asarray(tb.node_vertex)[o:o + m]\n"
             "names = {0: 's', 1: 'l', 2: 'P', 3: 'R'}\n"
             "labels = {i: f\"{names[int(t)]}{'' if verts[i] < 0 else ':' + str(verts[i])}\" for i, t in enumerate(types)}\n"
             "depth = {0: 0, 1: 0, 2: 1, 3: 2}\n"
             "pos = {i: ((i % max(1, meta.workload[v])) * 2 + (0.8 if types[i] == 1 else 0), depth[int(types[i])])\n"
             "       for i in range(m)}\n"
             "pos[m - 1] = (meta.workload[v] - 1, 2)\n"
             "plt.figure(figsize=(7, 3))\n"
             "nx.draw(T, pos, labels=labels, node_color=[['tab:blue', 'tab:orange', 'lightgray', 'gray'][int(t)] for t in types],\n"
             "        node_size=500, font_size=7)\n"
             "plt.title(f'tree of device {v}: {m} nodes = 3*{meta.workload[v]}+1'); plt.show()"),
    ("md", "## Training: Lumos (ε = 2) vs centralised GCN\nOne shared parameter set; per epoch one full-batch Adam "
           "step on the mean loss over all devices (one jitted program over every device's tree)."),
    ("code", "cfg = LumosConfig(model='gcn', rounds=epochs, mcmc_iters=iters)\n"
             "prep = prepare(g, cfg)\n"
             "res = run(lumos_algorithm(cfg, g.num_classes), prep.data, jax.random.key(cfg.seed), cfg.rounds)\n"
             "out = {'best': res.best, 'history': res.history}\n"
             "cen = train_central(g, minmax_scale(g.x), cfg)\n"
             "print('Lumos best', out['best'], '| centralised best', cen['best'])\n"
             "fig, ax = plt.subplots(1, 2, figsize=(10, 3.5))\n"
             "ax[0].plot(out['history']['train_loss'], label='Lumos'); ax[0].plot(cen['history']['train_loss'], label='centralised')\n"
             "ax[0].set_xlabel('epoch'); ax[0].set_ylabel('train loss'); ax[0].legend()\n"
             "ax[1].plot(out['history']['val_acc'], label='Lumos'); ax[1].plot(cen['history']['val_acc'], label='centralised')\n"
             "ax[1].set_xlabel('epoch'); ax[1].set_ylabel('val accuracy'); ax[1].legend()\n"
             "plt.tight_layout(); plt.show()"),
]
nb = nbf.v4.new_notebook()
nb.cells = [nbf.v4.new_markdown_cell(c) if t == "md" else nbf.v4.new_code_cell(c) for t, c in cells]
nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
(ROOT / "notebooks").mkdir(exist_ok=True)
nbf.write(nb, ROOT / "notebooks" / "02_lumos.ipynb")
print("wrote notebooks/02_lumos.ipynb")
