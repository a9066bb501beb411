"""Grant tokens: how a member session outside this process proves which execution it works on.

When the coordinator dispatches a task, the runtime makes a random token for the session and
records only its SHA-256 digest with the execution. Whoever holds the token (a harness started for
the member, with the token in `RESIDENT_GRANT_TOKEN`) acts as that member under that execution's
grant, and nothing more; the runtime finds the grant from the digest. The token is good while its
execution runs and its grant has not expired, so ending the execution ends the token.

Tokens are 32 random bytes, so a plain digest (no salt, no stretching) is enough to keep a copy of
the store from yielding a usable token.
"""

from __future__ import annotations

import re

from resident.errors import GrantInvalid

__all__ = ["GRANT_FILE_ENV", "GRANT_TOKEN_ENV", "TOKEN_PREFIX", "check_token", "new_token", "token_digest"]

GRANT_TOKEN_ENV = "RESIDENT_GRANT_TOKEN"  # noqa: S105 -- the name of a variable, not a secret
# A file holding the token, for harnesses whose tools drop variables named like secrets (Codex drops *TOKEN*).
GRANT_FILE_ENV = "RESIDENT_GRANT_FILE"
TOKEN_PREFIX = "rgt_"  # noqa: S105 -- a public prefix, not a secret
# The prefix, then 43 characters of URL-safe base64 (32 bytes); anything else is not a token.
_TOKEN = re.compile(r"rgt_[A-Za-z0-9_-]{43}")


# hashlib and secrets are imported where they are used: the `resident` command checks a token's shape
# and hands it on, and starting it quickly matters more than the microseconds of a deferred import.


def new_token() -> str:
    """A fresh random grant token."""
    import secrets  # noqa: PLC0415 - see above

    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def check_token(token: str) -> str:
    """`token` if it has a token's shape; `GrantInvalid` (without echoing it) otherwise."""
    if not isinstance(token, str) or _TOKEN.fullmatch(token) is None:
        raise GrantInvalid(
            f"that is not a grant token (they look like {TOKEN_PREFIX}… and come from the runtime that "
            f"started the session, in ${GRANT_TOKEN_ENV})"
        )
    return token


def token_digest(token: str) -> str:
    """The digest the store keeps in place of the token."""
    import hashlib  # noqa: PLC0415 - see above

    return hashlib.sha256(check_token(token).encode("ascii")).hexdigest()
