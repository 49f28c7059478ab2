"""mkdocs hooks: the site is built from the files the repository already has, nothing is copied.

* `index.md` is the README (one front page, not two);
* `results/...` are the files under experiments/results (the per-system READMEs, the script-written
  tables, their figures), `notebooks/...` the notebooks with their stored outputs (mkdocs-jupyter);
* `cli.md` is generated from the CLI parser, i.e. from each system's config class (fgl_jax.schema), and
  rewritten when the committed docs/cli.md differs;
* generated sections are written into the markdown, so GitHub shows them too: a block
  `<!-- include: experiments/results/hifgl/README.md -->` ... `<!-- /include: ... -->` holds that file
  (links rewritten for the page), `<!-- equations: fedgc -->` ... the code's equation references, and
  `<!-- algorithms: registry -->` ... the table of every registered algorithm (paper, messages sized on
  Cora, hyperparameters and defaults). `python docs/hooks.py --write` regenerates them in place;
  `--check` lists stale pages. The site build regenerates a stale page, writes it back and warns, so
  CI's strict build fails until the regenerated page is committed. `<!-- algorithms: modules -->`
  (one docstring block per algorithm module, mkdocstrings) is expanded on the site only;
* `--write` also rewrites fgl_jax/_cli_parser.json, the CLI parser's copy that answers `--help` without
  importing JAX (`fgl_jax.cli.write_parser_copy`), when it is not of the current source; `--check`
  lists it as stale then;
* relative links are written for GitHub (`../experiments/results/x.md`, `docs/x.md` from the README) and
  rewritten here to the site's paths; a link to a repository file that is not on the site (source
  code) becomes a code span, so `mkdocs build --strict` checks every link that can be checked.
"""
from __future__ import annotations

import io
import logging
import os
import posixpath
import re
from contextlib import redirect_stdout
from pathlib import Path

from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]
log = logging.getLogger("mkdocs.hooks.fgl_jax")
# repository folder -> where it appears on the site (its last path component)
MOUNTS = {"experiments/results": "results", "notebooks": "notebooks", "benchmarks/peers": "peers"}
# pages that other branches write: their nav entries are dropped while the file is absent (every other
# nav entry must exist, or the strict build fails)
OPTIONAL_PAGES = {"your_own_graph.md", "simulation.md", "notebooks/07_your_own_graph.ipynb"}
LINK = re.compile(r"(!?\[[^\]]*\])\(([^)\s]+)\)")


def _site_path(repo_path: str) -> str | None:
    """The site path (relative to docs_dir) of a repository path, or None when it is not on the site."""
    repo_path = posixpath.normpath(repo_path)
    if repo_path == "README.md":
        return "index.md"
    if repo_path.startswith("docs/"):
        return repo_path[len("docs/"):]
    for src, dst in MOUNTS.items():
        if repo_path == src or repo_path.startswith(src + "/"):
            return dst + repo_path[len(src):]
    return None


def rewrite_links(text: str, src_repo_path: str, page_site_path: str, site_files: set[str]) -> str:
    """Relative links of a file at `src_repo_path`, shown on the page `page_site_path`."""
    src_dir = posixpath.dirname(src_repo_path)
    page_dir = posixpath.dirname(page_site_path)

    def one(m: re.Match) -> str:
        label, target = m.group(1), m.group(2)
        if re.match(r"^[a-z]+:|^#|^/", target):
            return m.group(0)
        path, _, anchor = target.partition("#")
        repo = posixpath.normpath(posixpath.join(src_dir, path))
        site = _site_path(repo)
        if site is not None and site.endswith("/") is False and site not in site_files and site + "/README.md" in site_files:
            site = site + "/README.md"
        if site is None or site not in site_files:
            if label.startswith("!"):
                return m.group(0)  # an image that is not on the site: let mkdocs report it
            return f"{label[1:-1]} (`{repo}`)" if label[1:-1] != f"`{repo}`" and label[1:-1] != repo else f"`{repo}`"
        rel = posixpath.relpath(site, page_dir or ".")
        return f"{label}({rel}{'#' + anchor if anchor else ''})"

    return LINK.sub(one, text)


EQ = re.compile(r"\b(Eqs?\.\s?\(?\d+[a-z]?\)?(?:\s?[-–]\s?\d+)?|Alg(?:orithm|\.)\s?\d+(?:,? lines? \d+(?:\s?[-–]\s?\d+)?)?)")


def equations_table(system: str) -> str:
    """Where the code cites the paper's equations and algorithms: read from the comments and docstrings
    of fgl_jax/systems/<system>/ (so the table follows the code)."""
    seen: dict[tuple[str, str], tuple[int, str]] = {}
    folder = ROOT / "fgl_jax" / "systems" / system
    for path in sorted(folder.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for i, line in enumerate(path.read_text().splitlines(), 1):
            for m in EQ.finditer(line):
                ref = re.sub(r"[()]", "", m.group(1)).replace("Algorithm", "Alg.").replace("Eqs.", "Eq.")
                ref = re.sub(r"\s+", " ", re.sub(r"(Eq\.|Alg\.)(\d)", r"\1 \2", ref)).strip()
                seen.setdefault((ref, rel), (i, line.strip()))
    if not seen:
        return "(no equation references in the code)"

    def order(key):
        ref = key[0]
        num = re.search(r"\d+", ref)
        return (not ref.startswith("Eq"), int(num.group()) if num else 0, ref, key[1])

    rows = ["| paper | code | the line that cites it |", "|---|---|---|"]
    for ref, rel in sorted(seen, key=order):
        i, line = seen[(ref, rel)]
        text = line.lstrip("#\"' ").replace("|", "\\|").replace("`", "")
        text = text if len(text) <= 110 else text[:107] + "..."
        rows.append(f"| {ref} | `{rel}:{i}` | {text} |")
    return "\n".join(rows)


def _cli_reference() -> str:
    """Every command's options: systems from their config class (a table), the others from --help."""
    from fgl_jax import registry, schema
    from fgl_jax.cli import build_parser, main

    os.environ["COLUMNS"] = "100"
    lines = ["# CLI reference", "",
             "Generated from the code when the site is built (`docs/hooks.py`): each system's command is its config "
             "class (`fgl_jax.schema`), so the flags, YAML keys, defaults and valid values below are the ones the "
             "program checks. YAML keys are the field names; `--config FILE` reads them, flags override them. "
             "*traced* options live in the algorithm state, so `fgl-jax sweep --grid` over them runs as one "
             "compiled program.", ""]
    build_parser()  # registers every system
    for e in registry.entries("system"):
        command = e.info.get("command", e.name)
        lines += [f"## fgl-jax {command}", "", e.help, "",
                  "| flag | YAML key | type | default | valid values | traced | help |", "|---|---|---|---|---|---|---|"]
        for name, spec in schema.fields(e.info["config"]).items():
            typ = getattr(spec.type, "__name__", str(spec.type))
            if spec.type is tuple:
                typ = f"list of {getattr(spec.item, '__name__', spec.item)}"
            if spec.choices is not None:
                valid = ", ".join(map(str, spec.choices))
            elif spec.low is not None or spec.high is not None:
                lo = "" if spec.low is None else f"{'>' if spec.low_open else '≥'} {spec.low:g}"
                hi = "" if spec.high is None else f"{'<' if spec.high_open else '≤'} {spec.high:g}"
                valid = " and ".join(p for p in (lo, hi) if p)
            else:
                valid = ""
            d = spec.default
            default = ", ".join(map(str, d)) if isinstance(d, tuple) else str(d)
            cell = lambda s: str(s).replace("|", "\\|").replace("\n", " ")
            lines.append(f"| `{spec.flag}` | `{name}` | {typ} | `{cell(default)}` | {cell(valid)} | "
                         f"{'yes' if spec.traced else ''} | {cell(spec.help)} |")
        lines += ["", f"Run controls (`--config`, `--out`, `--resume`, ...): `fgl-jax {command} --help`.", ""]
    for command in ("sweep", "reproduce", "plot", "attack", "demo", "datasets"):
        buf = io.StringIO()
        with redirect_stdout(buf):
            try:
                main([command, "--help"])
            except SystemExit:
                pass
        lines += [f"## fgl-jax {command}", "", "```text", buf.getvalue().rstrip(), "```", ""]
    return "\n".join(lines) + "\n"


def _shape_text(x) -> str:
    dt = {"float32": "f32", "int32": "i32", "bool": "bool", "float64": "f64", "int64": "i64"}.get(str(x.dtype), str(x.dtype))
    return f"{dt}[{','.join(map(str, x.shape))}]"


def _describe(tree, params) -> str:
    """A message pytree in words: its top-level tuple's parts, each 'model' when it holds exactly the
    model's arrays, 'n model arrays' for a part of them, dtype[shape] for one other array."""
    import jax
    shapes = lambda t: sorted((tuple(x.shape), str(x.dtype)) for x in jax.tree.leaves(t))
    model = shapes(params)
    words = []
    for part in (tree if isinstance(tree, tuple) else (tree,)):
        mine = shapes(part)
        if not mine:
            continue
        if mine == model:
            words.append("model")
        elif len(mine) > 1 and all(m in model for m in mine):
            words.append(f"{len(mine)} of the model's arrays")
        elif len(mine) == 1:
            words.append(_shape_text(jax.tree.leaves(part)[0]))
        else:
            words.append(f"{len(mine)} arrays")
    return " + ".join(words)


def _toy_graph_set():
    """200 small graphs (cycles of 3..7 nodes with a chord, 3 features, 2 classes): what a graph-only
    algorithm's message sizes are measured on (they depend on the feature and class widths only)."""
    import numpy as np
    from fgl_jax.data.tu import GraphSet
    snd, rcv, n_off, e_off = [], [], [0], [0]
    for g in range(200):
        n = 3 + g % 5
        pairs = [(v, (v + 1) % n) for v in range(n)] + [(0, n // 2)]
        snd += [a + n_off[-1] for a, b in pairs] + [b + n_off[-1] for a, b in pairs]
        rcv += [b + n_off[-1] for a, b in pairs] + [a + n_off[-1] for a, b in pairs]
        n_off.append(n_off[-1] + n)
        e_off.append(e_off[-1] + 2 * len(pairs))
    x = np.random.default_rng(0).normal(size=(n_off[-1], 3)).astype(np.float32)
    return GraphSet("toy", x, np.array(snd, np.int32), np.array(rcv, np.int32), np.array(n_off, np.int64),
                    np.array(e_off, np.int64), (np.arange(200) % 2).astype(np.int32), 2)


def _size(n: int) -> str:
    return f"{n} B" if n < 1000 else (f"{n / 1e3:.1f} kB" if n < 1e6 else f"{n / 1e6:.2f} MB")


def algorithms_table(dataset: str = "cora", clients: int = 10, partition: str = "louvain", graph=None,
                     **config) -> str:
    """One row per registered algorithm: its paper and help (registry info), what one participating
    client uploads and downloads per round on `dataset` split into `clients` clients (`partition`) with
    the default model (`FederatedAlgorithm.messages`, sized by fgl_jax.federated.communication), and its
    hyperparameters with their defaults (its hparams dataclass). `config`: RunConfig overrides."""
    import jax
    from fgl_jax import registry, schema
    from fgl_jax.federated.communication import tree_bytes
    from fgl_jax.nn import ModelSpec
    from fgl_jax.systems.baseline import RunConfig
    from fgl_jax.systems.baseline.program import algorithm_from_config, prepare

    note = []
    if graph is None:
        from fgl_jax.data import load_graph
        from fgl_jax.data.paths import DatasetNotFoundError
        try:
            graph = load_graph(dataset)
        except DatasetNotFoundError:  # a docs build without the datasets: the embedded synthetic graph
            note = [f"*{dataset} was not found where this site was built (FGL_JAX_DATA): the message sizes "
                    "below are for the embedded synthetic graph `csbm` instead.*", ""]
            dataset, graph = "csbm", load_graph("csbm")
    cell = lambda s: str(s).replace("|", "\\|").replace("\n", " ")
    rows = note + ["| algorithm | paper | what it does | uploads per client per round | downloads per client per round "
            "| hyperparameters (default; * = traced, sweepable in one program) |", "|---|---|---|---|---|---|"]
    for e in registry.entries("algorithm"):
        graph_only = "node_cls" not in e.spec.tasks and "link_pred" not in e.spec.tasks
        if graph_only:  # graph-level only (FedStar): sized on a toy set of graphs, with its own model
            cfg = RunConfig(dataset="toy", algorithm=e.name, clients=clients, task="graph_cls", **config)
            prep = prepare(cfg, _toy_graph_set())
        else:
            cfg = RunConfig(dataset=dataset, algorithm=e.name, clients=clients, partition=partition, **config)
            prep = prepare(cfg, graph)
        alg = algorithm_from_config(cfg, prep.graph)
        sent = "not described"
        got = "not described"
        if alg.messages is not None:
            state = jax.eval_shape(alg.init, jax.eval_shape(jax.random.key, 0), prep.data)
            up, down = jax.eval_shape(alg.messages, state)
            if graph_only:
                params = state.server
            else:
                net = ModelSpec(cfg.model, prep.graph.num_features, prep.graph.num_classes, cfg.hidden, cfg.num_layers,
                                cfg.dropout).build()
                one = jax.tree.map(lambda a: a[0], prep.data.eval)
                params = jax.eval_shape(lambda k: net.init({"params": k, "dropout": k}, one, train=False),
                                        jax.random.key(0))
            sent = f"{_describe(up, params) or 'nothing'} ({_size(tree_bytes(up))})"
            got = f"{_describe(down, params) or 'nothing'} ({_size(tree_bytes(down))})"
            if graph_only:
                sent, got = (f"{m}, graph tasks only: on 200 toy graphs with 3 features, 2 classes" for m in (sent, got))
        hp = e.spec.hparams
        opts = []
        if hp is not None:
            for name, spec in schema.fields(hp).items():
                mark = "\\*" if spec.traced else ""   # an escaped *, not the start of an emphasis
                opts.append(f"`{name}` = {spec.default}{mark}")
        rows.append(f"| `{e.name}` | {cell(e.spec.paper)} | {cell(e.help)} | {cell(sent)} | {cell(got)} "
                    f"| {cell('; '.join(opts)) or 'none of its own'} |")
    return "\n".join(rows)


def algorithm_modules() -> str:
    """One mkdocstrings block per registered algorithm's module (its docstring: what it implements
    and where it departs from its paper and from OpenFGL), in the registry's order; a module that
    registers several algorithms (gcfl: gcfl, gcfl_plus, gcfl_plus_dws) appears once."""
    from fgl_jax import registry
    modules = dict.fromkeys(e.obj.__module__ for e in registry.entries("algorithm"))
    blocks = [f"::: {m}\n    options:\n      members: false\n      show_root_heading: true\n"
              f"      heading_level: 2\n" for m in modules]
    return "\n".join(blocks)


def _present(page: str) -> bool:
    top, _, rest = page.partition("/")
    for src, dst in MOUNTS.items():
        if top == dst:
            return (ROOT / src / rest).is_file()
    return (ROOT / "docs" / page).is_file() or page == "index.md"


def _prune(nav):
    out = []
    for item in nav:
        if isinstance(item, dict):
            (title, value), = item.items()
            if isinstance(value, list):
                value = _prune(value)
            elif value in OPTIONAL_PAGES and not _present(value):
                continue
            item = {title: value}
        out.append(item)
    return out


def on_config(config):
    config.nav = _prune(config.nav)
    return config


@event_priority(100)  # before mkdocs-jupyter looks for notebooks
def on_files(files: Files, config) -> Files:
    files.append(File.generated(config, "index.md", abs_src_path=str(ROOT / "README.md")))
    # docs/cli.md is committed so GitHub shows it; the site always shows what the code generates now
    # (a stale file is rewritten in place, with a notice to commit it: not a warning, so merging a branch
    # that adds an option does not fail CI's strict build)
    cli, text = ROOT / "docs" / "cli.md", _cli_reference()
    if not cli.exists() or cli.read_text() != text:
        cli.write_text(text)
        log.info("docs/cli.md did not match the CLI and has been regenerated: commit it")
        if files.get_file_from_path("cli.md") is None:
            files.append(File.generated(config, "cli.md", abs_src_path=str(cli)))
    for src, dst in MOUNTS.items():
        for path in sorted((ROOT / src).rglob("*")):
            rel = path.relative_to(ROOT / src).as_posix()
            hidden = any(part.startswith((".", "_")) for part in rel.split("/"))  # venvs, caches
            if path.is_file() and not hidden and path.suffix in (".md", ".png", ".ipynb", ".svg"):
                # a plain File rooted at the mount's parent folder (mkdocs-jupyter cannot wrap generated ones)
                files.append(File(f"{dst}/{rel}", src_dir=str(ROOT / src[: -len(dst)]), dest_dir=config.site_dir,
                                  use_directory_urls=config.use_directory_urls))
    return files


def _repo_path(page) -> str:
    src = Path(page.file.abs_src_path).resolve()
    return src.relative_to(ROOT).as_posix()


# an opening marker, then (once generated) the section and its closing marker
BLOCK = re.compile(r"<!--\s*(include|equations|algorithms):\s*(\S+)\s*-->\n"
                   r"(?:(?:(?!<!--\s*(?:include|equations|algorithms):).)*?<!--\s*/\1:\s*\2\s*-->\n?)?", re.S)
GENERATED = {"algorithms": {"registry"}}  # besides every include and equations block


def _relink(text: str, src_repo_path: str, page_repo_path: str) -> str:
    """Relative links of a file at `src_repo_path`, rewritten for the page at `page_repo_path` (both
    repository paths: what GitHub resolves)."""
    src_dir, page_dir = posixpath.dirname(src_repo_path), posixpath.dirname(page_repo_path)

    def one(m: re.Match) -> str:
        label, target = m.group(1), m.group(2)
        if re.match(r"^[a-z]+:|^#|^/", target):
            return m.group(0)
        path, _, anchor = target.partition("#")
        repo = posixpath.normpath(posixpath.join(src_dir, path))
        return f"{label}({posixpath.relpath(repo, page_dir or '.')}{'#' + anchor if anchor else ''})"

    return LINK.sub(one, text)


def generate(text: str, page_repo_path: str) -> str:
    """`text` (a page at `page_repo_path`) with every generated section filled in afresh."""
    def fill(m: re.Match) -> str:
        kind, arg = m.group(1), m.group(2)
        if kind == "include":
            body = (ROOT / arg).read_text()
            body = re.sub(r"^# .*\n", "", body, count=1)  # the page has its own title
            body = _relink(body, arg, page_repo_path).strip("\n")
        elif kind == "equations":
            body = equations_table(arg)
        elif arg in GENERATED.get(kind, ()):
            body = algorithms_table()
        else:
            return m.group(0)  # expanded on the site only (algorithms: modules)
        return f"<!-- {kind}: {arg} -->\n{body}\n<!-- /{kind}: {arg} -->\n"

    return BLOCK.sub(fill, text)


def on_page_markdown(markdown: str, page, config, files: Files) -> str:
    site_files = {f.src_uri for f in files}
    if page.file.abs_src_path is None:
        return markdown
    repo_path = _repo_path(page)
    if repo_path.startswith("docs/") and BLOCK.search(markdown):
        fresh = generate(markdown, repo_path)
        if fresh != markdown:
            Path(page.file.abs_src_path).write_text(fresh)
            log.warning(f"{repo_path}: its generated sections were stale and have been rewritten: commit it "
                        "(python docs/hooks.py --write)")
        markdown = fresh
    markdown = re.sub(r"<!--\s*algorithms:\s*modules\s*-->", lambda m: algorithm_modules(), markdown)
    return rewrite_links(markdown, repo_path, page.file.src_uri, site_files)


def _pages() -> list[Path]:
    return sorted(p for p in (ROOT / "docs").rglob("*.md") if BLOCK.search(p.read_text()))


if __name__ == "__main__":
    import sys
    if len(sys.argv) != 2 or sys.argv[1] not in ("--write", "--check"):
        sys.exit("usage: python docs/hooks.py --write | --check")
    sys.path.insert(0, str(ROOT))  # this checkout's fgl_jax (not an editable install of another one)
    stale = []
    for path in _pages():
        rel = path.relative_to(ROOT).as_posix()
        text = path.read_text()
        fresh = generate(text, rel)
        if fresh != text:
            stale.append(rel)
            if sys.argv[1] == "--write":
                path.write_text(fresh)
    # the CLI parser's copy shipped in the package (help without JAX): made from the current source
    from fgl_jax import cli as fgl_cli
    if not fgl_cli.parser_copy_is_current():
        stale.append(fgl_cli.PARSER_COPY.relative_to(ROOT).as_posix())
        if sys.argv[1] == "--write":
            fgl_cli.write_parser_copy()
    verb = "rewritten" if sys.argv[1] == "--write" else "stale"
    print(f"{len(stale)} file(s) {verb}" + (": " + ", ".join(stale) if stale else ""))
    sys.exit(1 if stale and sys.argv[1] == "--check" else 0)
