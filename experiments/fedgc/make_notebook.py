"""Write notebooks/03_fedgc.ipynb (no outputs; then python notebooks/execute.py stores them) with nbformat. Run: python experiments/fedgc/make_notebook.py"""
from pathlib import Path

import nbformat as nbf

cells = [
    nbf.v4.new_markdown_cell(
        "# FedGC: federated graph condensation with the information bottleneck\n\n"
        "Condense Cora across 10 label-Dirichlet clients by matching per-class gradients of a fresh relay "
        "GCN every round (the server sees only the weighted aggregate), look at the synthetic graph, and "
        "compare accuracy and membership-inference AUC with and without the IB transformation.\n\n"
        "`QUICK = True` runs a few rounds only (numbers are then far from converged) and shrinks the IB "
        "encoder to dim(z) = 64 with a random frozen decoder (the official code's choice; the paper uses "
        "dim(z) = d and φ = φ_st); set it to False for the 500-round protocol."),
    nbf.v4.new_code_cell("QUICK = True\nDATA_DIR = None  # or the folder holding planetoid/ (else FGL_JAX_DATA)"),
    nbf.v4.new_code_cell(
        "import dataclasses\nimport jax, numpy as np\n%matplotlib inline\n"
        "import matplotlib.pyplot as plt\n"
        "from fgl_jax import DatasetNotFoundError, csbm, engine, load_planetoid\n"
        "from fgl_jax.systems.fedgc import FedGCConfig, FedGCRun, MIAConfig\n"
        "try:\n    graph = load_planetoid('cora', data_dir=DATA_DIR)\n"
        "except (DatasetNotFoundError, FileNotFoundError):\n"
        "    # no data: a Cora-sized synthetic CSBM stands in (clearly not Cora)\n"
        "    graph = csbm(num_nodes=2708, num_classes=7, num_features=300, sparse_features=True, seed=0, name='csbm-cora-size')\n"
        "print(graph.name, graph.num_nodes, graph.num_features, graph.num_classes)"),
    nbf.v4.new_code_cell(
        "# FedGCConfig() is the headline cell (2000 rounds, G' evaluated every 250); QUICK shrinks it\n"
        "rounds = 20 if QUICK else 500\n"
        "cfg = FedGCConfig(rounds=rounds, eval_rounds=(rounds,) if QUICK else (100, 200, 300, 400, 500),\n"
        "                  st_rounds=10 if QUICK else 200,\n"
        "                  # dim(z) = 128 as in experiments/fedgc (paper: d; see results.md for the paper-sized run)\n"
        "                  ib_hidden=64 if QUICK else 128, ib_epochs=10 if QUICK else 100, ib_dim=64 if QUICK else 128,\n"
        "                  ib_decoder_hidden=64 if QUICK else 256,\n"
        "                  eval_iters=100 if QUICK else 600, eval_decay_at=50 if QUICK else 300,\n"
        "                  finetune_steps=0 if QUICK else 30)  # quick: no fine-tuning (saves its compile)\n"
        "mia_cfg = MIAConfig(iters=50 if QUICK else 600, attack_epochs=50 if QUICK else 300)\n"
        "# the two knobs the paper leaves open (experiments/results/fedgc, 'Knobs' table) default to the headline\n"
        "# setting: IB encoder lr 0.01 and a sparse A' init; the authors' code uses lr 2e-3 and torch's init\n"
        "# (every A'_ij starts near 0.5)\n"
        "code_knobs = dataclasses.replace(cfg, ib_lr=2e-3, pge_init_bias=None)\n"
        "variants = {'FedGC (IB)': cfg, 'FedGC† (no IB)': dataclasses.replace(cfg, defence='none', pge_init_bias=None)}\n"
        "if not QUICK:\n"
        "    variants['FedGC, code\\'s IB lr + torch A\\' init'] = code_knobs\n"
        "results, cache = {}, {}\n"
        "for name, vcfg in variants.items():\n"
        "    run = FedGCRun(vcfg, graph=graph, cache=cache)      # host preparation, once\n"
        "    out = engine.execute(run.program, vcfg.seed)         # the rounds, through the engine\n"
        "    res = run.result(out)\n"
        "    att = run.attack(res, mia_cfg)\n"
        "    results[name] = (res, att)\n"
        "    print(name, {k: round(v, 4) for k, v in res.final.items() if k.startswith('test_acc')}, att)"),
    nbf.v4.new_code_cell(
        "fig, axes = plt.subplots(1, len(results) + 1, figsize=(4.3 * (len(results) + 1), 4))\n"
        "for ax, (name, (res, _)) in zip(axes, results.items()):\n"
        "    a, x, y = res.condensed\n"
        "    im = ax.imshow(a, cmap='viridis'); ax.set_title(f\"A' {name}\"); fig.colorbar(im, ax=ax)\n"
        "res = results['FedGC (IB)'][0]\n"
        "axes[-1].plot(res.losses); axes[-1].set_yscale('log'); axes[-1].set_title('matching loss per round')\n"
        "plt.tight_layout()"),
    nbf.v4.new_code_cell(
        "print(f\"{'variant':18s} {'acc (ft)':>9s} {'acc (no ft)':>11s} {'AUC raw X':>10s} {'AUC Z':>7s} {'AUC Z null':>11s} \"\n"
        "      f\"{'AUC Z fresh':>12s}\")\n"
        "for name, (res, att) in results.items():\n"
        "    print(f\"{name:18s} {res.final['test_acc']:9.3f} {res.final['test_acc_noft']:11.3f} \"\n"
        "          f\"{att.get('mia_auc', float('nan')):10.3f} {att['mia_auc_z']:7.3f} {att['mia_auc_z_null']:11.3f} \"\n"
        "          f\"{att.get('mia_auc_z_fresh', float('nan')):12.3f}\")"),
    nbf.v4.new_markdown_cell(
        "AUC 0.5 = the attacker cannot tell members from non-members. Under IB, G' lives in the clients' Z "
        "space, so the server's raw-feature query (spec default) cannot run when dim(z) != d, and when it can, "
        "the target GCN classifies raw features at about chance (`mia_target_acc_*` in `att`): an AUC near 0.5 "
        "there is a feature-space mismatch, not privacy. The Z column queries each node in its owner's graph "
        "with the owner's Z. 'AUC Z null' is the same attack on a GCN that never saw a member or G' (trained "
        "on validation nodes with owner features): the membership signal carried by Z itself, since a member's "
        "z was fitted to its true label. AUC Z minus AUC Z null is what G' adds. 'AUC Z fresh' (IB only) "
        "queries with a new draw of each node's z from the same encoder posterior: G' was matched to one draw, "
        "so the drop from 'AUC Z' is what G' memorised of that particular noise."),
]
nb = nbf.v4.new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}})
out = Path(__file__).resolve().parents[2] / "notebooks" / "03_fedgc.ipynb"
nbf.write(nb, out)
print("wrote", out)
