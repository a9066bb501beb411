"""Every command, reply, event and stored record of the runtime, as frozen msgspec structs."""
