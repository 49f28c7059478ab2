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
from typing import Any, Optional, Sequence

from fgl_jax.experiment import _jsonable, environment


def table(rows: Sequence[dict], columns: Optional[Sequence[str]] = None, floatfmt: str = ".4f",
          headers: Optional[Sequence[str]] = None, disable_numparse: bool = False) -> str:
    """Rows of dicts as a GitHub markdown table (columns default to the first row's keys; a missing
    value is blank). disable_numparse: print text cells ("+7.2", "0.80 ± 0.01") exactly as given."""
    from tabulate import tabulate
    rows = list(rows)
    cols = list(columns) if columns is not None else (list(rows[0]) if rows else [])
    body = [[r.get(c, "") if r.get(c) is not None else "" for c in cols] for r in rows]
    return tabulate(body, headers=list(headers) if headers is not None else cols, tablefmt="github",
                    floatfmt=floatfmt, missingval="", disable_numparse=disable_numparse)


def provenance(t_start: float, config: Any, command: Optional[Sequence[str]] = None) -> dict:
    """Command, config, environment, wall time and date of a result."""
    argv = list(command) if command is not None else [Path(sys.executable).name] + sys.argv
    return {"command": " ".join(shlex.quote(str(a)) for a in argv), "config": _jsonable(config),
            "environment": environment(), "wall_seconds": round(time.perf_counter() - t_start, 1),
            "finished": time.strftime("%Y-%m-%d %H:%M:%S %Z")}


def write_results(folder: Path, stem: str, table_md: str, payload: dict) -> None:
    """folder/stem.md (the table + provenance) and folder/stem.json (the payload)."""
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
