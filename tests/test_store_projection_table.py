"""The one table of projections is built from the modules it names, never by importing a module."""

from __future__ import annotations

import types

import pytest

from resident.messages.memory import BankCreated
from resident.store import projection_table, projections
from resident.store.projecting import projection
from resident.store.view import View

pytestmark = pytest.mark.timeout(30)


def _module_projecting_bank_created() -> types.ModuleType:
    module = types.ModuleType("tests.stray_projections")

    @projection(BankCreated)
    def _bank_created_again(view: View, event: BankCreated) -> None:
        raise AssertionError("a stray projection ran")

    module._bank_created_again = _bank_created_again  # type: ignore[attr-defined]
    return module


def test_a_module_of_projections_not_named_in_the_table_projects_nothing() -> None:
    stray = _module_projecting_bank_created()
    assert stray not in projection_table.MODULES
    _check, apply = projection_table.PROJECTIONS[BankCreated]
    assert apply is not stray._bank_created_again
    assert apply.__module__ == projections.__name__


def test_two_modules_projecting_one_event_type_are_refused_when_the_table_is_built() -> None:
    with pytest.raises(TypeError, match="BankCreated is projected twice"):
        projection_table._table((projections, _module_projecting_bank_created()))
