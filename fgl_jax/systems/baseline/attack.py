"""Attacks on a finished run directory (`fgl-jax attack mia RUN_DIR`): the run is rebuilt from its
config.yaml and final checkpoint (`fgl_jax.experiment.load_run`) and attacked by the same code
`--eval-mia` runs after training (`program.membership_attack`), so the two give the same AUCs.

    RUN_DIR/attacks/mia.json   {"attack", "run_dir", "rounds", "mia": {model, members, nonmembers,
                                auc_loss, auc_confidence}}
"""
from __future__ import annotations

import json
import types
from pathlib import Path
from typing import Any

ATTACKS = ("mia",)
ATTACK_DIR = "attacks"


def attack_run(run_dir: Any, attack: str = "mia", overwrite: bool = False) -> dict:
    """Run `attack` on the final model of the finished `fgl-jax run` in `run_dir` and write
    `run_dir/attacks/<attack>.json` (atomically).

    Args:
        run_dir: a run directory written by `fgl-jax run --out` (or `run_config(..., out=...)`).
        attack: "mia" (membership inference: loss- and confidence-threshold attacks, members = every
            client's training nodes, non-members = its test nodes).
        overwrite: replace an existing result file (else refused).

    Returns:
        What the file holds: {"attack", "run_dir", "rounds", "mia": {"model", "members",
        "nonmembers", "auc_loss", "auc_confidence"}}.

    Raises:
        ValueError: one line for an unknown attack, a result file already there without
            `overwrite`, a run of another system or task, or what `load_run` refuses.
    """
    from fgl_jax import experiment, rundir
    if attack not in ATTACKS:
        raise ValueError(f"attack {attack!r}: known attacks are {', '.join(ATTACKS)}")
    out = rundir.resolve_out(run_dir)
    if not out.is_dir():
        raise ValueError(f"run directory {run_dir} does not exist")
    target = out / ATTACK_DIR / f"{attack}.json"
    if target.exists() and not overwrite:
        raise ValueError(f"{target} exists: add {rundir.arg('overwrite')} to replace it")
    _check_task(out, run_dir)
    with rundir.RunLock(out):  # no run may rewrite the directory meanwhile
        run = experiment.load_run(out, eval_mia=True)
        result = run.program.hooks.finalize(types.SimpleNamespace(state=run.state))
        record = {"attack": "membership inference by loss / confidence threshold (Yeom et al. 2018) on the final "
                            f"{result['mia']['model']} model", "run_dir": str(out), "rounds": run.rounds,
                  "mia": result["mia"]}
        target.parent.mkdir(exist_ok=True)
        rundir.write_atomic(target, json.dumps(record, indent=2) + "\n")
    return record


def _check_task(out: Path, shown: Any) -> None:
    """One line for a run the membership attack cannot read: another system, a graph or link task."""
    from fgl_jax import schema
    path = out / "config.yaml"
    if not path.is_file():
        return  # load_run says what is missing
    values = schema.read_yaml_text(path.read_text(encoding="utf-8"), str(path))
    system = values.get("system", "baseline")
    if system not in ("baseline", "run"):
        raise ValueError(f"{shown} holds a {system} run; attack mia reads runs of `fgl-jax run` (system baseline)")
    task = values.get("task", "node_cls")
    if task != "node_cls":
        raise ValueError(f"{shown} holds a {task} run; attack mia attacks node classifiers (training vs test nodes), "
                         "graph and link tasks are not supported")

