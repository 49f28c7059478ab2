"""FedHGN on AIFB and MUTAG: the paper, the authors' code (run here) and fgl_jax, side by side.

    bash benchmarks/peers/fedhgn_official/setup.sh            # peer venv (torch 2.2.1 + DGL 2.1.0, CPU)
    FGL_JAX_DATA=/work/shared/data python -m benchmarks.peers.fedhgn_official.compare \\
        --src <checkout of github.com/cynricfu/FedHGN> [--dataset aifb|mutag] [--ks 3,5]
        [--cells RE/fedhgn,RET/fedhgn] [--authors-dir DIR] [--steps export,official,fgljax,table] [--seeds 5]

Steps (each resumable: finished runs are kept as JSON under --work and skipped):
  export   fgl_jax builds the dataset's RE/RET K-client graphs from the raw files (the split the
           configs experiments/configs/fedhgn/table3_<dataset>_* train on: NumPy, split seed 12345)
           and writes them as the `dgl.save_graphs` file the authors' loader reads (to_dgl.py in the
           peer venv); read back with fgl_jax's own DGL-file reader and compared edge by edge.
  official the authors' main.py (run_official.py: one thread, DataLoader workers 0, nothing else
           changed) for the --cells, seeds 1000.. on fgl_jax's split ("ours") and on the authors'
           split files ("authors'": the ones shipped in their repository, or for MUTAG, whose split
           files the stored snapshot lacks, the ones regen_split.py rebuilds: --authors-dir).
  fgljax   fgl_jax on the same two splits: the configs' settings (round1_align=skip), and
           round1_align=code_quirk (the authors' round-1 zero pool).
  table    results.md / results.json beside this file: every (dataset, K) measured so far (cells
           without run files here are carried over from the previous record).
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
OFFICIAL_NAME = {"aifb": "AIFB", "mutag": "MUTAG"}
CELLS = [(s, m) for s in ("RE", "RET") for m in ("fedhgn", "fedavg")]
SPLITS = ("ours", "authors")


def _bin(split_dir: Path, split: str, dataset: str = "aifb", k: int = 3) -> Path:
    return split_dir / f"{dataset}-hetero_random-{FILES[split]}_{k}.bin"


def _tag(dataset: str, k: int) -> str:
    """Prefix of the run files of one (dataset, K); AIFB K=3 keeps the original unprefixed names."""
    return "" if (dataset, k) == ("aifb", 3) else f"{dataset}{k}_"


# -- export ----------------------------------------------------------------------------------------
def export(work: Path, venv_py: str, data_dir: str, dataset: str, k: int, splits_wanted) -> None:
    out = work / "ours"
    out.mkdir(parents=True, exist_ok=True)
    for split in splits_wanted:
        if _bin(out, split, dataset, k).exists():
            continue
        graphs, _ = prepare_clients(dataset, split, k, data_dir)
        arrays, meta = {}, {"num_classes": int(graphs[0].num_classes), "clients": []}
        for ci, g in enumerate(graphs):      # ci: client index (k is the number of clients)
            meta["clients"].append({"node_types": list(g.node_types), "num_nodes": [int(n) for n in g.num_nodes],
                                    "canonical_etypes": [list(c) for c in g.canonical_etypes], "target": g.target})
            for i, (s, d) in enumerate(g.edges):
                arrays[f"c{ci}_e{i}_src"], arrays[f"c{ci}_e{i}_dst"] = s.astype(np.int64), d.astype(np.int64)
            arrays[f"c{ci}_y"] = g.y.astype(np.int64)
            for m in ("train_mask", "val_mask", "test_mask"):
                arrays[f"c{ci}_{m}"] = getattr(g, m)
        npz = out / f"{dataset}_{split}_{k}.npz"
        np.savez(npz, meta=json.dumps(meta), **arrays)
        subprocess.run([venv_py, str(HERE / "to_dgl.py"), str(npz), str(_bin(out, split, dataset, k))], check=True)
        back = load_official_split(_bin(out, split, dataset, k))
        for g, b in zip(graphs, back, strict=True):           # our reader, independent of DGL
            same = (g.target == b.target and dict(zip(g.node_types, g.num_nodes)) == dict(zip(b.node_types, b.num_nodes))
                    and np.array_equal(g.y[g.y >= 0], b.y[b.y >= 0])
                    and all(np.array_equal(getattr(g, m), getattr(b, m)) for m in ("train_mask", "val_mask", "test_mask")))
            be = dict(zip(b.canonical_etypes, b.edges))
            same &= set(be) == set(g.canonical_etypes) and all(
                np.array_equal(s, be[c][0]) and np.array_equal(d, be[c][1]) for c, (s, d) in zip(g.canonical_etypes, g.edges))
            if not same:
                raise SystemExit(f"export: {_bin(out, split, dataset, k)} does not read back as fgl_jax's {split} split")
        print(f"export {dataset} {split} K={k}: {len(graphs)} clients, train/val/test "
              f"{[(int(g.train_mask.sum()), int(g.val_mask.sum()), int(g.test_mask.sum())) for g in graphs]}", flush=True)


# -- the authors' code -----------------------------------------------------------------------------
def official(work: Path, venv_py: str, src: str, seeds, splits, trace_seed, dataset: str, k: int, cells,
             authors_dir: Path) -> None:
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    # one checkpoint folder per split: the authors' get_save_path numbers its folders without a lock, so two
    # calls running at once (--splits ours and --splits authors) must not share one
    for seed in seeds:
        for where in splits:
            split_dir = work / "ours" if where == "ours" else authors_dir
            for split, method in cells:
                res = work / "official" / f"{_tag(dataset, k)}{where}_{split}_{method}_{seed}.json"
                if res.exists():
                    continue
                res.parent.mkdir(parents=True, exist_ok=True)
                cmd = [venv_py, str(HERE / "run_official.py"), "--data-dir", str(split_dir), "--split", FILES[split],
                       "--framework", FRAMEWORK[method], "--seed", str(seed), "--out", str(res),
                       "--dataset", OFFICIAL_NAME[dataset], "--clients", str(k), "--saves", str(work / f"saves_{where}")]
                if seed == trace_seed:
                    cmd += ["--trace", str(res.with_suffix(".trace.json"))]
                t0 = time.time()
                with open(res.with_suffix(".log"), "w") as log:
                    subprocess.run(cmd, cwd=src, env=env, stdout=log, stderr=subprocess.STDOUT, check=True)
                acc = json.loads(res.read_text())["test"]["accuracy"]
                print(f"official {dataset} K={k} {where} {split} {method} {seed}: {100 * acc:.2f} ({time.time() - t0:.0f} s)", flush=True)


# -- fgl_jax ---------------------------------------------------------------------------------------
def config_of(split: str, method: str, dataset: str = "aifb", k: int = 3) -> FedHGNConfig:
    """The shipped config file of the cell (checked by fgl_jax's schema)."""
    import yaml
    path = ROOT / "experiments" / "configs" / "fedhgn" / f"table3_{dataset}_{split}_k{k}_{method}.yaml"
    raw = yaml.safe_load(path.read_text())
    raw.pop("system", None)
    return FedHGNConfig(**schema.check(FedHGNConfig, raw, str(path)))


def fgljax(work: Path, data_dir: str, seeds, splits, variants, dataset: str, k: int, cells,
           authors_dir: Path) -> None:
    out = work / "fgljax"
    out.mkdir(parents=True, exist_ok=True)
    for where in splits:
        for split, method in cells:
            if where == "ours":
                graphs, _ = prepare_clients(dataset, split, k, data_dir)
            else:
                graphs = load_official_split(_bin(authors_dir, split, dataset, k))
            data = hetero_fed_data(graphs)
            for vname, over in variants.items():
                if vname != "configs" and method != "fedhgn":
                    continue
                res = out / f"{_tag(dataset, k)}{where}_{split}_{method}_{vname}.json"
                if res.exists():
                    continue
                cfg = config_of(split, method, dataset, k)
                cfg = FedHGNConfig(**{**schema.to_dict(cfg), **over})
                prog = program(cfg, data)
                t0 = time.time()
                rows = []
                for seed in seeds:
                    r = engine.execute(prog, seed, system="fedhgn")
                    rows.append({"seed": seed, "test": float(r.best["best_test"]), "best_round": int(r.best["best_round"])})
                res.write_text(json.dumps({"config": schema.to_dict(cfg), "runs": rows, "seconds": time.time() - t0}))
                print(f"fgljax {dataset} K={k} {where} {split} {method} {vname}: {[round(100 * r['test'], 2) for r in rows]}", flush=True)


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


def _vals(by_seed: dict) -> list:
    return [by_seed[s] for s in sorted(by_seed, key=int)]


def collect(work: Path, previous: dict) -> dict:
    """Metrics of every (dataset, K) cell: run files under `work`, else the previous record's values.

    Keys: paper "<ds>/K<k>/<split>/<method>" -> [mean, sd]; official "<ds>/K<k>/<where>/<split>/<method>"
    and fgljax ".../<variant>" -> {seed: test accuracy}; traces: rows of the round-by-round check.
    """
    rec = {"paper": dict(previous.get("paper", {})), "official": dict(previous.get("official", {})),
           "fgljax": dict(previous.get("fgljax", {})), "traces": list(previous.get("traces", []))}
    for f in sorted((work / "official").glob("*.json")):
        if f.name.endswith(".trace.json"):
            continue
        r = json.loads(f.read_text())
        ds, k = r.get("dataset", "AIFB").lower(), r.get("clients", 3)
        where = f.stem[len(_tag(ds, k)):].split("_")[0]
        split = {v: s for s, v in FILES.items()}[r["split"]]
        method = {v: m for m, v in FRAMEWORK.items()}[r["framework"]]
        rec["official"].setdefault(f"{ds}/K{k}/{where}/{split}/{method}", {})[str(r["seed"])] = r["test"]["accuracy"]
    for f in sorted((work / "fgljax").glob("*.json")):
        r = json.loads(f.read_text())
        ds, k = r["config"]["dataset"], r["config"]["clients"]
        where, split, method, variant = f.stem[len(_tag(ds, k)):].split("_", 3)
        rec["fgljax"].setdefault(f"{ds}/K{k}/{where}/{split}/{method}/{variant}", {}).update(
            {str(x["seed"]): x["test"] for x in r["runs"]})
    for key in list(rec["official"]) + list(rec["fgljax"]):
        ds, k, _, split, method = key.split("/")[:5]
        rec["paper"][f"{ds}/{k}/{split}/{method}"] = list(PAPER[(ds, split, method)][int(k[1:])])
    traces = sorted(work.glob("trace_cmp_*.json"))
    if traces:
        rec["traces"] = []
        for f in traces:
            t = json.loads(f.read_text())
            o, g = t["official"], t["fgljax"]
            al = [(x[0], y) for a, b in zip(o, g) for x, y in zip(a["align"], b["align"]) if isinstance(x, list)]
            rec["traces"].append({
                "setting": f.stem.replace("trace_cmp_", ""), "rounds": len(o),
                "val": max(abs(a["val"] - b["val"]) for a, b in zip(o, g)),
                "test": max(abs(a["test"] - b["test"]) for a, b in zip(o, g)),
                "align_rel": max(abs(x - y) / max(abs(x), 1e-6) for x, y in al) if al else None,
                "coeff_norm": max(abs(x - y) for a, b in zip(o, g) for x, y in zip(a["coeff_norm"], b["coeff_norm"])),
                "first_difference": t["first_difference"]})
    return rec


TITLES = {"ours": "fgl_jax's client split (NumPy, split seed 12345: what the configs train on), exported to "
                  "the authors' DGL file format and read by their loader",
          "authors": "the authors' own split files (AIFB: their repository's data/aifb-hetero; MUTAG: rebuilt by "
                     "regen_split.py from their centralised file and their split procedure's seeded stream, "
                     "checked against their six AIFB split files)"}


def render(rec: dict) -> list[str]:
    """The markdown page of a record's metrics (one section per dataset and K)."""
    L = ["# FedHGN: paper vs the authors' code run here vs fgl_jax (AIFB, MUTAG)", "",
         "Test accuracy %, mean ± sample sd (SE = sd/√n; n seeds, from 1000, 2000, ...: the paper's seeds). "
         "Paper: Table 3 (mean ± population sd, ddof 0, over seeds 1000..5000 of the authors' code: its AIFB RE "
         "FedHGN runs on its own split below give 81.87 ± 2.33 with ddof 0). fgl_jax \"configs\" = the shipped "
         "configs experiments/configs/fedhgn/table3_* (round-1 alignment pool `skip`); \"code_quirk\" = the same "
         "with round1_align=code_quirk (the authors' round 1: a zero vector per other client, counted twice), "
         "FedHGN only (FedAvg has no alignment). MUTAG's majority-class floor is 66.18 (results.md)."]
    # a (dataset, K) with fgl_jax runs only (no run of the authors' code yet) still gets its section
    groups = sorted({tuple(k.split("/")[:2]) for src in ("official", "fgljax") for k in rec[src]},
                    key=lambda g: (g[0] != "aifb", g[0], int(g[1][1:])))
    for ds, kk in groups:
        pre = f"{ds}/{kk}"
        runs = {**rec["official"], **{k.rsplit("/", 1)[0]: v for k, v in rec["fgljax"].items()}}
        cells = [(s, m) for s, m in CELLS if any(k.startswith(f"{pre}/") and k.endswith(f"/{s}/{m}") for k in runs)]
        seeds = sorted({s for src in ("official", "fgljax") for k, v in rec[src].items() if k.startswith(pre + "/")
                        for s in v}, key=int)
        for where in SPLITS:
            if not any(k.startswith(f"{pre}/{where}/") for src in ("official", "fgljax") for k in rec[src]):
                continue
            L += ["", f"## {ds.upper()} K={kk[1:]}, on {TITLES[where]}", "",
                  "| split | method | paper | authors' code | fgl_jax configs | fgl_jax code_quirk |",
                  "|---|---|---|---|---|---|"]
            for split, method in cells:
                p = rec["paper"][f"{pre}/{split}/{method}"]
                off = _vals(rec["official"].get(f"{pre}/{where}/{split}/{method}", {}))
                fj = lambda v: _vals(rec["fgljax"].get(f"{pre}/{where}/{split}/{method}/{v}", {}))
                quirk = stats(fj("code_quirk")) if method == "fedhgn" else "(as configs)"
                L.append(f"| {split} | {method} | {p[0]:.2f} ± {p[1]:.2f} | {stats(off)} | {stats(fj('configs'))} | "
                         f"{quirk} |")
            both = [s for s in ("RE", "RET") if (s, "fedhgn") in cells and (s, "fedavg") in cells]
            if both:
                L += ["", "FedHGN − FedAvg (difference of the means, points, with its SE):", "",
                      "| split | paper | authors' code | fgl_jax configs | fgl_jax code_quirk FedHGN − configs FedAvg |",
                      "|---|---|---|---|---|"]
                for split in both:
                    g = lambda src, m, v=None: _vals(rec[src].get(f"{pre}/{where}/{split}/{m}" + (f"/{v}" if v else ""), {}))
                    pf, pa = rec["paper"][f"{pre}/{split}/fedhgn"], rec["paper"][f"{pre}/{split}/fedavg"]
                    L.append(f"| {split} | {pf[0] - pa[0]:+.2f} | {adv(g('official', 'fedhgn'), g('official', 'fedavg'))} | "
                             f"{adv(g('fgljax', 'fedhgn', 'configs'), g('fgljax', 'fedavg', 'configs'))} | "
                             f"{adv(g('fgljax', 'fedhgn', 'code_quirk'), g('fgljax', 'fedavg', 'configs'))} |")
        L += ["", f"### {ds.upper()} K={kk[1:]}, per seed (test accuracy %)", "",
              "| split used | cell | run | " + " | ".join(seeds) + " |", "|---|---|---" + "|---" * len(seeds) + "|"]
        for where in SPLITS:
            for split, method in cells:
                rows = [("authors' code", rec["official"].get(f"{pre}/{where}/{split}/{method}"))]
                rows += [(f"fgl_jax {v}", rec["fgljax"].get(f"{pre}/{where}/{split}/{method}/{v}"))
                         for v in ("configs", "code_quirk")]
                for name, by in rows:
                    if by:
                        L.append(f"| {where} | {split} {method} | {name} | "
                                 + " | ".join(f"{100 * by[s]:.2f}" if s in by else "–" for s in seeds) + " |")
    if rec["traces"]:
        L += ["", "## Round by round, one seed, from the authors' code's initial parameters (trace_fgljax.py)", "",
              "fgl_jax (round1_align=code_quirk) started from the parameters the authors' code draws for the seed, "
              "beside the authors' code's own run on the same split file (fgl_jax's AIFB K=3 split). Largest "
              "difference over all rounds:", "",
              "| setting | rounds | val acc | test acc | alignment term, first local step | coefficient norms | "
              "first round that differs |", "|---|---|---|---|---|---|---|"]
        for t in rec["traces"]:
            da = f"{t['align_rel']:.1e} (relative)" if t["align_rel"] is not None else "not logged"
            L.append(f"| {t['setting']} | {t['rounds']} | {t['val']:.1e} | {t['test']:.1e} | {da} | "
                     f"{t['coeff_norm']:.1e} | {t['first_difference'] or 'none'} |")
    return L


def table(work: Path, cmd: str, t0: float, config: dict) -> None:
    path = HERE / "results.json"
    previous = records.read(path)["metrics"] if path.exists() else {}
    rec = collect(work, previous)
    load = os.getloadavg()
    L = render(rec)
    L += ["", f"Table written by `{cmd}` ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average "
          f"{load[0]:.1f} on 2 cores shared with other jobs). The runs come from calls of the same command with "
          "--steps export,official,fgljax (resumable; AIFB K=3 on 2026-11-26, MUTAG on 2026-11-29, where some seeds ran "
          "as run_official.py calls with the same arguments, two at a time: values without run files in --work are "
          "carried over from the previous record). One run of the authors' code took 0.5-9 min of wall time on AIFB "
          "at load averages 3-16; on MUTAG K=3 2.6-14 min and RE K=5 11-16 min at load averages 10-16, RET K=5 "
          "1.5-4.5 min, RE K=5 11-14 min and RE K=10 9-15 min at load averages 6-9 (the run files' seconds).",
          "Authors' code: github.com/cynricfu/FedHGN at 1a94edc, torch 2.2.1 (PyPI), DGL 2.1.0 (PyPI), CPU, "
          "one thread, DataLoader workers 0."]
    records.write(path, records.make("results", rec, config=config, seeds=[],
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
    ap.add_argument("--dataset", choices=tuple(OFFICIAL_NAME), default="aifb", help="which dataset's cells to run")
    ap.add_argument("--ks", default="3", help="comma-separated numbers of clients K")
    ap.add_argument("--cells", default=",".join(f"{s}/{m}" for s, m in CELLS),
                    help="comma-separated split/method cells (RE|RET / fedhgn|fedavg)")
    ap.add_argument("--authors-dir", default=None,
                    help="folder of the authors' split files (default: <src>/data/<dataset>-hetero; for MUTAG the "
                         "folder regen_split.py wrote)")
    ap.add_argument("--variants", default="configs,code_quirk",
                    help="fgl_jax variants to run: configs (the shipped configs), code_quirk (round1_align=code_quirk)")
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
    cells = [tuple(c.split("/")) for c in a.cells.split(",") if c]
    bad = [c for c in cells if c not in CELLS]
    if bad:
        raise SystemExit(f"--cells: {'/'.join(bad[0])} is not one of {[f'{s}/{m}' for s, m in CELLS]}")
    authors_dir = Path(a.authors_dir) if a.authors_dir else Path(a.src) / "data" / f"{a.dataset}-hetero"
    variants = {"configs": {}, "code_quirk": {"round1_align": "code_quirk"}}
    variants = {v: variants[v] for v in a.variants.split(",") if v}
    for k in [int(x) for x in a.ks.split(",") if x]:
        if "export" in steps:
            export(work, venv_py, a.data_dir, a.dataset, k, sorted({s for s, _ in cells}))
        if "official" in steps:
            official(work, venv_py, a.src, seeds, splits, a.trace_seed, a.dataset, k, cells, authors_dir)
        if "fgljax" in steps:
            fgljax(work, a.data_dir, seeds, splits, variants, a.dataset, k, cells, authors_dir)
    if "table" in steps:
        table(work, "python -m benchmarks.peers.fedhgn_official.compare " + " ".join(argv or sys.argv[1:]), t0,
              vars(a))


if __name__ == "__main__":
    main()
