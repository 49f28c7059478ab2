"""Result files of experiments: markdown tables (tabulate) and JSON, with the provenance that produced them.

    rows = [{"dataset": "cora", "paper": 85.6, "ours": 84.1}]
    md = report.table(rows)                                        # a GitHub markdown table
    report.write_results(out, "table3", "# HiFGL Table 3\\n\\n" + md, {"rows": rows,
                         "provenance": report.provenance(t0, config)})

Every number in a results file is written by the code that computed it, with the command, the
config, the versions and the machine.
"""
from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Sequence

import numpy as np

from fgl_jax.experiment import _jsonable, environment

if TYPE_CHECKING:
    from fgl_jax.federated.sweep import GridResult


def table(rows: Sequence[dict], columns: Optional[Sequence[str]] = None, floatfmt: str = ".4f",
          headers: Optional[Sequence[str]] = None, disable_numparse: bool = False) -> str:
    """Rows of dicts as a GitHub markdown table (columns default to the first row's keys; a missing
    value is blank).

    Args:
        rows: the rows, one dict each.
        columns: the keys to show, in order; None: the first row's keys.
        floatfmt: the format of float cells.
        headers: the header texts; None: the column keys.
        disable_numparse: print text cells ("+7.2", "0.80 ± 0.01") exactly as given.

    Returns:
        The markdown table text.
    """
    from tabulate import tabulate
    rows = list(rows)
    cols = list(columns) if columns is not None else (list(rows[0]) if rows else [])
    body = [[r.get(c, "") if r.get(c) is not None else "" for c in cols] for r in rows]
    return tabulate(body, headers=list(headers) if headers is not None else cols, tablefmt="github",
                    floatfmt=floatfmt, missingval="", disable_numparse=disable_numparse)


def provenance(t_start: float, config: Any, command: Optional[Sequence[str]] = None) -> dict:
    """Command, config, environment, wall time and date of a result.

    Args:
        t_start: `time.perf_counter()` at the start of the work.
        config: the configuration to record (made JSON-serialisable).
        command: the command line; None: this process's `sys.argv`.

    Returns:
        A dict: "command", "config", "environment" (`fgl_jax.environment()`), "wall_seconds",
        "finished".
    """
    argv = list(command) if command is not None else [Path(sys.executable).name] + sys.argv
    return {"command": " ".join(shlex.quote(str(a)) for a in argv), "config": _jsonable(config),
            "environment": environment(), "wall_seconds": round(time.perf_counter() - t_start, 1),
            "finished": time.strftime("%Y-%m-%d %H:%M:%S %Z")}


def write_results(folder: Path, stem: str, table_md: str, payload: dict) -> None:
    """folder/stem.md (the table + provenance) and folder/stem.json (the payload).

    Args:
        folder: the output directory (created when missing).
        stem: the files' name without suffix.
        table_md: the markdown table.
        payload: the JSON payload; it must hold "provenance" (`provenance(...)`).

    Returns:
        None; both files are written.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{stem}.json").write_text(json.dumps(_jsonable(payload), indent=2))
    prov = payload["provenance"]
    env = prov["environment"]
    md = [table_md, "", f"Produced by `{prov['command']}` in {prov['wall_seconds']} s on {prov['finished']}.",
          f"Environment: python {env['python']}, jax {env['jax']}, flax {env['flax']}, optax {env['optax']}, "
          f"{env['platform']}, devices {env['devices']}.", "",
          "Config:", "", "```json", json.dumps(_jsonable(prov["config"]), indent=2), "```", ""]
    (folder / f"{stem}.md").write_text("\n".join(md))


# ---- a sweep's result files (the engine runs the grid: `fgl_jax.federated.sweep.run_grid`; writing
# its report lives here, above the engine, so the engine imports nothing of the experiment layer)

def write_grid_report(result: "GridResult", out_dir, title: str, extra: Optional[dict] = None) -> dict:
    """sweep.md (table), sweep.json (members, summary, curves) and sweep.png (metric vs the first
    grid axis with the seed spread, and validation curves) in out_dir. Returns the paths."""
    from fgl_jax.federated.sweep import resource_cells, summarize_grid
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = summarize_grid(result)
    keys = [k for k in result.axes if k != "seed"]
    md = [f"# {title}", "",
          f"Seeds {result.axes['seed']}; grid {({k: result.axes[k] for k in keys})}; "
          f"vectorised: {result.vector_axes or '—'}; separate programs: {result.program_axes or '—'} "
          f"({result.programs} program(s)); compile {result.compile_seconds:.1f} s, run {result.run_seconds:.1f} s.",
          ""]
    md += [f"- {m}" for m in result.messages] + ([""] if result.messages else [])
    md.append(table([{**{k: str(s[k]) for k in keys}, "seeds": s["seeds"],
                      "test acc at best val (mean ± std)": f"{s['best_test_mean']:.4f} ± {s['best_test_std']:.4f}",
                      "min": s["best_test_min"], "max": s["best_test_max"],
                      "best val acc (mean ± std)": f"{s['best_val_mean']:.4f} ± {s['best_val_std']:.4f}",
                      **resource_cells(s, "_mean")}
                     for s in summary]))
    md += ["", "![sweep](sweep.png)", ""]
    (out / "sweep.md").write_text("\n".join(md))
    payload = {"title": title, "axes": result.axes, "vector_axes": result.vector_axes,
               "program_axes": result.program_axes, "programs": result.programs, "messages": result.messages,
               "compile_seconds": result.compile_seconds, "run_seconds": result.run_seconds,
               "summary": summary, "rows": result.rows,
               "curves": {k: [[None if not np.isfinite(x) else float(x) for x in row] for row in v]
                          for k, v in result.history.items() if k in ("val_acc", "test_acc", "train_loss")},
               **(extra or {})}
    (out / "sweep.json").write_text(json.dumps(payload, indent=2, default=str))
    plot_grid(result, summary, out / "sweep.png", title)
    return {"md": out / "sweep.md", "json": out / "sweep.json", "png": out / "sweep.png"}


def plot_grid(result: "GridResult", summary: list, path, title: str) -> None:
    """Left: test accuracy at best validation vs the first grid axis (mean line, one dot per seed,
    one line per value of the other axes). Right: validation-accuracy curves, mean over seeds with
    the min-max band, one per grid point."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    keys = [k for k in result.axes if k != "seed"]
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(11, 4))
    if keys:
        x_key, rest = keys[0], keys[1:]
        numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in result.axes[x_key])
        xs_all = result.axes[x_key]
        pos = (lambda v: v) if numeric else (lambda v: xs_all.index(v))
        lines: dict = {}
        for s in summary:
            lines.setdefault(tuple(s[k] for k in rest), []).append(s)
        for lab, ss in lines.items():
            ss = sorted(ss, key=lambda s: pos(s[x_key]))
            name = ", ".join(f"{k}={v}" for k, v in zip(rest, lab)) or "mean over seeds"
            ax0.errorbar([pos(s[x_key]) for s in ss], [s["best_test_mean"] for s in ss],
                         yerr=[s["best_test_std"] for s in ss], marker="o", capsize=3, label=name)
            members = [r for r in result.rows if tuple(r[k] for k in rest) == lab]
            ax0.scatter([pos(r[x_key]) for r in members], [r["best_test"] for r in members], s=10, alpha=0.4,
                        color="k")
        if numeric and min(xs_all) > 0 and max(xs_all) / min(xs_all) >= 10:
            ax0.set_xscale("log")
        if not numeric:
            ax0.set_xticks(range(len(xs_all)), [str(v) for v in xs_all])
        ax0.set_xlabel(x_key)
        ax0.legend(fontsize=7)
    else:
        ax0.scatter([r["seed"] for r in result.rows], [r["best_test"] for r in result.rows])
        ax0.set_xlabel("seed")
    ax0.set_ylabel("test accuracy at best validation")
    ax0.grid(alpha=0.3)
    curve = result.history.get("val_acc")
    if curve is not None:
        groups: dict = {}
        for i, r in enumerate(result.rows):
            groups.setdefault(tuple(r[k] for k in keys), []).append(i)
        for point, idx in groups.items():
            c = curve[idx]
            rounds = np.arange(1, c.shape[1] + 1)
            label = ", ".join(f"{k}={v}" for k, v in zip(keys, point)) or "all seeds"
            (line,) = ax1.plot(rounds, np.nanmean(c, 0), label=label, lw=1.2)
            ax1.fill_between(rounds, np.nanmin(c, 0), np.nanmax(c, 0), color=line.get_color(), alpha=0.15)
        ax1.set_xlabel("round")
        ax1.set_ylabel("validation accuracy (band: seed min-max)")
        ax1.legend(fontsize=7)
        ax1.grid(alpha=0.3)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
