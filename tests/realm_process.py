"""A real Realm server process for tests: the product's own `resident.realm.process`."""

from resident.realm.process import START_TIMEOUT, STOP_TIMEOUT, RealmProcess, start_realm

__all__ = ["START_TIMEOUT", "STOP_TIMEOUT", "RealmProcess", "start_realm"]
