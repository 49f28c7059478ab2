"""Helpers shared by the experiment scripts (they live in the library: `fgl_jax.table`,
`fgl_jax.write_results`, `fgl_jax.provenance`)."""
from __future__ import annotations

from pathlib import Path

from fgl_jax import provenance, table, write_results  # noqa: F401

RESULTS = Path(__file__).resolve().parent / "results"
