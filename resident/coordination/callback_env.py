"""The names of the variables through which a member session's harness calls the runtime back.

The runtime sets them when it starts a harness (`resident.runtime.sessions`), the API and the client
read them (`resident.api`); both import the names from here, a leaf, so neither imports the other.
The grant itself travels as `resident.coordination.tokens.GRANT_FILE_ENV` / `GRANT_TOKEN_ENV`.
"""

from __future__ import annotations

__all__ = ["API_ADDRESS_ENV", "PROOF_KEY_ENV", "SESSION_ENV"]

# The runtime's address as a member session's harness gets it: a sandboxed one cannot read api.json
# (nor its token, which acts as the owner), so it calls with this address and its grant alone.
API_ADDRESS_ENV = "RESIDENT_API"
# The harness's copy of its session's proof key (`resident.api.challenge`).
PROOF_KEY_ENV = "RESIDENT_API_PROOF"
# The session a harness runs for.
SESSION_ENV = "RESIDENT_SESSION"
