"""Run the authors' FedHGN main.py for one (split, framework, seed), inside the peer venv.

    cd <FedHGN checkout> && <venv>/bin/python run_official.py --data-dir DIR --split edges|etypes
        --framework FedHGN|FedAvg --seed 1000 [--clients 3] [--trace trace.json] --out result.json

Not imported by fgl_jax. Changes nothing in the authors' training loop; around it:
- one thread (torch.set_num_threads(1)) and DataLoader workers 0 instead of the code's hard-coded 4
  on CPU (the workers only fetch the one full batch; they draw no random numbers of their own, so
  the torch RNG stream and hence the results are unchanged -- checked on seed 1000 against the
  log of an earlier run with 4 workers);
- a config file that is configs.yaml with the dataset path pointed at --data-dir (where the
  split file `aifb-hetero_random-<split>_<K>.bin` lies: the authors' own or fgl_jax's export);
- with --trace, per round: validation and test accuracy (client-weighted as the code's
  evaluate), the alignment term (before the factor lambda) of each client's E local steps (FedHGN) and the norms of each
  client's basis coefficients (FedHGN) -- observed, never changed;
- the final test metrics (main.py's print) go to --out as JSON.
"""
import argparse
import json
import os
import sys
import time

import torch as th

th.set_num_threads(1)
sys.path.insert(0, os.getcwd())                 # the authors' checkout (run from its root)

import dgl.dataloading                          # noqa: E402

_DL = dgl.dataloading.DataLoader


class _NoWorkers(_DL):
    def __init__(self, *a, **kw):
        kw["num_workers"] = 0
        super().__init__(*a, **kw)


dgl.dataloading.DataLoader = _NoWorkers

import yaml                                      # noqa: E402
import FedHGN as official_fedhgn                 # noqa: E402  the authors' module
import main as official_main                     # noqa: E402
from utils import get_save_path, load_configs, set_random_seeds  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--data-dir", required=True, help="folder holding aifb-hetero_random-<split>_<K>.bin")
ap.add_argument("--split", choices=("edges", "etypes"), required=True)
ap.add_argument("--framework", choices=("FedHGN", "FedAvg"), required=True)
ap.add_argument("--seed", type=int, required=True)
ap.add_argument("--clients", type=int, default=3)
ap.add_argument("--trace", default=None)
ap.add_argument("--out", required=True)
ap.add_argument("--saves", default=None, help="where main.py's checkpoints go (default ./saves)")
a = ap.parse_args()

with open("configs.yaml") as f:
    cfg = yaml.load(f, Loader=yaml.FullLoader)
cfg["datasets"]["AIFB"]["path"] = os.path.abspath(a.data_dir)
cfg_path = os.path.abspath(a.out) + ".configs.yaml"
with open(cfg_path, "w") as f:
    yaml.dump(cfg, f)

args = argparse.Namespace(dataset="AIFB", split_strategy=a.split, framework=a.framework, ablation=None,
                          model="RGCN", num_clients=a.clients, gpu=-1, random_seed=a.seed, config_path=cfg_path)
args = load_configs(args)
args.device = th.device("cpu")
args.save_path = get_save_path(args) if a.saves is None else get_save_path(args, prefix=a.saves)

trace = []
if a.trace:
    step_align = {}                 # client id -> alignment term of each local step this round
    Client = official_fedhgn.Client
    _reg = Client.compute_alignment_regularization

    def _logged_reg(self):
        r = _reg(self)
        step_align.setdefault(self.id, []).append(float(r))
        return r

    Client.compute_alignment_regularization = _logged_reg
    FL = official_fedhgn.FedHGN if a.framework == "FedHGN" else official_main.FedAvg
    _evaluate = FL.evaluate

    def _traced_evaluate(self, is_test=False):
        res = _evaluate(self, is_test)
        if not is_test:             # the per-round validation call: add test, alignment, norms
            row = {"round": len(trace) + 1, "val": res["accuracy"], "test": _evaluate(self, True)["accuracy"]}
            if a.framework == "FedHGN":
                row["align"] = [step_align.pop(c.id, None) for c in self.clients]
                row["coeff_norm"] = [float(th.sqrt(sum((p.detach() ** 2).sum() for d in c.encoder.basis_coeffs_encoder
                                                       for p in d.values()))) for c in self.clients]
            trace.append(row)
        return res

    FL.evaluate = _traced_evaluate

set_random_seeds(a.seed)
t0 = time.time()
fl = official_fedhgn.FedHGN(args) if a.framework == "FedHGN" else official_main.FedAvg(args)
fl.train()
fl.load_checkpoint(args.save_path)
res = fl.evaluate(is_test=True)
out = {"split": a.split, "framework": a.framework, "seed": a.seed, "clients": a.clients,
       "test": {k: float(v) for k, v in res.items()}, "seconds": time.time() - t0, "save_path": args.save_path,
       "torch": th.__version__, "dgl": dgl.__version__}
if a.trace:
    out["rounds"] = len(trace)
    with open(a.trace, "w") as f:
        json.dump(trace, f)
with open(a.out, "w") as f:
    json.dump(out, f)
print(json.dumps(out))
