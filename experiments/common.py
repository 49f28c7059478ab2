"""Helpers shared by the experiment scripts: result files with provenance."""
from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path

from fgl_jax.pipeline import environment

RESULTS = Path(__file__).resolve().parent / "results"


def provenance(t_start: float, config: dict) -> dict:
    return {"command": " ".join(shlex.quote(a) for a in [Path(sys.executable).name] + sys.argv),
            "config": config, "environment": environment(),
            "wall_seconds": round(time.perf_counter() - t_start, 1),
            "finished": time.strftime("%Y-%m-%d %H:%M:%S %Z")}


def write_results(folder: Path, stem: str, table_md: str, payload: dict) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{stem}.json").write_text(json.dumps(payload, indent=2, default=float))
    prov = payload["provenance"]
    env = prov["environment"]
    md = [table_md, "", f"Produced by `{prov['command']}` in {prov['wall_seconds']} s on {prov['finished']}.",
          f"Environment: python {env['python']}, jax {env['jax']}, flax {env['flax']}, optax {env['optax']}, "
          f"{env['platform']}, devices {env['devices']}.", "",
          "Config:", "", "```json", json.dumps(prov["config"], indent=2), "```", ""]
    (folder / f"{stem}.md").write_text("\n".join(md))
