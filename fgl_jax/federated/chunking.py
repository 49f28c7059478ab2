"""Memory-bounded client maps: `vmap` over the client axis, or `lax.map` over blocks of clients.

vmapping a local update over C clients materialises C copies of parameters, gradients,
optimiser moments and per-client activations at once. `map_clients(fn, chunk)` computes the
same function `chunk` clients at a time (`jax.lax.map(..., batch_size=chunk)`: a sequential
loop over blocks, each block vmapped), so peak memory scales with `chunk` instead of C while
every client's arithmetic is unchanged (tests/test_sharding.py checks chunked == unchunked).

Graph clients in packed execution (a `fgl_jax.graph_batch.GraphBatch` argument with its size-class
view, `with_size_classes`) are always mapped one client at a time: their local steps branch on
each mini-batch's size class (`fgl_jax.federated.client.local_train`), and only a sequential loop
computes just the branch taken (vmap would compute every branch for every client).
"""
from __future__ import annotations

from typing import Callable, Optional


import jax


def check_chunk(chunk: Optional[int], name: str = "client_chunk") -> Optional[int]:
    if chunk is None:
        return None
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise ValueError(f"{name} must be a positive integer or None, got {chunk!r}")
    return chunk


def map_clients(fn: Callable, chunk: Optional[int] = None, in_axes=0) -> Callable:
    """Like `jax.vmap(fn, in_axes)` over the leading client axis, in blocks of `chunk` clients.

    in_axes: 0 or None per positional argument (None = shared by all clients, e.g. the global
    model in evaluation). chunk None (or >= C) is a plain vmap. A remainder block (C % chunk)
    is vmapped separately by lax.map, so C need not be a multiple of chunk.
    """
    check_chunk(chunk)
    if chunk is None:
        def whole(*args):
            if any(getattr(a, "classes", None) is not None for a in args):   # packed graph clients
                return map_clients(fn, 1, in_axes)(*args)
            return jax.vmap(fn, in_axes=in_axes)(*args)
        return whole

    def mapped(*args):
        axes = in_axes if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(args)
        if len(axes) != len(args):
            raise ValueError(f"map_clients: in_axes has {len(axes)} entries for {len(args)} arguments")
        mapped_idx = [i for i, a in enumerate(axes) if a == 0]
        if any(a not in (0, None) for a in axes):
            raise ValueError(f"map_clients: in_axes entries must be 0 or None, got {in_axes!r}")
        sizes = {x.shape[0] for i in mapped_idx for x in jax.tree.leaves(args[i])}
        if len(sizes) != 1:
            raise ValueError(f"map_clients: mapped arguments disagree on the client count: {sorted(sizes)}")
        packed = any(getattr(a, "classes", None) is not None for a in args)
        if chunk >= sizes.pop() and not packed:
            return jax.vmap(fn, in_axes=in_axes)(*args)
        xs = tuple(args[i] for i in mapped_idx)

        def one(x):
            full = list(args)
            for i, v in zip(mapped_idx, x):
                full[i] = v
            return fn(*full)

        # chunk 1: a plain loop, no vmap of size 1 (XLA:CPU then lays some weight gradients out
        # transposed and transposes them back inside the optimiser's fusions: FedSage+'s fGen
        # output layer cost 4x its arithmetic that way)
        return jax.lax.map(one, xs) if chunk == 1 or packed else jax.lax.map(one, xs, batch_size=chunk)

    return mapped
