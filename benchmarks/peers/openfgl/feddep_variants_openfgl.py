"""OpenFGL 1.1.0's FedDEP with one behaviour changed at a time, to find where its CiteSeer accuracy
parts from fgl_jax's (results_feddep_acc.md). Runs in the OpenFGL venv, like run_openfgl.py, on a
job that `compare.py --openfgl-only --workdir W` wrote (W/<dataset>_feddep_<seed>/job.json):

    VENV/bin/python benchmarks/peers/openfgl/feddep_variants_openfgl.py JOB.json RESULT.json VARIANT

The installed package is not edited: each variant replaces one name in OpenFGL's modules in this
process only, after run_openfgl.py's own FedDEP patches.

Variants:
  openfgl        nothing changed (the reference).
  summed_grads   the cross-client step adds each other client's gradient once: OpenFGL keeps the
                 gradient buffers across clients (the last pre-training step's gradient stays in
                 them) and `dep_grad[k] += v.grad` on an alias of `v.grad` doubles the running sum
                 per client. Here every parameter's `.grad` is a fresh zero tensor before each
                 other client's backward pass, so `dep_grad` ends as sum_j g_j.
  kmeans         prototypes from K-means (scikit-learn, k-means++, 10 starts) on the encoder's
                 embeddings instead of DEC (autoencoder + deep embedded clustering).
  full_neighbours  the classifier's local epoch samples every neighbour per hop (OpenFGL: 5).
  train_mode     the classifier's local epoch runs in training mode (dropout on): OpenFGL's client
                 never calls model.train() after its evaluation switched the model to eval().
  zero_mend      the mended graph carries zero generated embeddings (the classifier's embedding
                 branch then sees only its biases): how much the generated neighbours matter.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run_openfgl  # noqa: E402  (sets TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD before torch loads)

import numpy as np  # noqa: E402
import torch  # noqa: E402


def _summed_grads() -> None:
    from openfgl.flcore.feddep import client
    current = {}
    make_model, rec_loss = client.FedDEP, client.FedRecLoss

    def fed_dep(local_dgen):   # remember the model the client is about to train
        current["model"] = make_model(local_dgen)
        return current["model"]

    def fed_rec_loss(**kw):    # called once per other client, just before that client's backward()
        for p in current["model"].parameters():
            p.grad = torch.zeros_like(p)
        return rec_loss(**kw)

    client.FedDEP, client.FedRecLoss = fed_dep, fed_rec_loss


def _kmeans() -> None:
    from sklearn.cluster import KMeans
    from openfgl.flcore.feddep import _utils

    def get_prototypes(emb, K, *_, **__):
        x = emb.cpu().numpy().astype(np.float64)
        km = KMeans(n_clusters=K, n_init=10, random_state=int(np.random.randint(2**31 - 1))).fit(x)
        return km.cluster_centers_, km.labels_.astype(np.int32)

    _utils.get_prototypes = get_prototypes


def _full_neighbours() -> None:
    from openfgl.flcore.feddep import client
    sampler = client.NeighborSampler   # run_openfgl's stand-in, already installed

    def every_neighbour(*a, sizes=(-1,), **kw):
        return sampler(*a, sizes=[-1] * len(sizes), **kw)

    client.NeighborSampler = every_neighbour


MEND = []   # per client: (nodes, nodes with a nonzero mend, sum of |mend_emb.mean(1)|, entries)


def _record_mend(zero: bool = False) -> None:
    """Record what the classifier's embedding branch will read (mend_emb.mean(1), as Classifier_F
    takes it); zero=True then replaces it by zeros."""
    from openfgl.flcore.feddep import client
    mender = client.GraphMender

    def mend(**kw):
        filled = mender(**kw)   # still drawn under zero_mend, so the random streams stay aligned
        e = filled["data"].mend_emb.mean(1)
        MEND.append((e.shape[0], int((e.abs().sum(-1) > 0).sum()), float(e.abs().sum()), e.numel()))
        if zero:
            filled["data"].mend_emb = torch.zeros_like(filled["data"].mend_emb)
        return filled

    client.GraphMender = mend


def _zero_mend() -> None:
    _record_mend(zero=True)


def _train_mode() -> None:
    from openfgl.flcore.feddep import client
    execute = client.FedDEPClient.execute

    def in_train_mode(self):   # OpenFGL's evaluation leaves the classifier in eval mode (no dropout)
        self.task.model.train()
        return execute(self)

    client.FedDEPClient.execute = in_train_mode


VARIANTS = {"openfgl": lambda: None, "train_mode": _train_mode, "summed_grads": _summed_grads, "kmeans": _kmeans,
            "full_neighbours": _full_neighbours, "zero_mend": _zero_mend}


def main(job_path: str, result_path: str, variant: str) -> None:
    if variant not in VARIANTS:
        sys.exit(f"unknown variant {variant!r}; choose from {sorted(VARIANTS)}")
    base = run_openfgl.PATCHES["feddep"]

    rows = []

    def patch():
        from openfgl.utils.logger import Logger
        add_log = Logger.add_log
        Logger.add_log = lambda self, r: (rows.append(dict(r)), add_log(self, r))[-1]   # the per-round curve
        base()
        VARIANTS[variant]()
        if variant != "zero_mend":
            _record_mend()

    run_openfgl.PATCHES["feddep"] = patch
    run_openfgl.main(job_path, result_path)
    out = json.loads(Path(result_path).read_text())
    m = np.array(MEND, float).sum(0)
    out["variant"] = variant
    out["curve_val"] = [float(r["current_val_accuracy"]) for r in rows]
    out["curve_test"] = [float(r["current_test_accuracy"]) for r in rows]
    out["mend_stats"] = {"mend_nonzero": m[1] / m[0], "mend_abs": m[2] / m[3]}
    Path(result_path).write_text(json.dumps(out))


if __name__ == "__main__":
    main(*sys.argv[1:4])
