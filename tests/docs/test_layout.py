"""The source tree against docs/architecture.md: the stages' table ("Overview": each folder and
what it may depend on) and analysis's folders ("Analysis", lowest first). A file that includes
from a folder its stage may not depend on, an analysis file that includes from a folder below
its own, two sources of one name in two folders, or a source of storage/ or analysis/ over 700
lines fail here, naming the file."""

import os
import pathlib
import re
import unittest

SOURCE_DIR = pathlib.Path(os.environ.get("VRAMTRACE_SOURCE_DIR",
                                         pathlib.Path(__file__).resolve().parents[2]))
SOURCE_SUFFIXES = (".h", ".hpp", ".c", ".cc", ".cpp")
# Where a file past this many lines holds more than one idea, and is split.
MAX_LINES = {"storage": 700, "analysis": 700}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def table_after(text, heading, first_cell):
    """The rows (lists of cells) of the first Markdown table under `heading` whose header row
    starts with `first_cell`."""
    start = text.index(heading + "\n") + len(heading) + 1
    rows, in_table = [], False
    for line in text[start:].splitlines():
        if line.startswith("## "):
            break  # the next section
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not in_table:
                in_table = cells[0] == first_cell
                continue
            if set(cells[0]) <= set("-: "):
                continue
            rows.append(cells)
        elif in_table:
            break
    if not rows:
        raise AssertionError(f"docs/architecture.md: no table under {heading!r} "
                             f"starting with {first_cell!r}")
    return rows


def folders_in(cell):
    return [f.rstrip("/") for f in re.findall(r"`([a-z_]+)/`", cell)]


def stage_rules(architecture):
    """folder -> the folders it may include from (its own stage's included), closed over what
    those may depend on."""
    rows = table_after(architecture, "## Overview", "folder")
    stages = [(folders_in(row[0]), row[2]) for row in rows]
    known = {f for folders, _ in stages for f in folders}
    direct = {}
    for folders, depends in stages:
        named = {w for w in re.findall(r"[a-z_]+", depends) if w in known}
        for f in folders:
            direct[f] = named | set(folders)
    allowed = {}
    for f in direct:
        seen, todo = set(), [f]
        while todo:
            g = todo.pop()
            if g in seen:
                continue
            seen.add(g)
            todo.extend(direct.get(g, ()))
        allowed[f] = seen
    return allowed


def analysis_order(architecture):
    rows = table_after(architecture, "## Analysis", "folder")
    return [folders_in(row[0])[0] for row in rows]


def sources(folder):
    root = SOURCE_DIR / folder
    for path in sorted(root.rglob("*")):
        if path.suffix in SOURCE_SUFFIXES and path.is_file():
            yield path


def line_of(text, offset):
    return text.count("\n", 0, offset) + 1


def include_violations(architecture, find_source=None):
    """Lines that include from a folder the including file's stage may not depend on."""
    allowed = stage_rules(architecture)
    by_name = {}
    for folder in allowed:
        for path in sources(folder):
            by_name.setdefault(path.name, set()).add(folder)
    problems = []
    for folder, may in sorted(allowed.items()):
        for path in sources(folder):
            text = path.read_text(errors="replace")
            for match in INCLUDE.finditer(text):
                name = match.group(1)
                top = name.split("/", 1)[0]
                if "/" in name and top in allowed:
                    owners = {top}
                elif (path.parent / name).exists():
                    continue
                else:
                    # A bare name found through an include directory: whose file it is.
                    owners = by_name.get(pathlib.PurePath(name).name, set())
                bad = owners - may
                if owners and bad == owners:
                    problems.append(f"{path.relative_to(SOURCE_DIR)}:{line_of(text, match.start())}"
                                    f": includes {name} from {', '.join(sorted(bad))}/, which "
                                    f"{folder}/ may not depend on")
    return problems


def analysis_violations(architecture):
    order = analysis_order(architecture)
    rank = {g: i for i, g in enumerate(order)}
    problems = []
    for path in sources("analysis"):
        relative = path.relative_to(SOURCE_DIR / "analysis")
        if len(relative.parts) < 2:
            problems.append(f"analysis/{relative}: not in one of analysis's folders ({', '.join(order)})")
            continue
        own = relative.parts[0]
        if own not in rank:
            problems.append(f"analysis/{relative}: analysis/{own}/ is not in the table")
            continue
        text = path.read_text(errors="replace")
        for match in INCLUDE.finditer(text):
            parts = match.group(1).split("/")
            if parts[0] != "analysis" or len(parts) < 3:
                continue
            if parts[1] not in rank or rank[parts[1]] > rank[own]:
                problems.append(f"analysis/{relative}:{line_of(text, match.start())}: includes "
                                f"{match.group(1)}, below analysis/{own}/")
    return problems


def same_names(architecture):
    """Sources of one name in two folders (entry points excepted)."""
    seen = {}
    for folder in stage_rules(architecture):
        for path in sources(folder):
            if path.name == "main.cpp" or "protos" in path.parts:
                continue
            seen.setdefault(path.name, []).append(str(path.relative_to(SOURCE_DIR)))
    return [" and ".join(paths) for paths in seen.values() if len(paths) > 1]


class LayoutTest(unittest.TestCase):
    def setUp(self):
        self.architecture = (SOURCE_DIR / "docs" / "architecture.md").read_text()

    def test_stages_include_only_what_they_may_depend_on(self):
        self.assertEqual(include_violations(self.architecture), [])

    def test_collector_links_no_analysis(self):
        cmake = (SOURCE_DIR / "collector" / "CMakeLists.txt").read_text()
        self.assertNotIn("vramtrace_analysis", cmake)

    def test_analysis_folders_include_only_lower_ones(self):
        self.assertEqual(analysis_violations(self.architecture), [])

    def test_no_two_sources_of_one_name(self):
        self.assertEqual(same_names(self.architecture), [])

    def test_no_long_sources(self):
        long = []
        for folder, limit in MAX_LINES.items():
            for path in sources(folder):
                lines = path.read_text(errors="replace").count("\n")
                if lines > limit:
                    long.append(f"{path.relative_to(SOURCE_DIR)}: {lines} lines (at most {limit})")
        self.assertEqual(long, [])

    def test_the_rules_are_read_from_the_document(self):
        # The table as the document has it: these would be wrong answers if it were misread.
        allowed = stage_rules(self.architecture)
        self.assertIn("storage", allowed["collector"])
        self.assertNotIn("analysis", allowed["collector"])
        self.assertNotIn("cli", allowed["analysis"])
        self.assertIn("storage", allowed["cli"])  # through analysis
        self.assertEqual(analysis_order(self.architecture)[0], "values")

    def test_a_stage_reaching_up_is_caught(self):
        # The same checks on a document that forbids what the tree does: storage may not use
        # SQLite's neighbours, and collector may not use storage.
        stricter = self.architecture.replace(
            "rows handed to storage | proto, storage, text |", "rows handed to storage | proto |")
        self.assertNotEqual(stricter, self.architecture, "the collector's row changed wording")
        problems = include_violations(stricter)
        self.assertTrue(any(p.startswith("collector/") and "storage/" in p for p in problems),
                        problems[:5])

    def test_analysis_reaching_down_is_caught(self):
        # gate/ made the lowest folder and values/ the highest: the gate's includes of the
        # reports now reach down.
        swapped = (self.architecture.replace("| `values/` |", "| `SWAP/` |", 1)
                   .replace("| `gate/` |", "| `values/` |", 1).replace("| `SWAP/` |", "| `gate/` |", 1))
        problems = analysis_violations(swapped)
        self.assertTrue(any(p.startswith("analysis/gate/") and "analysis/reports/" in p
                            for p in problems), problems[:5])

if __name__ == "__main__":
    unittest.main()
