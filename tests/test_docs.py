"""The docs describe the code as it is.

- No text of README.md, docs/, oocgbdt/ or examples/ (.py and .md files) speaks of the work that
  made it: sessions, issue numbers, dates, "before/after this change".
- docs/architecture.md is a map: at most 300 lines, naming every module of the package, and every
  path it names exists.
- Every path and benchmark command that README.md and docs/ name exists, and every decision page
  is listed by docs/architecture.md and has its three parts.
"""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ARCHITECTURE = ROOT / "docs" / "architecture.md"
DECISIONS = ROOT / "docs" / "decisions"

#: Wording about the history of the work rather than the software (case-insensitive).
HISTORY = [
    (re.compile(r"\bsessions?\s+\d+", re.I), "a numbered session"),
    (re.compile(r"\bsessions?\b", re.I), "the word session"),
    (re.compile(r"\(issues?\s+#?\d+", re.I), "an issue number"),
    (re.compile(r"\bissues?\s+#?\d+", re.I), "an issue number"),
    (re.compile(r"\bround\s+\d+\s+of\s+(the\s+)?work\b", re.I), "a round of work"),
    (re.compile(r"\b(before|after|until|since)\s+(this|that)\s+(change|work|fix|session)\b", re.I),
     "before/after a change"),
    (re.compile(r"\b20\d\d-\d\d-\d\d\b"), "a date"),
]
#: A date on a line that cites a 40-hex commit of another project is the provenance of shipped
#: third-party data (oocgbdt/datasets/README.md), not the history of this project.
PROVENANCE = re.compile(r"\b[0-9a-f]{40}\b")


def history_hits(text: str) -> list:
    """``(line number, what, line)`` for every line of ``text`` that speaks of the work."""
    hits = []
    for n, line in enumerate(text.splitlines(), 1):
        for pattern, what in HISTORY:
            if pattern.search(line):
                if what == "a date" and PROVENANCE.search(line):
                    continue
                hits.append((n, what, line.strip()))
                break
    return hits


def _scanned_files(root: Path) -> list:
    files = [root / "README.md"] if (root / "README.md").is_file() else []
    for folder, suffixes in (("docs", (".md",)), ("oocgbdt", (".py", ".md")),
                             ("examples", (".py", ".md"))):
        if (root / folder).is_dir():
            files += sorted(p for p in (root / folder).rglob("*")
                            if p.is_file() and p.suffix in suffixes and "__pycache__" not in p.parts)
    return files


def history_report(root: Path) -> list:
    """``file:line: what: line`` for every hit under ``root``."""
    out = []
    for path in _scanned_files(root):
        for n, what, line in history_hits(path.read_text(encoding="utf-8")):
            out.append(f"{path.relative_to(root)}:{n}: {what}: {line}")
    return out


@pytest.mark.parametrize("text", [
    "measured in session 9 on a quiet machine",
    "Sessions 9 and 10 measured it",
    "a helper's repro of the session's bug",
    "the decision on issue 6's speed target",
    "Exclusive Feature Bundling (issue 3)",
    "see issue #12",
    "round 2 of the work made it faster",
    "before this change it took 2 s",
    "measured on 2026-01-05",
])
def test_the_history_check_flags_history(text):
    assert history_hits("a fine line\n" + text), text


@pytest.mark.parametrize("text", [
    "the boosting round 3 of 100 took 2 s",
    "possession of the data; a sessionless client",
    "the issue with float32 thresholds",
    "version 2 of the dataset layout",
    "0.91287 test AUC at 2 workers, 1M x 100",
    "commit 253138e2aa4098734fb9154ec3570fbcad5f4197 (2020-05-20, the last commit before LFS)",
])
def test_the_history_check_passes_plain_text(text):
    assert not history_hits(text), text


def test_the_history_report_names_file_and_line(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("ok\nok\nmeasured in session 4\n")
    (tmp_path / "oocgbdt").mkdir()
    (tmp_path / "oocgbdt" / "m.py").write_text('"""Fine."""\n# see issue #3\n')
    (tmp_path / "oocgbdt" / "data.bin").write_text("session 1")  # not a text file we scan
    assert history_report(tmp_path) == [
        "docs/a.md:3: a numbered session: measured in session 4",
        "oocgbdt/m.py:2: an issue number: # see issue #3",
    ]


def test_no_text_speaks_of_the_work_that_made_it():
    hits = history_report(ROOT)
    assert not hits, "text about the history of the work, not the software:\n" + "\n".join(hits)


def test_architecture_is_a_map_of_at_most_300_lines():
    n = len(ARCHITECTURE.read_text(encoding="utf-8").splitlines())
    assert n <= 300, f"docs/architecture.md has {n} lines; keep it a map (at most 300)"


def _package_modules() -> list:
    return sorted(str(p.relative_to(ROOT)) for p in (ROOT / "oocgbdt").rglob("*.py")
                  if p.name != "__init__.py" and "__pycache__" not in p.parts)


_PATH = re.compile(r"(?<![\w./-])((?:oocgbdt|tests|examples|benchmarks|docs)/[\w./-]*[\w/])")


def named_paths(text: str) -> set:
    """Repository paths (``oocgbdt/...``, ``tests/...``, ``examples/...``, ``benchmarks/...``,
    ``docs/...``) that ``text`` names."""
    return {m.rstrip("/") for m in _PATH.findall(text)}


def test_named_paths_are_found_in_text():
    text = ("see `oocgbdt/runtime/shard.py`, oocgbdt/core/ and (docs/decisions/x.md); "
            "not my.oocgbdt/thing or `oocgbdt.core.partition`.")
    assert named_paths(text) == {"oocgbdt/runtime/shard.py", "oocgbdt/core",
                                 "docs/decisions/x.md"}


def test_architecture_names_every_module_of_the_package():
    names = named_paths(ARCHITECTURE.read_text(encoding="utf-8"))
    missing = [m for m in _package_modules() if m not in names]
    assert not missing, "modules docs/architecture.md does not name:\n" + "\n".join(missing)


def _doc_files() -> list:
    return [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))


def test_every_path_the_docs_name_exists():
    missing = []
    for doc in _doc_files():
        text = doc.read_text(encoding="utf-8")
        for p in sorted(named_paths(text)):
            if p.startswith("benchmarks/results"):
                continue  # the benchmark suite's output folder, made when it runs
            if not (ROOT / p).exists():
                missing.append(f"{doc.relative_to(ROOT)} names {p}")
    assert not missing, "\n".join(missing)


def test_every_benchmark_command_the_docs_give_exists():
    missing = []
    for doc in _doc_files():
        for mod in sorted(set(re.findall(r"python -m benchmarks\.(\w+)", doc.read_text()))):
            if not (ROOT / "benchmarks" / f"{mod}.py").is_file():
                missing.append(f"{doc.relative_to(ROOT)}: python -m benchmarks.{mod}")
    assert not missing, "\n".join(missing)


def test_every_decision_page_is_listed_and_complete():
    pages = sorted(DECISIONS.glob("*.md"))
    assert pages, "docs/decisions/ holds no page"
    listed = {p for p in named_paths(ARCHITECTURE.read_text(encoding="utf-8"))
              if p.startswith("docs/decisions/")}
    problems = [f"{p.relative_to(ROOT)} is not listed in docs/architecture.md"
                for p in pages if str(p.relative_to(ROOT)) not in listed]
    for p in pages:
        text = p.read_text(encoding="utf-8")
        if not text.startswith("# "):
            problems.append(f"{p.relative_to(ROOT)}: no title")
        for part in ("## Context", "## Decision", "## Measured"):
            if part not in text:
                problems.append(f"{p.relative_to(ROOT)}: no '{part}' section")
    assert not problems, "\n".join(problems)


def test_decision_pages_link_only_to_pages_that_exist():
    missing = []
    for p in sorted(DECISIONS.glob("*.md")):
        for link in sorted(set(re.findall(r"`([\w-]+\.md)`", p.read_text(encoding="utf-8")))):
            if not (DECISIONS / link).is_file() and not (ROOT / link).is_file():
                missing.append(f"{p.relative_to(ROOT)} links {link}")
    assert not missing, "\n".join(missing)
