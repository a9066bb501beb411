"""What a readmit must change: the rule Realm withheld a record by decides.

Re-admitting a withheld record writes a new version that supersedes it. Sent unchanged, it would
either come back served (Realm judges each id once) or be refused again, so the new version has to
change what Realm objected to:

* `delegated_promotion` — a canonical record arrived through a delegated path: the new version may
  not be canonical *and* delegated (drop `canonical`, or let the owner readmit it);
* `different_content` and `id_owned` — the id clashed with another version or another home's
  record: the new version has a new id, which is the change;
* `invalidated`, `invalidated_content`, `supersedes_invalidated`, or any rule this runtime does not
  know — the content itself was refused: the new version needs new text, new as Realm compares it
  (`resident.content`: a change of case, spacing or a compatibility character is no change).
"""

from __future__ import annotations

from resident.content import content_key
from resident.errors import InvalidInput
from resident.messages.memory import MemoryRecord

__all__ = ["NEW_ID_SUFFICES", "check_readmit"]

NEW_ID_SUFFICES = frozenset({"different_content", "id_owned"})


def check_readmit(withheld: MemoryRecord, corrected: MemoryRecord) -> None:
    """Refuse `corrected` (the new version of `withheld`) unless it changes what Realm objected to."""
    rule = withheld.replication_rule
    if rule in NEW_ID_SUFFICES:
        return
    if rule == "delegated_promotion":
        if corrected.canonical and corrected.delegated:
            raise InvalidInput(
                f"record {withheld.id} was refused as a canonical memory through a delegated path; readmit it "
                "without canonical (`--no-canonical`), or have the owner readmit it"
            )
        return
    if content_key(corrected.body) == content_key(withheld.body):
        raise InvalidInput(
            f"record {withheld.id} is {withheld.replication} for its content ({withheld.replication_reason or rule}); "
            "a readmit must carry corrected text (`--text`), or roll it back with `--rollback`"
        )
