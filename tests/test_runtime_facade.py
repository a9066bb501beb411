"""The public facade offers no way around its checks: no store, no actor address, no raw write."""

from __future__ import annotations

from pathlib import Path

import pytest

from resident import Runtime
from resident.runtime.runtime import Internals
from resident.runtime.wiring import Wiring
from resident.store.store import Store
from resident.supervisor.address import Address

pytestmark = pytest.mark.timeout(60)

# What reads or writes without visibility, withholding or grant checks.
_BYPASSES = (Store, Address, Wiring, Internals)


def _public(value: object) -> dict[str, object]:
    found = {}
    for name in dir(value):
        if name.startswith("_"):
            continue
        try:
            found[name] = getattr(value, name)
        except Exception:  # a property that needs an open runtime or a member is not a bypass
            continue
    return found


def test_no_public_attribute_of_the_runtime_or_its_facades_reaches_the_store_an_actor_or_the_writer(
    tmp_path: Path,
) -> None:
    with Runtime.open(tmp_path / "home") as rt:
        rt.memory.enable()
        facades: dict[str, object] = {"rt": rt, "rt.member('deven')": rt.member("deven")}
        for name, value in _public(rt).items():
            if not callable(value) and type(value).__module__.startswith(("resident.runtime", "resident.operations")):
                facades[f"rt.{name}"] = value
        assert {"rt.memory", "rt.replication", "rt.coordinator"} <= set(facades)
        for where, facade in facades.items():
            for name, value in _public(facade).items():
                assert not isinstance(value, _BYPASSES), f"{where}.{name} is a {type(value).__name__}"
        assert not hasattr(rt, "store")
        assert not hasattr(rt, "write")
        assert not hasattr(rt, "wiring")
