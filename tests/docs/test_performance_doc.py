"""docs/performance.md stays reference, not a diary.

The page gives each benchmark's method, command, target and latest number; the history of every
number is a row in bench/results/*.csv. These checks keep it so:

- Length: at most MAX_LINES lines.
- "Targets at a glance": a table whose header is `| target | latest | met |`, and every row of it
  has exactly those 3 cells.
- A "latest" cell holds one latest figure: it names a number; it has no ";" (the separator of a
  second series: "0.82 and 0.86; busy 1.02"); no history word (HISTORY_WORDS: "before",
  "earlier", "older", "previously", "was", "used to", ...); at most one machine (EPYC, Xeon,
  Xeon 2.0 GHz, H100, H200: a second machine is a second series); at most MAX_LATEST_CHARS
  characters. Several numbers of one run are fine ("Xeon: 0.21-0.24, 0.02-0.04 s").
- A "met" cell starts with "yes" or "no" (bold allowed): a target not met says so plainly.
- A "target" cell links its section, `[Title](#anchor)`; the anchor must be a heading of the page
  (GitHub's anchors), and every figure of the row's "latest" cell must appear in that section, so
  that the table and the section give the same latest number.
- Every "##" or "###" section except NON_BENCHMARK_SECTIONS is a benchmark and names its command:
  a line of a code block (indented by 4 spaces, or fenced) with a path under bench/, build/ or
  samples/; each bench/ or samples/ path named in those lines exists in the source tree.
- No diary markers anywhere: "this session", "issue #N", a date (YYYY-MM-DD) that is not part of a
  path.

The checks are functions of the page's text, so that the test cases below can show that they
reject what the page looked like as a diary. VRAMTRACE_SOURCE_DIR names the source tree (CTest
sets it); without it, the tree this file is in.
"""

import os
import re
import unittest

MAX_LINES = 300
MAX_LATEST_CHARS = 80
TARGETS_TITLE = "Targets at a glance"
TARGETS_HEADER = ["target", "latest", "met"]
NON_BENCHMARK_SECTIONS = {"Where the numbers come from", TARGETS_TITLE, "Not measured yet"}
HISTORY_WORDS = ("before", "earlier", "older", "previously", "previous", "was", "were",
                 "used to", "formerly", "no longer")
MACHINES = re.compile(r"Xeon 2\.0 GHz|Xeon|EPYC|H100|H200")
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
LINK = re.compile(r"\[([^\]]+)\]\(#([^)\s]+)\)")
COMMAND_PATH = re.compile(r"(?<![\w./-])((?:bench|build|samples)/[\w./-]*)")
DIARY = [
    (re.compile(r"\bthis session\b", re.IGNORECASE), 'says "this session"'),
    (re.compile(r"\bissue #\d+", re.IGNORECASE), "names an issue"),
    (re.compile(r"(?<![/\w-])(?:19|20)\d\d-\d\d-\d\d\b"), "gives a date"),
]


def source_dir():
    return os.environ.get("VRAMTRACE_SOURCE_DIR") or os.path.dirname(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def read_page():
    with open(os.path.join(source_dir(), "docs", "performance.md"), encoding="utf-8") as f:
        return f.read()


def line_count(text):
    return len(text.splitlines())


def heading_anchor(title):
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


def sections(text):
    """The "##" and "###" sections, in order: (title, lines of the body)."""
    found = []
    for line in text.splitlines():
        match = re.match(r"(#{2,3}) (.+?)\s*$", line)
        if match:
            found.append((match.group(2), []))
        elif found:
            found[-1][1].append(line)
    return found


def split_row(line):
    """The cells of a table row; a `\\|` inside a cell is not a separator."""
    inner = line.strip()
    if inner.startswith("|"):
        inner = inner[1:]
    if inner.endswith("|") and not inner.endswith("\\|"):
        inner = inner[:-1]
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", inner)]


def targets_table(text):
    """The rows (lists of cells) of the targets table, or None when there is no such table."""
    for title, body in sections(text):
        if title != TARGETS_TITLE:
            continue
        table = []
        for line in body:
            if line.startswith("|"):
                table.append(line)
            elif table:
                break
        if len(table) < 2 or [c.lower() for c in split_row(table[0])] != TARGETS_HEADER:
            return None
        return [split_row(line) for line in table[2:]]
    return None


def figures(cell):
    """The numbers of a cell, leaving out machine names and code spans."""
    cell = MACHINES.sub(" ", re.sub(r"`[^`]*`", " ", cell))
    return NUMBER.findall(cell)


def latest_cell_problems(cell):
    problems = []
    if not figures(cell):
        problems.append("names no figure")
    if ";" in cell:
        problems.append('holds more than one series (";")')
    for word in HISTORY_WORDS:
        if re.search(r"\b" + word + r"\b", cell, re.IGNORECASE):
            problems.append('tells history ("%s")' % word)
    machines = MACHINES.findall(cell)
    if len(machines) > 1:
        problems.append("names %d machines: %s" % (len(machines), ", ".join(machines)))
    if len(cell) > MAX_LATEST_CHARS:
        problems.append("is %d characters long, more than %d" % (len(cell), MAX_LATEST_CHARS))
    return problems


def met_cell_problems(cell):
    if re.match(r"(yes|no)\b", cell.replace("*", "").strip(), re.IGNORECASE):
        return []
    return ['does not start with "yes" or "no"']


def code_lines(body):
    """The lines of a section's code blocks: fenced, or indented by 4 spaces after a blank line."""
    lines, fenced, indented, previous_blank = [], False, False, True
    for line in body:
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            lines.append(line)
            continue
        indented = line.startswith("    ") and (indented or previous_blank)
        if indented:
            lines.append(line)
        previous_blank = not line.strip()
    return lines


def section_problems(text, root=None):
    """(section, problem) for each benchmark section without a command or with a missing path."""
    problems = []
    for title, body in sections(text):
        if title in NON_BENCHMARK_SECTIONS:
            continue
        paths = [path for line in code_lines(body) for path in COMMAND_PATH.findall(line)]
        if not paths:
            problems.append((title, "names no command (a code line with bench/, build/ or samples/)"))
        for path in paths:
            if root and not path.startswith("build/") and not os.path.exists(
                    os.path.join(root, path.rstrip("/"))):
                problems.append((title, "names %s, which is not in the source tree" % path))
    return problems


def table_problems(text):
    """Every problem of the targets table, as strings; empty when it is as it should be."""
    rows = targets_table(text)
    if rows is None:
        return ['no "%s" table with the header | target | latest | met |' % TARGETS_TITLE]
    if not rows:
        return ["the targets table has no rows"]
    by_anchor = {heading_anchor(title): (title, body) for title, body in sections(text)}
    problems = []
    for number, cells in enumerate(rows, 1):
        where = "targets row %d" % number
        if len(cells) != 3:
            problems.append("%s has %d cells, not 3: %s" % (where, len(cells), " | ".join(cells)))
            continue
        target, latest, met = cells
        problems += ["%s: latest %s: %r" % (where, p, latest) for p in latest_cell_problems(latest)]
        problems += ["%s: met %s: %r" % (where, p, met) for p in met_cell_problems(met)]
        links = LINK.findall(target)
        if len(links) != 1:
            problems.append("%s: the target links %d sections, not 1" % (where, len(links)))
            continue
        anchor = links[0][1]
        if anchor not in by_anchor:
            problems.append("%s: no section has the anchor #%s" % (where, anchor))
            continue
        title, body = by_anchor[anchor]
        if title in NON_BENCHMARK_SECTIONS:
            problems.append("%s: links %s, which is not a benchmark" % (where, title))
        section_figures = set(figures("\n".join(body)))
        missing = [f for f in figures(latest) if f not in section_figures]
        if missing:
            problems.append("%s: section %r does not give the latest figure(s) %s"
                            % (where, title, ", ".join(missing)))
    return problems


def diary_problems(text):
    problems = []
    for number, line in enumerate(text.splitlines(), 1):
        for pattern, what in DIARY:
            if pattern.search(line):
                problems.append("line %d %s: %s" % (number, what, line.strip()))
    return problems


# Two rows of the targets table as it was while the page was a diary (its git history has the
# rest): the checks must reject each of them.
DIARY_ROWS = [
    "| collector ingest at least 2 M events/s, as `run` records (the reports' indexes and rollups "
    "kept up, short lives packed) | EPYC: 9.65 M/s with the writer's own thread (median of ten "
    "runs); 9.1-9.2 M/s before (5.8 without it); 8.4 (5.5) before the ring's records were "
    "shortened; earlier 5.5-7.0 M/s with the writer's own thread (4.2-4.4 without it); Xeon: "
    "4.91 M/s before the hot records were decoded by hand; before packing 1.36-1.53 | yes |",
    "| storm: finishing at most 0.25 s per million allocations, the trace indexed | EPYC, latest: "
    "0.106-0.123 s in five runs (the program no longer waits in its loop, so more is left at its "
    "exit), busy 0.131-0.199 s; before 0.092-0.100 s, busy 0.240 s; 0.070-0.071 s before the "
    "records were shortened (0.086 with 16 KiB pages alone, 0.101-0.102 before), busy 0.121 s "
    "(0.203-0.219 with older builds); Xeon: 0.104 s idle, 0.258 s busy; Xeon 2.0 GHz: "
    "0.096-0.294 s idle, 0.079 s busy | yes on the EPYC, idle and busy; busy **no** (by 3%) on "
    "the Xeon (older build); idle **no** in one of three runs on the Xeon 2.0 GHz |",
]

# A page that passes every check; the cases below break it one way at a time.
GOOD_PAGE = """# Performance

## Where the numbers come from
The EPYC, on the simulated GPU.

## Targets at a glance
| target | latest | met |
|---|---|---|
| [The shim's record path](#the-shims-record-path): at most 1 µs | 111-117 ns, medians of 3 | yes |
| [Overhead](#overhead-per-event): at most half of heaptrack's | 0.95 times, best of 3 | **no** |

## The shim's record path
**Measures** the path.

    build/release/bin/vramtrace_shim_bench --benchmark_repetitions=3

**Latest**: 111-117 ns, medians of 3.

## Overhead per event
**Measures** heaptrack against vramtrace.

    RUNS=3 bench/vs-heaptrack.sh build/release 200000 16

**Latest**: 0.95 times, best of 3.

## Not measured yet
- A real GPU.
"""


class PerformancePage(unittest.TestCase):
    """docs/performance.md itself."""

    @classmethod
    def setUpClass(cls):
        cls.text = read_page()

    def test_is_at_most_300_lines(self):
        self.assertLessEqual(line_count(self.text), MAX_LINES,
                             "docs/performance.md is reference: move history to bench/results/")

    def test_targets_table_gives_one_latest_figure_per_target_and_links_its_section(self):
        self.assertEqual([], table_problems(self.text))

    def test_every_benchmark_section_names_its_command(self):
        self.assertEqual([], section_problems(self.text, source_dir()))

    def test_tells_no_diary(self):
        self.assertEqual([], diary_problems(self.text))


class Checks(unittest.TestCase):
    """The checks themselves: they pass a good page and reject each way a page goes wrong."""

    def test_a_good_page_passes(self):
        self.assertEqual([], table_problems(GOOD_PAGE))
        self.assertEqual([], section_problems(GOOD_PAGE))
        self.assertEqual([], diary_problems(GOOD_PAGE))

    def test_rejects_the_diary_rows(self):
        for row in DIARY_ROWS:
            cells = split_row(row)
            self.assertEqual(3, len(cells))
            self.assertNotEqual([], latest_cell_problems(cells[1]), row)
            page = GOOD_PAGE.replace("|---|---|---|\n", "|---|---|---|\n" + row + "\n")
            self.assertNotEqual([], table_problems(page), row)

    def test_rejects_each_kind_of_latest_cell_that_tells_history(self):
        for cell in ["9.65 M/s; 9.1-9.2 before", "0.95, earlier 1.06", "0.75 (was 1.06)",
                     "EPYC: 0.84, Xeon: 1.09", "3.1 times (older builds: 2.8)", "met", "",
                     "0.1 " * 30]:
            self.assertNotEqual([], latest_cell_problems(cell), cell)

    def test_accepts_one_series_of_one_run(self):
        for cell in ["37.6 bytes", "Xeon: 0.21-0.24, 0.02-0.04, 0.14-0.21, 0.10-0.15 s",
                     "Xeon 2.0 GHz: 0.17 whole run, 0.10 loop, best of 5 rounds"]:
            self.assertEqual([], latest_cell_problems(cell), cell)

    def test_rejects_a_page_over_300_lines(self):
        self.assertGreater(line_count(GOOD_PAGE + "\n" * MAX_LINES), MAX_LINES)

    def test_rejects_a_page_without_the_targets_table(self):
        page = GOOD_PAGE.replace("| target | latest | met |", "| goal | now |")
        self.assertIsNone(targets_table(page))
        self.assertNotEqual([], table_problems(page))
        self.assertNotEqual([], table_problems(GOOD_PAGE.replace(TARGETS_TITLE, "Targets")))

    def test_rejects_a_row_of_other_than_3_cells(self):
        for row in ["| [Overhead](#overhead-per-event): half | 0.95 | **no** | 1.06 |",
                    "| [Overhead](#overhead-per-event): half | 0.95 |"]:
            page = GOOD_PAGE.replace("|---|---|---|\n", "|---|---|---|\n" + row + "\n")
            self.assertTrue(any("cells, not 3" in p for p in table_problems(page)), row)

    def test_rejects_a_met_cell_that_does_not_say_yes_or_no(self):
        page = GOOD_PAGE.replace("| **no** |", "| mostly |")
        self.assertTrue(any("met" in p for p in table_problems(page)))

    def test_rejects_a_target_whose_section_is_missing_or_gives_another_figure(self):
        page = GOOD_PAGE.replace("(#overhead-per-event)", "(#overhead)")
        self.assertTrue(any("no section has the anchor" in p for p in table_problems(page)))
        page = GOOD_PAGE.replace("**Latest**: 0.95 times", "**Latest**: 0.97 times")
        self.assertTrue(any("latest figure" in p for p in table_problems(page)))

    def test_rejects_a_benchmark_section_without_a_command(self):
        page = GOOD_PAGE.replace("    RUNS=3 bench/vs-heaptrack.sh build/release 200000 16\n",
                                 "Run the script.\n")
        self.assertEqual(["Overhead per event"], [title for title, _ in section_problems(page)])
        # A path in prose, even in backticks, is not a command.
        page = GOOD_PAGE.replace("    RUNS=3 bench/vs-heaptrack.sh build/release 200000 16\n",
                                 "See `bench/vs-heaptrack.sh`.\n")
        self.assertEqual(1, len(section_problems(page)))

    def test_rejects_a_command_whose_script_is_gone(self):
        page = GOOD_PAGE.replace("bench/vs-heaptrack.sh", "bench/vs-heaptrack-old.sh")
        self.assertTrue(any("not in the source tree" in p
                            for _, p in section_problems(page, source_dir())))

    def test_rejects_diary_markers(self):
        for line in ["Measured in this session.", "See issue #12.", "On 2026-12-04 it read 0.9."]:
            self.assertNotEqual([], diary_problems(GOOD_PAGE + line + "\n"), line)
        self.assertEqual([], diary_problems("docs/measurements/2026-12-04-h200\n"))


if __name__ == "__main__":
    unittest.main()
