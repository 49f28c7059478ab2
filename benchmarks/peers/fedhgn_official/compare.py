"""FedHGN on AIFB K=3: the paper, the authors' code (run here) and fgl_jax, side by side.

    bash benchmarks/peers/fedhgn_official/setup.sh            # peer venv (torch 2.2.1 + DGL 2.1.0, CPU)
    FGL_JAX_DATA=/work/shared/data python -m benchmarks.peers.fedhgn_official.compare \\
        --src <checkout of github.com/cynricfu/FedHGN> [--steps export,official,fgljax,table] [--seeds 5]

Steps (each resumable: finished runs are kept as JSON under --work and skipped):
  export   fgl_jax builds the AIFB RE/RET K=3 client graphs from the raw files (the split the
           configs experiments/configs/fedhgn/table3_aifb_* train on: NumPy, split seed 12345) and
           writes them as the `dgl.save_graphs` file the authors' loader reads (to_dgl.py in the
           peer venv); read back with fgl_jax's own DGL-file reader and compared edge by edge.
  official the authors' main.py (run_official.py: one thread, DataLoader workers 0, nothing else
           changed) for FedHGN and FedAvg, RE and RET, seeds 1000.. on fgl_jax's split ("ours") and
           on the split files shipped in the authors' repository ("authors'").
  fgljax   fgl_jax on the same two splits: the configs' settings (round1_align=skip), and
           round1_align=code_quirk (the authors' round-1 zero pool).
  table    results.md / results.json beside this file.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from fgl_jax import engine, load_official_split, records, schema
from fgl_jax.systems.fedhgn import FedHGNConfig, hetero_fed_data, prepare_clients, program

from experiments.fedhgn.paper import PAPER, SEEDS   # run as a module from the checkout's root (see above)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
FILES = {"RE": "edges", "RET": "etypes"}
FRAMEWORK = {"fedhgn": "FedHGN", "fedavg": "FedAvg"}
CELLS = [(s, m) for s in ("RE", "RET") for m in ("fedhgn", "fedavg")]
SPLITS = ("ours", "authors")


def _bin(split_dir: Path, split: str) -> Path:
    return split_dir / f"aifb-hetero_random-{FILES[split]}_3.bin"


# -- export ----------------------------------------------------------------------------------------
def export(work: Path, venv_py: str, data_dir: str) -> None:
    out = work / "ours"
    out.mkdir(parents=True, exist_ok=True)
    for split in ("RE", "RET"):
        graphs, _ = prepare_clients("aifb", split, 3, data_dir)
        arrays, meta = {}, {"num_classes": int(graphs[0].num_classes), "clients": []}
        for k, g in enumerate(graphs):
            meta["clients"].append({"node_types": list(g.node_types), "num_nodes": [int(n) for n in g.num_nodes],
                                    "canonical_etypes": [list(c) for c in g.canonical_etypes], "target": g.target})
            for i, (s, d) in enumerate(g.edges):
                arrays[f"c{k}_e{i}_src"], arrays[f"c{k}_e{i}_dst"] = s.astype(np.int64), d.astype(np.int64)
            arrays[f"c{k}_y"] = g.y.astype(np.int64)
            for m in ("train_mask", "val_mask", "test_mask"):
                arrays[f"c{k}_{m}"] = getattr(g, m)
        npz = out / f"aifb_{split}_3.npz"
        np.savez(npz, meta=json.dumps(meta), **arrays)
        subprocess.run([venv_py, str(HERE / "to_dgl.py"), str(npz), str(_bin(out, split))], check=True)
        back = load_official_split(_bin(out, split))
        for g, b in zip(graphs, back, strict=True):           # our reader, independent of DGL
            same = (g.target == b.target and dict(zip(g.node_types, g.num_nodes)) == dict(zip(b.node_types, b.num_nodes))
                    and np.array_equal(g.y[g.y >= 0], b.y[b.y >= 0])
                    and all(np.array_equal(getattr(g, m), getattr(b, m)) for m in ("train_mask", "val_mask", "test_mask")))
            be = dict(zip(b.canonical_etypes, b.edges))
            same &= set(be) == set(g.canonical_etypes) and all(
                np.array_equal(s, be[c][0]) and np.array_equal(d, be[c][1]) for c, (s, d) in zip(g.canonical_etypes, g.edges))
            if not same:
                raise SystemExit(f"export: {_bin(out, split)} does not read back as fgl_jax's {split} split")
        print(f"export {split}: {len(graphs)} clients, train/val/test "
              f"{[(int(g.train_mask.sum()), int(g.val_mask.sum()), int(g.test_mask.sum())) for g in graphs]}", flush=True)


# -- the authors' code -----------------------------------------------------------------------------
def official(work: Path, venv_py: str, src: str, seeds, splits, trace_seed) -> None:
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    for seed in seeds:
        for where in splits:
            split_dir = work / "ours" if where == "ours" else Path(src) / "data" / "aifb-hetero"
            for split, method in CELLS:
                res = work / "official" / f"{where}_{split}_{method}_{seed}.json"
                if res.exists():
                    continue
                res.parent.mkdir(parents=True, exist_ok=True)
                cmd = [venv_py, str(HERE / "run_official.py"), "--data-dir", str(split_dir), "--split", FILES[split],
                       "--framework", FRAMEWORK[method], "--seed", str(seed), "--out", str(res),
                       "--saves", str(work / "saves")]
                if seed == trace_seed:
                    cmd += ["--trace", str(res.with_suffix(".trace.json"))]
                t0 = time.time()
                with open(res.with_suffix(".log"), "w") as log:
                    subprocess.run(cmd, cwd=src, env=env, stdout=log, stderr=subprocess.STDOUT, check=True)
                acc = json.loads(res.read_text())["test"]["accuracy"]
                print(f"official {where} {split} {method} {seed}: {100 * acc:.2f} ({time.time() - t0:.0f} s)", flush=True)


# -- fgl_jax ---------------------------------------------------------------------------------------
def config_of(split: str, method: str) -> FedHGNConfig:
    """The shipped config file of the cell (checked by fgl_jax's schema)."""
    import yaml
    path = ROOT / "experiments" / "configs" / "fedhgn" / f"table3_aifb_{split}_k3_{method}.yaml"
    raw = yaml.safe_load(path.read_text())
    raw.pop("system", None)
    return FedHGNConfig(**schema.check(FedHGNConfig, raw, str(path)))


def fgljax(work: Path, src: str, data_dir: str, seeds, splits, variants) -> None:
    out = work / "fgljax"
    out.mkdir(parents=True, exist_ok=True)
    for where in splits:
        for split, method in CELLS:
            if where == "ours":
                graphs, _ = prepare_clients("aifb", split, 3, data_dir)
            else:
                graphs = load_official_split(_bin(Path(src) / "data" / "aifb-hetero", split))
            data = hetero_fed_data(graphs)
            for vname, over in variants.items():
                if vname != "configs" and method != "fedhgn":
                    continue
                res = out / f"{where}_{split}_{method}_{vname}.json"
                if res.exists():
                    continue
                cfg = config_of(split, method)
                cfg = FedHGNConfig(**{**schema.to_dict(cfg), **over})
                prog = program(cfg, data)
                t0 = time.time()
                rows = []
                for seed in seeds:
                    r = engine.execute(prog, seed, system="fedhgn")
                    rows.append({"seed": seed, "test": float(r.best["best_test"]), "best_round": int(r.best["best_round"])})
                res.write_text(json.dumps({"config": schema.to_dict(cfg), "runs": rows, "seconds": time.time() - t0}))
                print(f"fgljax {where} {split} {method} {vname}: {[round(100 * r['test'], 2) for r in rows]}", flush=True)


# -- table -----------------------------------------------------------------------------------------
def stats(xs) -> str:
    a = 100 * np.asarray(xs, float)
    if a.size == 0:
        return "–"
    if a.size == 1:
        return f"{a[0]:.2f} (n=1)"
    sd = a.std(ddof=1)
    return f"{a.mean():.2f} ± {sd:.2f} (SE {sd / np.sqrt(a.size):.2f}, n={a.size})"


def adv(a, b) -> str:
    """Difference of two means (points) with its standard error."""
    a, b = 100 * np.asarray(a, float), 100 * np.asarray(b, float)
    if a.size < 2 or b.size < 2:
        return "–"
    return f"{a.mean() - b.mean():+.2f} (SE {np.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size):.2f})"


def table(work: Path, seeds, cmd: str, t0: float, config: dict) -> None:
    rec = {"paper": {}, "official": {}, "fgljax": {}}
    for split, method in CELLS:
        key = f"{split}/{method}"
        rec["paper"][key] = PAPER[("aifb", split, method)][3]
        for where in SPLITS:
            accs = []
            for s in seeds:
                f = work / "official" / f"{where}_{split}_{method}_{s}.json"
                if f.exists():
                    accs.append(json.loads(f.read_text())["test"]["accuracy"])
            rec["official"][f"{where}/{key}"] = accs
            for f in sorted((work / "fgljax").glob(f"{where}_{split}_{method}_*.json")):
                v = f.stem.split("_", 3)[3]
                rec["fgljax"][f"{where}/{key}/{v}"] = [r["test"] for r in json.loads(f.read_text())["runs"]
                                                       if r["seed"] in seeds]
    L = ["# FedHGN, AIFB K=3: paper vs the authors' code run here vs fgl_jax", "",
         "Test accuracy %, mean ± sample sd (SE = sd/√n; n seeds, from 1000, 2000, ...: the paper's seeds). "
         "Paper: Table 3 (mean ± population sd, ddof 0, over seeds 1000..5000 of the authors' code: its RE FedHGN "
         "runs on its own split below give 81.87 ± 2.33 with ddof 0). fgl_jax \"configs\" = the shipped "
         "configs experiments/configs/fedhgn/table3_aifb_* (round-1 alignment pool `skip`); \"code_quirk\" = the same "
         "with round1_align=code_quirk (the authors' round 1: a zero vector per other client, counted twice), "
         "FedHGN only (FedAvg has no alignment)."]
    titles = {"ours": "fgl_jax's client split (NumPy, split seed 12345: what the configs train on), exported to "
                      "the authors' DGL file format and read by their loader",
              "authors": "the authors' own split files (their repository's data/aifb-hetero)"}
    for where in SPLITS:
        L += ["", f"## On {titles[where]}", "",
              "| split | method | paper | authors' code | fgl_jax configs | fgl_jax code_quirk |", "|---|---|---|---|---|---|"]
        for split, method in CELLS:
            key = f"{split}/{method}"
            p = rec["paper"][key]
            quirk = stats(rec["fgljax"].get(f"{where}/{key}/code_quirk", [])) if method == "fedhgn" else "(as configs)"
            L.append(f"| {split} | {method} | {p[0]:.2f} ± {p[1]:.2f} | {stats(rec['official'][f'{where}/{key}'])} | "
                     f"{stats(rec['fgljax'].get(f'{where}/{key}/configs', []))} | {quirk} |")
        L += ["", "FedHGN − FedAvg (difference of the means, points, with its SE):", "",
              "| split | paper | authors' code | fgl_jax configs | fgl_jax code_quirk FedHGN − configs FedAvg |",
              "|---|---|---|---|---|"]
        for split in ("RE", "RET"):
            pf, pa = rec["paper"][f"{split}/fedhgn"], rec["paper"][f"{split}/fedavg"]
            fa = rec["fgljax"].get(f"{where}/{split}/fedavg/configs", [])
            L.append(f"| {split} | {pf[0] - pa[0]:+.2f} | "
                     f"{adv(rec['official'][f'{where}/{split}/fedhgn'], rec['official'][f'{where}/{split}/fedavg'])} | "
                     f"{adv(rec['fgljax'].get(f'{where}/{split}/fedhgn/configs', []), fa)} | "
                     f"{adv(rec['fgljax'].get(f'{where}/{split}/fedhgn/code_quirk', []), fa)} |")
    L += ["", "## Per seed (test accuracy %)", "", "| split used | cell | run | " + " | ".join(map(str, seeds)) + " |",
          "|---|---|---" + "|---" * len(seeds) + "|"]
    for where in SPLITS:
        for split, method in CELLS:
            key = f"{split}/{method}"
            files = {s: work / "official" / f"{where}_{split}_{method}_{s}.json" for s in seeds}
            vals = [f"{100 * json.loads(f.read_text())['test']['accuracy']:.2f}" if f.exists() else "–"
                    for f in files.values()]
            L.append(f"| {where} | {split} {method} | authors' code | " + " | ".join(vals) + " |")
            for v in ("configs", "code_quirk"):
                f = work / "fgljax" / f"{where}_{split}_{method}_{v}.json"
                if f.exists():
                    by = {r["seed"]: r["test"] for r in json.loads(f.read_text())["runs"]}
                    L.append(f"| {where} | {split} {method} | fgl_jax {v} | "
                             + " | ".join(f"{100 * by[s]:.2f}" if s in by else "–" for s in seeds) + " |")
    traces = sorted(work.glob("trace_cmp_*.json"))
    if traces:
        L += ["", "## Round by round, one seed, from the authors' code's initial parameters (trace_fgljax.py)", "",
              "fgl_jax (round1_align=code_quirk) started from the parameters the authors' code draws for the seed, "
              "beside the authors' code's own run on the same split file (fgl_jax's split). Largest difference over "
              "all rounds:", "",
              "| setting | rounds | val acc | test acc | alignment term, first local step | coefficient norms | "
              "first round that differs |", "|---|---|---|---|---|---|---|"]
        for f in traces:
            t = json.loads(f.read_text())
            o, g = t["official"], t["fgljax"]
            dv = max(abs(a["val"] - b["val"]) for a, b in zip(o, g))
            dt = max(abs(a["test"] - b["test"]) for a, b in zip(o, g))
            al = [(x[0], y) for a, b in zip(o, g) for x, y in zip(a["align"], b["align"]) if isinstance(x, list)]
            da = f"{max(abs(x - y) / max(abs(x), 1e-6) for x, y in al):.1e} (relative)" if al else "not logged"
            dn = max(abs(x - y) for a, b in zip(o, g) for x, y in zip(a["coeff_norm"], b["coeff_norm"]))
            L.append(f"| {f.stem.replace('trace_cmp_', '')} | {len(o)} | {dv:.1e} | {dt:.1e} | {da} | {dn:.1e} | "
                     f"{t['first_difference'] or 'none'} |")
    load = os.getloadavg()
    L += ["", f"Produced by `{cmd}` (last step finished {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"{time.time() - t0:.0f} s this call; load average {load[0]:.1f} on 2 cores shared with other jobs). The runs "
          "come from earlier calls of the same command with --steps export,official,fgljax (resumable; one run of "
          "the authors' code took 0.5-9 min of wall time at load averages 3-16).",
          "Authors' code: github.com/cynricfu/FedHGN at 1a94edc, torch 2.2.1 (PyPI), DGL 2.1.0 (PyPI), CPU, "
          "one thread, DataLoader workers 0."]
    records.write(HERE / "results.json", records.make("results", rec, config=config, seeds=seeds,
                                                      title="FedHGN: fgl_jax vs the authors' code",
                                                      provenance=records.provenance(cmd, started=t0)),
                  markdown="\n".join(L))
    print("\n".join(L))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", required=True, help="checkout of github.com/cynricfu/FedHGN")
    ap.add_argument("--venv", default=str(HERE / ".venv"), help="the peer venv (setup.sh)")
    ap.add_argument("--work", default=str(HERE / "runs"), help="run outputs (gitignored)")
    ap.add_argument("--data-dir", default=os.environ.get("FGL_JAX_DATA"))
    ap.add_argument("--steps", default="export,official,fgljax,table")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--splits", default="ours,authors", help="which client splits the runs use")
    ap.add_argument("--trace-seed", type=int, default=1000, help="official runs of this seed log per-round traces")
    a = ap.parse_args(argv)
    t0 = time.time()
    work, venv_py = Path(a.work), str(Path(a.venv) / "bin" / "python")
    seeds = list(SEEDS) + [1000 * i for i in range(6, 41)]
    seeds = seeds[:a.seeds]
    splits = [s for s in a.splits.split(",") if s]
    steps = a.steps.split(",")
    if "export" in steps:
        export(work, venv_py, a.data_dir)
    if "official" in steps:
        official(work, venv_py, a.src, seeds, splits, a.trace_seed)
    if "fgljax" in steps:
        fgljax(work, a.src, a.data_dir, seeds, splits, {"configs": {}, "code_quirk": {"round1_align": "code_quirk"}})
    if "table" in steps:
        table(work, seeds, "python -m benchmarks.peers.fedhgn_official.compare " + " ".join(argv or sys.argv[1:]), t0,
              vars(a))


if __name__ == "__main__":
    main()
