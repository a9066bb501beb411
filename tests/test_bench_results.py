"""`python -m bench` rewrites only its generated table in `bench/RESULTS.md`; hand-written sections stay."""

from __future__ import annotations

from bench.run_all import BEGIN, END, merge_results

TABLE = "# Benchmark results\n\n| benchmark | figure | value | target |\n|---|---|---|---|\n| a | b | 1 | |\n"
ANALYSIS = "## Write throughput (issue 20)\n\nHand-written analysis, with | pipes | and `code`.\n"


def test_a_new_results_file_holds_the_table_between_the_markers() -> None:
    merged = merge_results(None, TABLE)
    assert merged.startswith(BEGIN)
    assert TABLE.rstrip() in merged
    assert merged.rstrip().endswith(END)


def test_rewriting_replaces_only_what_lies_between_the_markers() -> None:
    before = "Some notes above the table.\n\n" + merge_results(None, TABLE) + "\n" + ANALYSIS
    newer = TABLE.replace("| a | b | 1 | |", "| a | b | 2 | |")
    merged = merge_results(before, newer)
    assert merged.startswith("Some notes above the table.\n\n")
    assert "| a | b | 2 | |" in merged
    assert "| a | b | 1 | |" not in merged
    assert merged.endswith("\n" + ANALYSIS)
    assert merged.count(BEGIN) == merged.count(END) == 1
    assert merge_results(merged, newer) == merged


def test_a_file_from_before_the_markers_keeps_every_section_after_its_table() -> None:
    legacy = TABLE + "\n" + ANALYSIS + "\n## Another section\n\nmore\n"
    merged = merge_results(legacy, TABLE.replace("1", "3"))
    assert merged.startswith(BEGIN)
    assert ANALYSIS in merged
    assert merged.endswith("## Another section\n\nmore\n")
    assert "| a | b | 3 | |" in merged


def test_an_end_marker_without_its_begin_is_not_taken_for_the_table() -> None:
    stray = ANALYSIS + END + "\n"
    merged = merge_results(stray, TABLE)
    assert merged.startswith(BEGIN)
    assert merged.count(BEGIN) == 1
    assert ANALYSIS in merged
    assert merge_results(merged, TABLE) == merged
