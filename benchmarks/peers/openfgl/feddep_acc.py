"""FedDEP's accuracy gap to OpenFGL, one difference at a time (outside CI; never imported by tests).

    FGL_JAX_DATA=/work/shared/data nice python -m benchmarks.peers.openfgl.feddep_acc \
        --openfgl-workdir W --out benchmarks/peers/openfgl/results_feddep_acc

fgl_jax side: the setting of `compare.py` (10 Louvain clients, OpenFGL's per-client split with
split_seed = seed, SAGE classifier with the embedding branch, Adam lr 1e-2, L2 5e-4, 30 rounds) with
compare.py's FedDEP options as its first FedDEP comparison ran them (results_pubdep.md, in git's
history; `BASE`: dropout on in the local
steps), then each variant's option overrides on top (`FGL_VARIANTS`).
OpenFGL side: the results `feddep_variants_openfgl.py` wrote as W/<dataset>_feddep_<seed>/<variant>.json
(and compare.py's own W/.../result.json as `openfgl`). Reported per variant: mean test accuracy at
the best-validation round (first maximum, as compare.py) and at the last round, over the seeds.
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from benchmarks.peers.openfgl.compare import FGL_OPTIONS

# the options of the first FedDEP comparison (results_pubdep.md, in git's history): compare.py's, with
# the classifier's dropout on
BASE = {**FGL_OPTIONS["feddep"], "feddep_local_dropout": True}
# fgl_jax variant -> option overrides on top of BASE
FGL_VARIANTS = {
    "openfgl": {},
    "openfgl, full batch": {"feddep_batch_size": 4096},
    "openfgl, glorot init": {"feddep_init": "glorot"},
    "paper": {"feddep_variant": "paper", "feddep_init": "glorot"},
    "openfgl, untrained DGen": {"feddep_pretrain_epochs": 0, "feddep_epochs": 0},
    "openfgl, 5 sampled neighbours": {"feddep_fanout": 5},
    "openfgl, no dropout in local steps": {"feddep_local_dropout": False},
    "openfgl, no dropout in local steps, 5 sampled neighbours": {"feddep_local_dropout": False, "feddep_fanout": 5},
    "openfgl, OpenFGL's cross-client gradients": {"feddep_cross_grad": "openfgl"},
    # the same splits and options, other random draws (initialisation, DGen, dropout, batches)
    "openfgl, run key seed + 100": {"key_offset": 100},
    "openfgl, run key seed + 200": {"key_offset": 200},
}


def run_variant(ds: str, options: dict, seeds: list[int], rounds: int) -> list[dict]:
    import jax
    options = dict(options)
    offset = options.pop("key_offset", 0)   # run seed (host draws and key) = seed + offset; split seed = seed
    from fgl_jax import RunConfig, run
    from fgl_jax.systems.baseline import algorithm_from_config, prepare
    cfg = RunConfig(dataset=ds, algorithm="feddep", clients=10, partition="louvain", split="openfgl", model="gcn",
                    hidden=64, num_layers=2, dropout=0.5, local_steps=3, optimizer="adam", lr=0.01,
                    weight_decay=5e-4, rounds=rounds, eval_mode="local_model_on_local_data",
                    eval_average="client_nodes", **{**BASE, **options})
    out, algorithm = [], None
    for seed in seeds:
        prep = prepare(cfg.replace(split_seed=seed, seed=seed + offset))
        algorithm = algorithm or algorithm_from_config(cfg, prep.graph)
        res = run(algorithm, prep.data, jax.random.key(seed + offset), rounds)
        out.append({"seed": seed, "best_test": float(res.best["best_test"]), "best_round": int(res.best["best_round"]),
                    "final_test": float(res.history["test_acc"][-1]),
                    "curve_val": [float(x) for x in res.history["val_acc"]],
                    "curve_test": [float(x) for x in res.history["test_acc"]],
                    **mend_stats(np.asarray(res.state.mend), np.asarray(prep.data.eval.node_mask))})
        print(f"fgl_jax {ds} {options} seed {seed}: {out[-1]}", flush=True)
    return out


def mend_stats(mend: np.ndarray, real: np.ndarray) -> dict:
    """What the classifier's embedding branch reads: mend [C, N, h] (the mean over the P slots)
    on the clients' real nodes (real bool [C, N]): the share of nodes with a nonzero mend and the
    mean |entry| (feddep_variants_openfgl.py measures the same on OpenFGL's mend_emb.mean(1))."""
    m = mend[real]
    return {"mend_nonzero": float((np.abs(m).sum(-1) > 0).mean()), "mend_abs": float(np.abs(m).mean())}


def openfgl_results(workdir: Path, ds: str, seeds: list[int], base_from: str | None = None) -> dict[str, list[dict]]:
    """Per OpenFGL variant, its runs in `workdir`; `base_from`: a compare.py results JSON whose
    FedDEP runs of the same jobs fill the seeds the unchanged variant (`openfgl`) lacks there
    (OpenFGL is deterministic per seed here: seed 0 re-run gave the earlier run's accuracy)."""
    found: dict[str, list[dict]] = {}
    if base_from:
        base = json.loads(Path(base_from).read_text())
        if "schema" in base:  # the comparison record: its FedDEP cell of this dataset
            base = base["metrics"]["cells"].get(f"{ds}/feddep", {})
        for r in base.get("runs", []):
            if (r["dataset"], r["algorithm"]) == (ds, "feddep") and r["seed"] in seeds and \
                    not (workdir / f"{ds}_feddep_{r['seed']}" / "result.json").exists():
                o = r["openfgl"]
                found.setdefault("openfgl", []).append({"seed": r["seed"], "best_test": o["best_test"],
                                                        "best_round": o["best_round"], "final_test": o["final_test"],
                                                        "from": base_from})
    for seed in seeds:
        d = workdir / f"{ds}_feddep_{seed}"
        files = {"openfgl": d / "result.json", **{p.stem: p for p in d.glob("*.json")
                                                  if p.stem not in ("job", "result")}}
        for name, path in files.items():
            if path.exists():
                r = json.loads(path.read_text())
                found.setdefault(name, []).append({"seed": seed, "best_test": r["best_test"],
                                                   "best_round": r["best_round"], "final_test": r["final_test"],
                                                   **r.get("mend_stats", {}),
                                                   **{k: r[k] for k in ("curve_val", "curve_test") if k in r}})
    return found


def row(side: str, variant: str, runs: list[dict]) -> dict:
    b = [100 * r["best_test"] for r in runs]
    f = [100 * r["final_test"] for r in runs]
    borrowed = [r for r in runs if "from" in r]
    if borrowed:
        variant += f" (seeds {' '.join(str(r['seed']) for r in borrowed)}: {Path(borrowed[0]['from']).name})"
    return {"side": side, "variant": variant, "seeds": " ".join(str(r["seed"]) for r in runs),
            "acc % (best val)": f"{np.mean(b):.2f}", "per seed": " / ".join(f"{x:.2f}" for x in b),
            "acc % (last round)": f"{np.mean(f):.2f}",
            "nodes with a mend": f"{np.mean([r['mend_nonzero'] for r in runs]):.3f}" if all("mend_nonzero" in r for r in runs) else "-",
            "mean abs(mend)": f"{np.mean([r['mend_abs'] for r in runs]):.4f}" if all("mend_abs" in r for r in runs) else "-"}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", default="citeseer")
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--variants", nargs="+", default=list(FGL_VARIANTS), choices=list(FGL_VARIANTS))
    p.add_argument("--openfgl-workdir", default=None)
    p.add_argument("--openfgl-base-from", default=None, help="compare.py's record (or an older results JSON) "
                   "filling the unchanged "
                   "OpenFGL variant's seeds missing from --openfgl-workdir")
    p.add_argument("--fgl-from", default=None, help="reuse the fgl_jax runs of an earlier <out>.json")
    p.add_argument("--out", default="benchmarks/peers/openfgl/results_feddep_acc")
    p.add_argument("--notes", default=None, help="markdown file appended to the table")
    a = p.parse_args(argv)
    from fgl_jax import records, table
    started = time.time()
    load = [os.getloadavg()[0]]
    fgl = records.read(a.fgl_from)["metrics"]["fgl_jax"] if a.fgl_from else {}
    ran = [v for v in a.variants if v not in fgl]
    for v in ran:
        fgl[v] = run_variant(a.dataset, FGL_VARIANTS[v], a.seeds, a.rounds)
    load.append(os.getloadavg()[0])
    ofgl = openfgl_results(Path(a.openfgl_workdir), a.dataset, a.seeds, a.openfgl_base_from) if a.openfgl_workdir else {}
    for runs in ofgl.values():
        runs.sort(key=lambda r: r["seed"])
    rows = [row("fgl_jax", v, r) for v, r in fgl.items()] + [row("OpenFGL", v, r) for v, r in ofgl.items()]
    notes = [f"", f"{a.dataset}, 10 Louvain clients, OpenFGL's per-client split (split seed = seed), {a.rounds} "
             f"rounds; fgl_jax options: compare.py's FedDEP options with dropout on (BASE) plus the variant's overrides "
             f"({json.dumps({v: FGL_VARIANTS.get(v, '?') for v in fgl})}); OpenFGL variants: "
             f"feddep_variants_openfgl.py. " + (f"fgl_jax runs taken from {a.fgl_from}." if a.fgl_from and not ran else "")
             + (f"Load average {load[0]:.1f} / {load[1]:.1f} around the fgl_jax runs made here ({', '.join(ran)})." if ran else "")]
    if a.notes:
        notes += ["", Path(a.notes).read_text()]
    rec = records.make(Path(a.out).name, {"rows": rows, "fgl_jax": fgl, "openfgl": ofgl}, config=vars(a),
                       seeds=a.seeds, provenance=records.provenance(started=started),
                       title=f"FedDEP accuracy variants, fgl_jax and OpenFGL ({a.dataset})")
    records.write(Path(a.out).with_suffix(".json"), rec, markdown=table(rows, disable_numparse=True) + "\n" + "\n".join(notes))
    print(table(rows, disable_numparse=True))


if __name__ == "__main__":
    main()
