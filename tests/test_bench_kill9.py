"""The kill -9 soak runs small: its replicating writers reach Realm with the home's token, and a writer
that ends on its own inside the "during open" window is not waited for forever."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.kill9 import Soak, make_exports, run

pytestmark = pytest.mark.timeout(240)


def test_a_small_soak_of_replicating_writers_settles_every_acknowledged_record_in_realm(tmp_path: Path) -> None:
    report = run(4, tmp_path, modes=("replicate",), seed=3)
    tally = report["modes"]["replicate"]
    assert (tally["kills"], tally["lost"], tally["transient"]) == (4, 0, 0)
    final = report["replication_after_soak"]
    assert final["acknowledged"] == tally["acknowledged"] > 0
    assert final["acknowledged_synced"] == final["acknowledged"]
    assert final.get("pending", 0) == final.get("conflict", 0) == 0


def test_an_import_that_ends_inside_the_open_window_is_counted_not_waited_for(tmp_path: Path) -> None:
    exports = make_exports(tmp_path / "exports", 1)
    # The window outlasts the whole import: the writer prints its ack and `exited 0` inside it.
    soak = Soak(tmp_path, 1, "http://127.0.0.1:9", "unused", exports, during_open=1.0, open_window=120.0)
    try:
        soak.kill_one("import")
    finally:
        soak.server.close()
    tally = soak.tallies["import"]
    assert (tally.kills_during_open, tally.imports_acknowledged, tally.partial_imports) == (1, 1, 0)
    assert tally.checks == [{"records": 20, "missing": 0, "transient": 0, "imports": 1, "partial": 0}]
