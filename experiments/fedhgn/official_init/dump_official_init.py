"""Dump the official FedHGN code's initial parameters for one seed (run INSIDE a checkout of
github.com/cynricfu/FedHGN with its PyTorch/DGL environment; not imported by fgl_jax).

    cd <FedHGN checkout> && python <this file> --seed 1000 --setting edges --clients 3 --out <dir>

Builds the official `FedHGN(args)` object exactly as its main.py does after `set_random_seeds(seed)`
and pickles (our own trusted output; read back with fgl_jax.data.safe_pickle) the server's encoder
and decoder state and each client's node embeddings and basis coefficients, keyed by the official
type names. No training happens here: `experiments/fedhgn/official_init.py` trains fgl_jax from
these parameters.
"""
import argparse
import os
import pickle
import sys

import torch as th

sys.path.insert(0, os.getcwd())                 # the official checkout (run from its root)
from FedHGN import FedHGN                       # noqa: the official repository's module
from utils import get_save_path, load_configs, set_random_seeds

ap = argparse.ArgumentParser()
ap.add_argument("--seed", type=int, required=True)
ap.add_argument("--setting", default="edges", choices=("edges", "etypes"))
ap.add_argument("--clients", type=int, default=3)
ap.add_argument("--dataset", default="AIFB")
ap.add_argument("--out", default=".")
a = ap.parse_args()
args = argparse.Namespace(dataset=a.dataset, split_strategy=a.setting, framework="FedHGN", ablation=None,
                          model="RGCN", num_clients=a.clients, gpu=-1, random_seed=a.seed,
                          config_path="./configs.yaml")
args = load_configs(args)
args.device = th.device("cpu")
args.save_path = get_save_path(args)
set_random_seeds(a.seed)
fl = FedHGN(args)
to_np = lambda t: t.detach().numpy().copy()
init = {"server_enc": {k: to_np(v) for k, v in fl.server.state_dict_encoder.items()},
        "server_dec": {k: to_np(v) for k, v in fl.server.state_dict_decoder.items()},
        "clients": [{"emb": {t: to_np(e.weight) for t, e in c.encoder.embed_layer.embeds.items()},
                     "coeff": {e: to_np(p) for e, p in c.encoder.basis_coeffs_encoder[0].items()}}
                    for c in fl.clients]}
with open(f"{a.out}/official_init_{a.setting}{a.clients}_{a.seed}.pkl", "wb") as f:
    pickle.dump({"init": init}, f)
