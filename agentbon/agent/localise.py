"""Localisation without a model: which repository files the edit agent is shown, and which lines of them.

Files are ranked by how the problem statement points at them: a path, file name or module named outright;
identifiers and words of the statement in the path; the same words in the content (weighted by rarity,
more for a definition), found with ``git grep`` in the sandbox; then files imported by the best ones.
Test files are left out unless the statement names them. Long files are shown as the window of lines
with the most matches.
"""

from __future__ import annotations

import math
import posixpath
import re
import uuid
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from agentbon.config import AgentConfig
from agentbon.diffs import is_test_path as python_test
from agentbon.protocols import Sandbox

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BACKTICKS = re.compile(r"`[^`\n]+`")
_STOP = set(
    """the and for are but not you all any can had her was one our out has him his how its may new now old see two
    way who did get got let put say she too use that with have this will your from they been more when what were
    than them then into only some such also could would should there their which about after again before being
    between both does doing down each few further here just most other over same very while where whom why because
    until against below above under once off own itself these those through during having instead still expected
    actual actually happens happen seems like want need needs using used work works working problem issue bug fix
    fixed error errors example examples return returns returned value values self none true false null class def
    import function functions method methods file files code line lines test tests call called calls case cases
    result results output input string number list dict type types raise raises wrong correct instead make makes
    given give gives first last name names data run runs running time way something nothing""".split()
)
_SKIP_EXT = set(
    ".png .jpg .jpeg .gif .ico .pdf .zip .gz .tar .whl .so .pyc .lock .svg .woff .woff2 .ttf .mo .bin .db .sqlite "
    ".jar .class".split()
)
_PROSE = {".md", ".rst", ".txt", ".adoc"}
_OTHER_TEST_DIR = re.compile(r"(^|/)(__tests__|spec)/")
_OTHER_TEST_NAME = re.compile(r"^(.*_tests\.py|.*_test\.go|.*\.(test|spec)\.[jt]sx?)$")
_PY_IMPORT = re.compile(r"^\s*(?:from\s+(\.*[\w.]*)\s+import\s+\(?([\w, \t]*)|import\s+([\w.]+))", re.MULTILINE)
_JS_IMPORT = re.compile(r"""(?:from\s+|require\(\s*|import\s+)['"](\.{1,2}/[^'"]+)['"]""")


@dataclass
class ShownFile:
    path: str
    text: str
    start: int
    """First line shown (1-based)."""
    end: int
    """Last line shown."""
    total: int
    """Lines in the file."""


@dataclass
class Context:
    files: list[str]
    """Every tracked file of the repository."""
    shown: list[ShownFile] = field(default_factory=list)
    scores: dict[str, float] = field(default_factory=dict)


def is_test_path(path: str) -> bool:
    """A Python test suite's files (``diffs.is_test_path``) and, broader than that rule on purpose, other runners'
    names: ``*_tests.py``, ``*_test.go``, ``*.test.js``/``*.spec.ts``, ``__tests__``/``spec`` folders. A wrong guess
    here only changes which files the agent is shown; the guard's rule decides what a patch may change, so it stays
    SWE-bench's."""
    name = PurePosixPath(path).name
    return python_test(path) or bool(_OTHER_TEST_DIR.search(path) or _OTHER_TEST_NAME.match(name))


def keywords(text: str, limit: int = 30) -> dict[str, float]:
    """Identifiers and words of a problem statement, weight 2 where they look like code, most telling first."""
    quoted = {w for span in _BACKTICKS.findall(text) for w in _IDENT.findall(span)}
    weights: dict[str, float] = {}
    for m in _IDENT.finditer(text):
        word = m.group()
        if len(word) < 3 or word.lower() in _STOP:
            continue
        code = (
            "_" in word
            or any(c.isdigit() for c in word)
            or any(c.isupper() for c in word[1:])
            or text[m.end() : m.end() + 1] == "("
            or word in quoted
        )
        weights[word] = max(weights.get(word, 0.0), 2.0 if code else 1.0)
    best = sorted(weights, key=lambda w: (-weights[w], -len(w), w))[:limit]
    return {w: weights[w] for w in best}


def path_score(path: str, text: str, words: dict[str, float]) -> float:
    """How directly the statement names a file: the path, the file name, the module, words of the path."""
    p = PurePosixPath(path)
    score = 0.0
    if path in text:
        score += 10
    elif re.search(rf"(?<![\w/.]){re.escape(p.name)}\b", text):
        score += 6
    if p.suffix == ".py" and ".".join(p.with_suffix("").parts) in text:
        score += 8
    parts = {part.lower() for part in (*p.parent.parts, p.stem)}
    return score + sum(2 * w for word, w in words.items() if word.lower() in parts)


def _grep_script(words: list[str], out: str, per_word: int = 200) -> str:
    # One exec for all words; results go to a file because the exec output is capped.
    defs = "(def|class|func|function|fn|struct|interface|type|const|let|var) +"
    loop = (
        f'for k in {" ".join(words)}; do git grep -I -l -w -F -e "$k" -- . | head -n {per_word} | sed "s|^|C\t$k\t|"; '
        f'git grep -I -l -w -E -e "{defs}$k" -- . | head -n {per_word} | sed "s|^|D\t$k\t|"; done'
    )
    return f"{{ {loop} ; }} > {out} 2>/dev/null; true"


def content_scores(hits: str, words: dict[str, float], n_files: int) -> dict[str, float]:
    """Scores from ``C|D <tab> word <tab> path`` lines: rarer words count more, definitions three times."""
    found: dict[tuple[str, str], set[str]] = {}
    for line in hits.splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and parts[1] in words:
            found.setdefault((parts[0], parts[1]), set()).add(parts[2])
    scores: dict[str, float] = {}
    for (kind, word), paths in found.items():
        idf = math.log(1 + n_files / len(paths))
        for path in paths:
            scores[path] = scores.get(path, 0.0) + words[word] * idf * (3 if kind == "D" else 1)
    return scores


def imported(path: str, text: str, files: set[str]) -> list[str]:
    """Repository files that a Python or JavaScript/TypeScript file imports (resolved against ``files``)."""
    here = PurePosixPath(path).parent
    found: list[str] = []
    for m in _PY_IMPORT.finditer(text):
        module = m.group(1) or m.group(3) or ""
        dots = len(module) - len(module.lstrip("."))
        base = str(here.joinpath(*([".."] * (dots - 1)))) if dots else ""
        names = [module.lstrip(".")] + [f"{module.lstrip('.')}.{n.strip()}" for n in (m.group(2) or "").split(",")]
        for name in names:
            rel = "/".join(x for x in (base, name.strip(".").replace(".", "/")) if x and x != ".")
            for cand in (f"{rel}.py", f"{rel}/__init__.py"):
                cand = posixpath.normpath(cand)
                found += [f for f in files if f == cand or (not dots and f.endswith("/" + cand))][:1]
    for m in _JS_IMPORT.finditer(text):
        rel = posixpath.normpath(PurePosixPath(here, m.group(1)).as_posix())
        for cand in (rel, *(f"{rel}{ext}" for ext in (".js", ".ts", ".jsx", ".tsx", "/index.js", "/index.ts"))):
            if cand in files:
                found.append(cand)
                break
    return [f for f in dict.fromkeys(found) if f != path]


def window(lines: list[str], words: dict[str, float], size: int) -> tuple[int, int]:
    """The ``size`` consecutive lines (0-based start, end) holding the most keyword matches."""
    if len(lines) <= size:
        return 0, len(lines)
    hits = [sum(w for word, w in words.items() if word in line) for line in lines]
    best, start, current = sum(hits[:size]), 0, sum(hits[:size])
    for i in range(1, len(lines) - size + 1):
        current += hits[i + size - 1] - hits[i - 1]
        if current > best:
            best, start = current, i
    # Centre the matches: a definition's body follows the line that names it.
    inside = [i for i in range(start, start + size) if hits[i]]
    if inside:
        start = min(max(0, (inside[0] + inside[-1]) // 2 - size // 2), len(lines) - size)
    return start, start + size


def read_text(sandbox: Sandbox, path: str) -> str | None:
    """A repository file's text; None where a listed path cannot be read as a file (deleted, a submodule)."""
    try:
        return sandbox.read_file(path).decode("utf-8", "replace")
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
        return None


def localise(sandbox: Sandbox, problem: str, config: AgentConfig, timeout: float = 60.0) -> Context:
    """Rank the repository's files against the problem statement and cut the best ones down to the line budget."""
    # Listings go through files in the sandbox because an exec's output is capped; unique names per call.
    tmp = f"/tmp/.agentbon-localise-{uuid.uuid4().hex[:12]}"
    try:
        sandbox.exec(f"git -c core.quotepath=off ls-files > {tmp}.files", timeout=timeout)
        files = [f for f in (read_text(sandbox, f"{tmp}.files") or "").splitlines() if f]
        words = keywords(problem)
        hits = ""
        if words:
            sandbox.exec(_grep_script(list(words), f"{tmp}.grep"), timeout=timeout)
            hits = read_text(sandbox, f"{tmp}.grep") or ""
    finally:
        sandbox.exec(f"rm -f {tmp}.files {tmp}.grep", timeout=timeout)
    candidates = {
        f
        for f in files
        if PurePosixPath(f).suffix.lower() not in _SKIP_EXT and (not is_test_path(f) or path_score(f, problem, {}) > 0)
    }
    scores = {f: path_score(f, problem, words) for f in candidates}
    for path, score in content_scores(hits, words, len(files)).items():
        if path in scores:
            scores[path] += score
    for path in scores:  # prose repeats the words of an issue but is rarely where the fix goes
        if PurePosixPath(path).suffix.lower() in _PROSE and path_score(path, problem, {}) == 0:
            scores[path] *= 0.3

    def ranked() -> list[str]:
        return sorted((f for f in scores if scores[f] > 0), key=lambda f: (-scores[f], f.count("/"), f))

    texts: dict[str, str | None] = {}
    for path in ranked()[: config.max_context_files]:
        texts[path] = read_text(sandbox, path)
        if texts[path] is None:
            scores[path] = 0.0
            continue
        for dep in imported(path, texts[path] or "", candidates):
            scores[dep] += 0.4 * scores[path]
    chosen = ranked()[: config.max_context_files]
    if not chosen:  # nothing points anywhere: show the shallowest source files
        chosen = sorted(candidates, key=lambda f: (f.count("/"), f))[: config.max_context_files]
    context = Context(files=files, scores={f: round(scores.get(f, 0.0), 3) for f in chosen})
    budget = config.context_lines
    for path in chosen:
        text = texts[path] if path in texts else read_text(sandbox, path)
        if text is None:
            continue
        lines = text.split("\n")
        if text.endswith("\n"):
            lines.pop()
        size = min(config.max_file_lines, budget, len(lines))
        if size < min(20, len(lines)):
            break
        start, end = window(lines, words, size)
        context.shown.append(ShownFile(path, "\n".join(lines[start:end]), start + 1, end, len(lines)))
        budget -= size
    return context


def tree(files: list[str], shown: list[str], limit: int = 100) -> str:
    """The repository's file list; past ``limit`` files, top-level directories with counts plus the shown ones'."""
    if len(files) <= limit:
        return "\n".join(files)
    dirs = {str(PurePosixPath(s).parent) for s in shown}
    near = [f for f in files if str(PurePosixPath(f).parent) in dirs][:limit]
    counts: dict[str, int] = {}
    for f in files:
        top = f.split("/", 1)[0] + ("/" if "/" in f else "")
        counts[top] = counts.get(top, 0) + 1
    summary = [f"{top} ({n} files)" if top.endswith("/") else top for top, n in sorted(counts.items())]
    return "\n".join(summary) + "\n\nFiles beside the ones shown:\n" + "\n".join(near)
