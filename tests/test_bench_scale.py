"""`bench/scale.py` on a tiny home: it loads through `remember_many`, opens in child processes and reports every
figure of its table (the page cache is left alone: dropping it would slow everything else on the machine)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.scale import in_child, model_installed, notes, run, table_rows

pytestmark = pytest.mark.timeout(60)


def test_a_tiny_home_is_loaded_opened_and_measured_in_child_processes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    report = run([100, 200], home=home, queries=5, drop_caches=False)
    first, second = report["sizes"]
    assert first["records"] == first["loaded"] == 100
    assert second["loaded"] == 100, "the second size grows the same home"
    for phase in ("cold", "warm"):
        entry = second[phase]
        assert entry["ok"], entry
        assert entry["records"] == 200
        assert 0 < entry["open_s"] <= entry["first_recall_s"]
        assert any(name == "Substrate" for name, _, _ in entry["starts"])
    warm = second["warm"]
    # Deven sees its own half only: the exact scan's candidates and the hits are all deven's.
    assert warm["mean_hits"] > 0
    assert warm["scan_rows"] == 200
    assert warm["crash_to_recall_s"] > 0
    assert warm["rss"]["anon_mib"] > 0
    assert warm["rss"]["file_mib"] > 0
    assert second["disk"]["bytes_per_record"] > 0
    assert second["dropped_page_cache"] is False
    assert second["local"]["ok"] is model_installed(), second["local"]
    assert len(table_rows(report)) == 2
    assert notes(report)
    assert home.exists(), "a home the caller names is kept"


def test_a_home_that_does_not_open_is_a_figure_not_a_crash(tmp_path: Path) -> None:
    home = tmp_path / "home"
    run([50], home=home, queries=2, drop_caches=False, local=False)
    (home / "CURRENT").write_text("store.9\n")  # names a store that is not there: Runtime.open refuses the home
    failed = in_child(home, "cold", 2)
    assert failed["ok"] is False
    assert "store.9" in failed["error"]
