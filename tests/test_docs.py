"""The code's references to the project's documents stay inside the repository and resolve: every
`docs/<page>.md#<anchor>` named in the code, tests, benchmarks or README is a page of docs/ with that
heading, links between the pages resolve, and the index lists every page. Design notes kept outside the
repository (a user's clone has none) may not be referred to at all. And the tables of facts the pages
state — term counts, presets, commands — are what the code has."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SCANNED = ("engine", "gui", "tests", "benchmarks", "resources")
TEXT_SUFFIXES = (".py", ".md", ".toml", ".txt")

# "DESIGN.md", "FORMS §7", "STYLE: ..." and the like: the names of the notes outside the repository
OUTSIDE = re.compile(r"\b(?:DESIGN|FORMS|STYLE)(?:\.md\b|\s*§|:)")
DOCS_REF = re.compile(r"docs/([\w.-]+\.md)(?:#([\w-]+))?")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def scanned_files() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "pyproject.toml"]
    for top in SCANNED:
        files += [p for p in sorted((ROOT / top).rglob("*"))
                  if p.suffix in TEXT_SUFFIXES and p.is_file() and "__pycache__" not in p.parts]
    return [p for p in files if p.resolve() != Path(__file__).resolve()]


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of a Markdown page's headings (outside code blocks), repeated ones numbered."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if fenced or not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def section(page: str, heading: str) -> str:
    """The text of a page's `## heading` section, up to the next section."""
    text = (DOCS / page).read_text(encoding="utf-8")
    return text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def references(pattern: re.Pattern, files) -> list[tuple[str, re.Match]]:
    """(file:line, match) for every match of `pattern` in the files."""
    out = []
    for path in files:
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            out += [(f"{path.relative_to(ROOT)}:{i}", m) for m in pattern.finditer(line)]
    return out


def test_no_file_refers_to_a_document_outside_the_repository():
    bad = [f"{where}: {m.group(0)!r}" for where, m in references(OUTSIDE, scanned_files())]
    assert not bad, "point these at docs/ instead:\n" + "\n".join(bad)


def test_every_docs_reference_names_a_page_and_heading_that_exist():
    refs = references(DOCS_REF, scanned_files())
    assert refs, "the code refers to docs/ somewhere; finding none means the pattern is wrong"
    bad = []
    for where, m in refs:
        page, anchor = DOCS / m.group(1), m.group(2)
        if not page.is_file():
            bad.append(f"{where}: no page docs/{m.group(1)}")
        elif anchor and anchor not in anchors(page):
            bad.append(f"{where}: docs/{m.group(1)} has no heading #{anchor}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("page", sorted(DOCS.glob("*.md")), ids=lambda p: p.name)
def test_links_of_a_docs_page_resolve(page):
    text = page.read_text(encoding="utf-8")
    bad = []
    for m in LINK.finditer(text):  # on the whole text: a link's words may wrap onto the next line
        where = f"docs/{page.name}:{text.count(chr(10), 0, m.start()) + 1}"
        target = m.group(1)
        if re.match(r"[a-z]+:", target):  # a web address: not ours to check offline
            continue
        file, _, anchor = target.partition("#")
        dest = (page.parent / file).resolve() if file else page
        if not dest.is_file():
            bad.append(f"{where}: {target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(f"{where}: {target} (no such heading)")
    assert not bad, "\n".join(bad)


def test_the_index_lists_every_page():
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    linked = {m.group(1).partition("#")[0] for m in LINK.finditer(index)}
    missing = [p.name for p in sorted(DOCS.glob("*.md")) if p.name != "README.md" and p.name not in linked]
    assert not missing, f"docs/README.md does not list {missing}"


# the rows of docs/forms.md#term-counts, by the command-line option that names their variant
CHAIN_OPTIONS = {"": {}, "--residual": {"residual": True}, "--heads 2": {"heads": 2},
                 "--layer-norm": {"layer_norm": True}, "--cross-entropy": {"cross_entropy": True},
                 "--causal": {"causal": True}}


def test_the_term_count_table_is_what_the_engine_counts():
    from engine.forms.chain import encoder
    from engine.forms.derive import Forms

    rows = {}
    for line in section("forms.md", "Term counts").splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 8 and cells[1].isdigit():
            option = re.search(r"`(--[^`]+)`", cells[0])
            rows[option.group(1) if option else ""] = [int(c) for c in cells[1:7]]
    assert set(rows) == set(CHAIN_OPTIONS)
    for option, counts in rows.items():
        got = [Forms(encoder(L, **CHAIN_OPTIONS[option])).count() for L in range(1, 7)]
        assert got == counts, f"forms --chain L {option}: the engine counts {got}"


def test_the_presets_term_counts_are_what_the_engine_counts():
    from engine.forms import gpt
    from engine.configs.presets import load_preset

    rows = re.findall(r"^\| `([\w-]+)` \| ([\d,]+) \|$", section("forms.md", "Term counts"), re.MULTILINE)
    assert rows
    for name, count in rows:
        assert gpt.derive(load_preset(name).model).count() == int(count.replace(",", "")), name


def test_the_command_line_page_lists_every_preset_and_command():
    from engine.cli import build_parser
    from engine.configs.presets import preset_names

    presets = section("command-line.md", "Presets")
    assert set(re.findall(r"^\| `([\w-]+)` \|", presets, re.MULTILINE)) == set(preset_names())
    commands = section("command-line.md", "Commands")
    subparsers = next(a for a in build_parser()._actions if a.dest == "command")
    for name in subparsers.choices:
        listed = re.search(rf"^\| [^|]*`(gpt-explorer )?{name}\b", commands, re.MULTILINE)
        assert listed, f"the command {name} is not in docs/command-line.md#commands"


def test_slug_follows_githubs_rules():
    assert slug("One description, three uses") == "one-description-three-uses"
    assert slug("Opening other people's runs") == "opening-other-peoples-runs"
    assert slug("The `aa` operator") == "the-aa-operator"
