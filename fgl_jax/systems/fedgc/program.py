"""FedGC as a registered system: `build(cfg) -> Program` and the hooks that make it the paper's run.

    prepare (host, once)     Algorithm 1 lines 0-6 and the clients' blocks     `FedGCRun.__init__`
    rounds (the engine)      lines 7-14, one condensation round per round      `algorithm.condense_algorithm`
    Hooks.on_chunk           line 15: a GNN trained on G' at the evaluation rounds, tested on the clients
    Hooks.select             the reported checkpoint: best pooled validation (or, protocol paper, test)
    Hooks.finalize           the membership attack (`mia`) and the architectures on G' (`archs`)
    Hooks.save_state / load_state   the G' of the best checkpoint so far, kept beside the engine's
                             checkpoints, so a resumed run reports and attacks the same G'

`run_config(FedGCConfig(...), out=D)` runs it; `FedGCRun(cfg, graph=..., cache=...)` is the same
program for code that brings its own graph or shares host preparation across cells (`paper.py`),
and `FedGCRun.result(run_result)` gives the `FedGCResult` the attack and the tables read.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np

from fgl_jax import progress
from fgl_jax.batch import ClientBatch, stack_graphs
from fgl_jax.federated.communication import per_round_columns
from fgl_jax.federated.algorithm import Hooks, Program
from fgl_jax.graph import Graph
from fgl_jax.registry import register
from fgl_jax.systems.fedgc.algorithm import condense_algorithm, condense_data
from fgl_jax.systems.fedgc.attack import MIAConfig, fedgc_attack, prepare_shadow
from fgl_jax.systems.fedgc.condense.labels import synthetic_class_counts
from fgl_jax.systems.fedgc.condense.server import condensed_graph, make_condenser
from fgl_jax.systems.fedgc.config import METHOD_NAMES, FedGCConfig
from fgl_jax.systems.fedgc.data import condensation_client_data, prepare, train_class_counts
from fgl_jax.systems.fedgc.evaluate import (EvalConfig, arch_configs, dense_graph_batch, evaluate_architectures,
                                            make_evaluator, pooled)
from fgl_jax.systems.fedgc.ib import IBPosterior


def stage_keys(seed: int) -> tuple:
    """(self-training, IB, condensation, evaluation) keys: jax.random.split(jax.random.key(seed), 4)."""
    return tuple(jax.random.split(jax.random.key(int(seed)), 4))


@dataclasses.dataclass
class FedGCResult:
    """What a FedGC run produced, for the attack and the tables (host arrays)."""

    history: list            # per evaluation round: dict(round, loss, val_acc, test_acc, val_acc_noft, test_acc_noft)
    final: dict              # the reported checkpoint (`select_result`) + timings + preparation info + defence
    condensed: tuple         # (A', X', Y') of the last round
    state: object            # CondenseState of the last round
    clients: ClientBatch     # evaluation view of the clients (Z or X features)
    client_graphs: list
    client_ids: list
    losses: np.ndarray       # matching loss per round
    condense_graphs: Optional[list] = None  # graphs the condensation targets came from (PL: pseudo-labelled)
    ib_posterior: Optional[IBPosterior] = None  # under IB: q(z|x) and scaler behind `clients`' Z (numpy)
    # after self-training: the labels each client's IB (or PL) fitted, [M, N] aligned with `clients`
    # (ground truth on training nodes, pseudo-labels elsewhere, -1 = unlabelled); None without it
    pseudo_labels: Optional[np.ndarray] = None
    # (A', X', Y') at the checkpoint `final["round"]` reports (`condensed` is the last round's)
    selected: Optional[tuple] = None


def select_result(history: list, protocol: str = "val") -> dict:
    """Reported accuracy: "val" = test accuracy at the checkpoint with the best pooled validation
    accuracy; "paper" = the maximum test accuracy over the checkpoints (the code's leaky choice).
    First such checkpoint on ties."""
    if not history:
        return {}
    out = {}
    for sfx in ("", "_noft"):
        key = ("val_acc" if protocol == "val" else "test_acc") + sfx
        best = max(history, key=lambda r: r[key])
        out["test_acc" + sfx] = best["test_acc" + sfx]
        out["val_acc" + sfx] = best["val_acc" + sfx]
        out["round" + sfx] = best["round"]
    out["protocol"] = protocol
    out.update(best_val=out["val_acc"], best_test=out["test_acc"], best_round=out["round"])
    return out


def _condensed(cond):
    """G' of a server state, op by op (a jitted PGE differs in the last float bits from the
    paper-protocol runs, which always read G' this way)."""
    return condensed_graph(cond)


class FedGCRun:
    """One FedGC run's host side: preparation (once), the Program and its hooks.

    graph: use this graph instead of loading `cfg.dataset`; cache: a dict shared across runs on the
    same graph object that memoises the partition, self-training, IB and attack shadow models
    (identical results, computed once); log: progress lines (default: none).
    """

    def __init__(self, cfg: FedGCConfig, graph: Optional[Graph] = None, cache: Optional[dict] = None,
                 log: Optional[Callable[[str], None]] = None):
        if graph is None:
            from fgl_jax.data import load_graph
            graph = load_graph(cfg.dataset, data_dir=cfg.data_dir)
        self.cfg, self.raw_graph, self.cache = cfg, graph, ({} if cache is None else cache)
        self.log = log or (lambda m: None)
        t0 = time.perf_counter()
        self.prep = prep = prepare(graph, cfg, cfg.seed, self.log, self.cache)
        self.timings = dict(prep.timings)
        c = prep.graph.num_classes
        progress.phase("preparing", "FedGC: condensation blocks and the evaluation program")
        t = time.perf_counter()
        client = condensation_client_data(prep, cfg, cfg.seed)
        self.syn_counts = synthetic_class_counts(train_class_counts(prep.eval_graphs, c).sum(0), cfg.rate)
        d = int(prep.eval_graphs[0].x.shape[1])
        self.in_dim, self.num_classes = d, c
        condenser = make_condenser(cfg.condense_config, d, c)
        self.clients = stack_graphs(prep.eval_graphs, prep.ids)
        self.evaluator = make_evaluator(cfg.eval_config, d, c)
        _, _, k_cond, self.k_eval = stage_keys(cfg.seed)
        self.data = condense_data(condenser, client, k_cond, self.syn_counts)
        # the evaluation program compiles in a thread while the rounds' programs compile and run
        # (arguments shaped like every evaluation's: the starting G', the clients)
        self.evaluator.precompile(jax.random.fold_in(self.k_eval, 0), dense_graph_batch(*_condensed(self.data.start)),
                                  self.clients)
        # Φ's initial bias only shapes the start state (in `data`): cells that differ only in it share
        # one algorithm object, hence one compiled scan per process
        self.algorithm = condense_algorithm(
            make_condenser(dataclasses.replace(cfg.condense_config, pge_init_bias=None), d, c))
        self.timings.update(blocks_s=time.perf_counter() - t, build_s=time.perf_counter() - t0)
        self.eval_rounds = set(cfg.evaluation_rounds)
        # (round, selection score, (A', X', Y')) of the best evaluation so far under `cfg.protocol`: the
        # checkpoint `select` reports is the first evaluation with the highest score (`select_result`)
        self.kept: Optional[tuple] = None
        self.eval_s = 0.0
        self.log(f"[fedgc] {graph.name} ({cfg.method}): {cfg.clients} clients, N'={int(self.syn_counts.sum())} "
                 f"({self.syn_counts.tolist()}), d={d}, local nodes {[g.num_nodes for g in prep.eval_graphs]}")
        self.describe = {"method": METHOD_NAMES[cfg.method], "defence": cfg.method, "dataset": cfg.dataset,
                         "graph": graph.name, "clients": cfg.clients, "rate": cfg.rate,
                         "n_syn": int(self.syn_counts.sum()), **prep.info,
                         **{k: round(v, 3) for k, v in self.timings.items()}}
        clients = int(self.data.client.counts.shape[0])
        self.program = Program(self.algorithm, self.data, cfg.rounds, self.describe,
                               Hooks(every=cfg.eval_period, on_chunk=self.on_chunk, select=self.select,
                                     finalize=self.finalize, save_state=self.save_state,
                                     load_state=self.load_state),
                               per_round=per_round_columns(self.algorithm, self.data, clients, cfg.rounds))

    # --- hooks -----------------------------------------------------------------------------------
    def evaluate(self, syn: ClientBatch, mark: int) -> dict:
        """Pooled accuracies of `cfg.eval_runs` GNNs trained on G' (after / before fine-tuning)."""
        accs = []
        for run in range(self.cfg.eval_runs):
            res = self.evaluator(jax.random.fold_in(self.k_eval, mark * 100 + run), syn, self.clients)
            accs.append((pooled(res, True), pooled(res, False)))
        rec = {}
        for name, idx in (("", 0), ("_noft", 1)):
            rec["val_acc" + name] = float(np.mean([r[idx]["val_acc"] for r in accs]))
            rec["test_acc" + name] = float(np.mean([r[idx]["test_acc"] for r in accs]))
        return rec

    def on_chunk(self, rounds_done: int, state, history: dict) -> Optional[dict]:
        if rounds_done not in self.eval_rounds:
            return None
        t = time.perf_counter()
        a, x, y = _condensed(state.cond)
        rec = self.evaluate(dense_graph_batch(a, x, y), rounds_done)
        score = rec["val_acc" if self.cfg.protocol == "val" else "test_acc"]
        if self.kept is None or score > self.kept[1]:   # strictly better: the first of ties stays
            self.kept = (rounds_done, score, tuple(np.asarray(v) for v in (a, x, y)))
        self.eval_s += time.perf_counter() - t
        self.log(f"[fedgc] round {rounds_done}: val {rec['val_acc']:.4f} test {rec['test_acc']:.4f} "
                 f"(no ft: val {rec['val_acc_noft']:.4f} test {rec['test_acc_noft']:.4f})")
        return rec

    def select(self, history: dict, evaluations: list) -> dict:
        return select_result(evaluations, self.cfg.protocol)

    def save_state(self) -> dict:
        """What the hooks hold across chunks (written beside each checkpoint): the kept G' and the
        evaluation time so far."""
        out = {"eval_s": np.float64(self.eval_s)}
        if self.kept is not None:
            r, score, (a, x, y) = self.kept
            out.update(kept_round=np.int64(r), kept_score=np.float64(score), kept_a=a, kept_x=x, kept_y=y)
        return out

    def load_state(self, saved: dict) -> None:
        """Resume: the state `save_state` wrote at the restored checkpoint."""
        self.eval_s = float(saved["eval_s"])
        self.kept = None if "kept_round" not in saved else (
            int(saved["kept_round"]), float(saved["kept_score"]),
            tuple(np.asarray(saved[k]) for k in ("kept_a", "kept_x", "kept_y")))

    def finalize(self, res) -> dict:
        out = {"eval_seconds": self.eval_s}
        if not self.cfg.mia and not self.cfg.archs:
            return out
        fr = self.result(res)
        if self.cfg.archs:
            archs = None if "all" in self.cfg.archs else list(self.cfg.archs)
            out["archs"] = self.architectures(fr, self.cfg.arch_protocol, archs)
        if self.cfg.mia:
            out.update(self.attack(fr))
        return out

    # --- after the run ---------------------------------------------------------------------------
    def result(self, res) -> FedGCResult:
        """The `FedGCResult` of a finished `RunResult` of this program."""
        prep = self.prep
        evaluations = [dict(e) for e in res.evaluations]
        losses = np.asarray(res.history.get("train_loss", []), np.float32)
        for e in evaluations:
            e.setdefault("loss", float(losses[e["round"] - 1]) if 0 < e["round"] <= len(losses) else None)
        final = dict(res.best)
        final.update(self.timings, condense_s=res.compile_seconds + res.run_seconds, eval_s=self.eval_s)
        final.update(prep.info)
        final["defence"] = self.cfg.method
        cond = res.state.cond
        a, x, y = (np.asarray(v) for v in _condensed(cond))
        return FedGCResult(history=evaluations, final=final, condensed=(a, x, y), state=cond, clients=self.clients,
                           client_graphs=prep.eval_graphs, client_ids=prep.ids, losses=losses,
                           condense_graphs=prep.cond_graphs, ib_posterior=prep.ib_posterior,
                           selected=self.kept[2] if self.kept and self.kept[0] == final.get("round") else None,
                           pseudo_labels=None if prep.labels is None else
                           np.where(np.asarray(prep.label_mask), np.asarray(prep.labels), -1).astype(np.int32))

    def shadow(self, mia: Optional[MIAConfig] = None):
        """The attack's shadow model and attack MLP in the server's raw-X view (memoised in the cache;
        they do not depend on G', so every cell on the same graph, features and seed shares them)."""
        seed, m = self.cfg.seed, dataclasses.replace(mia or MIAConfig(), target_graph="last")
        k = ("shadow", id(self.raw_graph), self.cfg.feature_norm, seed, m)
        if k not in self.cache:
            self.cache[k] = prepare_shadow(jax.random.PRNGKey(seed + 10), self.prep.graph, m, seed=seed)
        return self.cache[k]

    def attack(self, fr: FedGCResult, mia: Optional[MIAConfig] = None) -> dict:
        """The membership attack on G' (spec §5.16): the raw-X query sees the features as FedGC
        normalised them (`cfg.feature_norm`), the owner query the clients' features (Z under IB)."""
        seed, mia = self.cfg.seed, mia or self.cfg.mia_config
        return fedgc_attack(jax.random.PRNGKey(seed + 11), self.prep.graph, fr, mia, seed=seed, shadow=self.shadow(mia))

    def architectures(self, fr: FedGCResult, protocol: str = "gcond", archs=None) -> dict:
        """FedGC Table 3: every architecture of `protocol` (or `archs`) trained on the G' of the reported
        checkpoint (the last round's when it was not kept in this process) and tested on the clients."""
        configs = arch_configs(protocol, self.cfg.eval_config, archs)
        return architecture_accuracies(fr, configs, self.num_classes, self.cfg.seed,
                                       log=lambda m: self.log(f"[{protocol}] {m}"))


def architecture_accuracies(res: FedGCResult, configs: dict[str, EvalConfig], num_classes: int, seed: int = 0,
                            log=None) -> dict[str, float]:
    """Train every config of `configs` on the G' of the checkpoint `res.final` reports (`res.selected`;
    the last round's G' when none was kept) and test on `res.clients`."""
    a, x, y = (jnp.asarray(v) for v in (res.selected or res.condensed))
    return evaluate_architectures(jax.random.PRNGKey(seed + 5), dense_graph_batch(a, x, y), res.clients, configs,
                                  x.shape[1], num_classes, log=log)


@register("system", "fedgc", config=FedGCConfig, seeds="build",
          help="FedGC: federated graph condensation with the IB defence and a membership attack")
def build(cfg: FedGCConfig) -> Program:
    """The Program of a FedGC config (host preparation once; rounds through `fgl_jax.federated.run`)."""
    return FedGCRun(cfg).program
