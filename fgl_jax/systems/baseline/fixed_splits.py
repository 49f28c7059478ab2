"""Every fixed split of a graph file as one vectorised program (``--split-index all``).

A file with k fixed splits (the heterophily ``.npz`` layout: ``train_masks [k, N]``) is reported
the way heterophily papers report: mean +- sd over the k splits. The splits differ only in their
masks, which are data, so they are the member axis of `fgl_jax.federated.sweep.sweep` exactly as
seeds are: the k prepared client batches are compared leaf by leaf, the leaves that differ (the
masks and what is derived from them) are stacked into a leading [k, ...] axis and the rest is
shared, and the one round body is compiled once for all k members. Every member uses the
config's seed, so member i is the ``--split-index i`` run (tested).

Run directory (``--out``): config.yaml, metrics.jsonl (one row per round and split, with a
"split" column), summary.json (per split: best round, best_val, best_test; over splits: mean and
sd of each; the selection metric), timings.json (build / compile / run seconds and the compile
count of `fgl_jax.cache.CompileCounter`).
"""
from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any, Optional

import jax
import numpy as np

__all__ = ["run_all_splits", "stack_members", "split_count"]


def split_count(cfg: Any) -> int:
    """k, the number of fixed splits of the config's dataset (a one-line error when it has none)."""
    from fgl_jax.data import load_graph
    graph = load_graph(cfg.dataset, data_dir=cfg.data_dir)
    splits = graph.meta.get("fixed_splits")
    if not splits:
        raise ValueError(f"--split-index all: dataset {cfg.dataset!r} has no fixed splits (only files with "
                         "train_masks/val_masks/test_masks [k, N], such as the heterophily .npz layout, have)")
    return int(splits["train"].shape[0])


def stack_members(datas: list) -> tuple[Any, Any]:
    """(data, axes): the leaves equal in every element of `datas` kept once (axis None), the others
    stacked on a new leading axis (axis 0). The structures and shapes must agree."""
    flat = [jax.tree.flatten(d) for d in datas]
    treedef = flat[0][1]
    if any(t != treedef for _, t in flat[1:]):
        raise ValueError("the fixed splits give client batches of different structure; run them one by one "
                         "with --split-index i")
    leaves, axes = [], []
    for parts in zip(*(f[0] for f in flat)):
        a0 = np.asarray(parts[0])
        if any(np.shape(a) != a0.shape for a in parts[1:]):
            raise ValueError("the fixed splits give client batches of different shapes; run them one by one "
                             "with --split-index i")
        if all(np.array_equal(np.asarray(a), a0) for a in parts[1:]):
            leaves.append(parts[0])
            axes.append(None)
        else:  # a mask, or something computed from one: this member's own
            leaves.append(np.stack([np.asarray(a) for a in parts]))
            axes.append(0)
    return treedef.unflatten(leaves), treedef.unflatten(axes)


def _mean_sd(values) -> dict:
    v = np.asarray(values, np.float64)
    # sd over splits with ddof=0, as `fgl_jax.federated.sweep.summarize_grid` reports seeds
    return {"mean": float(np.mean(v)), "sd": float(np.std(v))}


def run_all_splits(cfg: Any, out: Optional[str] = None, overwrite: bool = False, log=print) -> dict:
    """Run every fixed split of `cfg.dataset` as members of one compiled program; returns the summary.

    cfg: a baseline `RunConfig` with ``split_index == "all"``. out: a run directory (written as
    described in the module docstring; refused when it holds anything unless `overwrite`).
    """
    from fgl_jax import rundir, schema
    from fgl_jax.cache import CompileCounter
    from fgl_jax.federated.algorithm import x64_scope
    from fgl_jax.federated.sweep import sweep
    from fgl_jax.systems.baseline.program import build

    counter = CompileCounter()
    t0 = time.perf_counter()
    k = split_count(cfg)
    programs = [build(dataclasses.replace(cfg, split_index=str(i))) for i in range(k)]
    if any(any(h is not None for h in p.hooks) for p in programs):
        raise ValueError(f"--split-index all: algorithm {cfg.algorithm!r} runs with hooks (its own evaluation or "
                         "selection), which the vectorised run does not take; run --split-index i for each split")
    data, axes = stack_members([p.data for p in programs])
    program = programs[0]
    t_build = time.perf_counter() - t0
    out_path = None
    if out is not None:
        out_path = rundir.prepare(rundir.resolve_out(out), resume=False, overwrite=overwrite)
    built = counter.read()
    counter.start()
    res = sweep(program.algorithm, data, [cfg.seed] * k, program.num_rounds, mode="auto",
                loss_guard=float(cfg.loss_guard), data_axes=axes)
    compiles = counter.read()
    select = list(program.algorithm.select)
    per_split = []
    for i in range(k):
        row = {"split": i, "best_round": int(res.best["best_round"][i]),
               "best_val": float(res.best["best_val"][i]), "best_test": float(res.best["best_test"][i])}
        if res.diverged[i] is not None:
            row["diverged"] = res.diverged[i]
        per_split.append(row)
    summary = {"system": "baseline", "describe": {**{k_: v for k_, v in program.describe.items()
                                                      if k_ != "partition_report"}, "split_index": "all"},
               "splits": k, "select": select[0], **({"select_mode": "min"} if select[2:] == ["min"] else {}),
               "per_split": per_split,
               "best_val": _mean_sd([r["best_val"] for r in per_split]),
               "best_test": _mean_sd([r["best_test"] for r in per_split])}
    # compiles: the XLA programs of the training run (the k splits' one round program, plus the
    # few small helpers that turn seeds into keys); build_compilations: those of the k host builds
    timings = {"build_seconds": t_build, "compile_seconds": res.compile_seconds, "run_seconds": res.run_seconds,
               "members": k, "member_program": res.programs, **compiles, "build_compilations": built["compilations"]}
    if out_path is not None:
        rows = []
        for i in range(k):
            for r in range(program.num_rounds):
                row = {"round": r + 1, "split": i}
                for name, hist in res.history.items():
                    if hist.ndim >= 2 and r < hist.shape[1]:
                        v = np.asarray(hist[i, r])
                        row[name] = float(v) if v.ndim == 0 else float(np.mean(v))
                rows.append(row)
        rundir.write_atomic(out_path / "config.yaml", schema.dump(cfg, "baseline"))
        rundir.write_rows(out_path / "metrics.jsonl", rows)
        rundir.write_atomic(out_path / "summary.json", json.dumps(summary, indent=2) + "\n")
        rundir.write_atomic(out_path / "timings.json", json.dumps(timings, indent=2) + "\n")
    log(format_table(summary))
    log(f"{k} splits as one program: build {t_build:.2f} s, compile {res.compile_seconds:.2f} s, run "
        f"{res.run_seconds:.2f} s; the round program compiled {res.programs.get('compile')} time(s) for the {k} "
        f"splits, {res.programs.get('run')} program(s) more while running")
    if out_path is not None:
        log(f"wrote {out}/config.yaml, metrics.jsonl, summary.json, timings.json")
    return {"summary": summary, "timings": timings, "history": res.history}


def format_table(summary: dict) -> str:
    """The printed table: one row per split, then mean +- sd."""
    lines = [f"{'split':>5}  {'best round':>10}  {'best_val':>8}  {'best_test':>9}"]
    for r in summary["per_split"]:
        lines.append(f"{r['split']:>5}  {r['best_round']:>10}  {r['best_val']:>8.4f}  {r['best_test']:>9.4f}")
    bv, bt = summary["best_val"], summary["best_test"]
    lines.append(f"{'all':>5}  {'':>10}  {bv['mean']:.4f} +- {bv['sd']:.4f}  {bt['mean']:.4f} +- {bt['sd']:.4f}"
                 f"  (mean +- sd over {summary['splits']} splits; selected by {summary['select']})")
    return "\n".join(lines)
