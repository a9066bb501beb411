"""The substrate's view of its embedder: which one is current, and whether its worker is up and on time.

A machine of its own because both other vector machines read it: a recall asks it whether to wait
for a query vector at all and for how long (`query_wait`), and the filler asks it how big a chunk
to send and how long to back off after a failure (`failed`, by `EMBEDDER_BACKOFF` through
`rules.Retries`). Keeping those rules here means they change in one place and can be checked on a
clock of a test's own.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from resident.memory.embedding import Embedder
from resident.supervisor import Backoff, Retries

__all__ = [
    "BACKFILL_BATCH",
    "EMBEDDER_BACKOFF",
    "FILL_DEADLINE",
    "FILL_SECONDS",
    "QUERY_WAIT",
    "WORKER_CHUNK",
    "EmbedderState",
]

logger = logging.getLogger(__name__)

# How long a recall waits for its query's vector from the embedding worker before it answers
# without one. A model on this machine embeds a question in 20-150 ms, even under load.
QUERY_WAIT = 0.5
# The hash embedder fills this many vectors per commit; the worker, as many as it embeds in about
# `FILL_SECONDS` (so a query queued behind a chunk waits little), between 1 and `WORKER_CHUNK`.
BACKFILL_BATCH = 256
FILL_SECONDS = 0.2
WORKER_CHUNK = 64
# A failing embedder is tried again after 1 s, then twice as long after every failure in a row,
# up to half a minute.
EMBEDDER_BACKOFF = Backoff(min=1.0, max=30.0, jitter=0.0)
# A fill request the worker never answered (it died with it) is given up after this long.
FILL_DEADLINE = 60.0


@dataclass
class EmbedderState:
    """Which embedder is current, and how its worker is doing.

    `down`: the last request failed; recalls stop asking for query vectors and the filler probes on
    a growing schedule (`retries`) until one succeeds. `outstanding`: requests at the worker by token, with when
    they were sent; the worker is late once one has been out longer than `QUERY_WAIT`.
    """

    spec: str = "hash"
    name: str = "hash"
    weight: float = 0.0
    inline: Embedder | None = None
    down: bool = False
    error: str = ""
    retries: Retries = field(default_factory=lambda: Retries(EMBEDDER_BACKOFF))
    outstanding: dict[int, float] = field(default_factory=dict)
    # Seconds per text of the worker's recent fills (a moving average), to size the next chunk.
    seconds_per_text: float = 0.05

    def sent(self, token: int, now: float) -> None:
        """Request `token` went to the worker at `now`."""
        self.outstanding[token] = now

    def answered(self, token: int) -> None:
        """The worker answered request `token` (or it was given up): it no longer makes the worker late."""
        self.outstanding.pop(token, None)

    def late_since(self, now: float) -> float | None:
        """When the oldest outstanding request was sent, if any is.

        A request out for longer than a fill's deadline was lost with a worker that died: it is
        forgotten, so that one lost answer does not leave the worker counted late for ever.
        """
        for token, sent in list(self.outstanding.items()):
            if now - sent > FILL_DEADLINE:
                del self.outstanding[token]
        return min(self.outstanding.values()) if self.outstanding else None

    def late(self, now: float) -> bool:
        """Whether some request has been out for `QUERY_WAIT` or longer."""
        since = self.late_since(now)
        return since is not None and now - since >= QUERY_WAIT

    def query_wait(self, now: float) -> float:
        """How long a query sent at `now` may wait for its vector.

        A query queued behind an earlier request cannot be answered before it: it waits no longer
        than that request leaves before the worker counts as late.
        """
        waited_since = self.late_since(now) or now
        return max(0.0, waited_since + QUERY_WAIT - now)

    def chunk(self) -> int:
        """How many records' vectors to ask for at once."""
        if self.inline is not None:
            return BACKFILL_BATCH
        return max(1, min(WORKER_CHUNK, int(FILL_SECONDS / max(self.seconds_per_text, 1e-6))))

    def succeeded(self, texts: int, seconds: float, *, fill: bool) -> None:
        """A request of `texts` texts took the worker `seconds`: it is up, and the next failure waits the least."""
        if fill and texts:
            self.seconds_per_text = 0.7 * self.seconds_per_text + 0.3 * seconds / texts
        self.down = False
        self.error = ""
        self.retries.succeeded()

    def failed(self, error: str) -> float:
        """Record a failure (said once, when the embedder goes down); the delay before the next try."""
        if not self.down:
            logger.warning("embedder %s failed, recall goes on by keyword: %s", self.spec, error)
        self.down = True
        self.error = error
        return self.retries.failed()

    def retry_wait(self) -> float:
        """The wait before trying again a step that failed elsewhere (a write of filled vectors)."""
        return self.retries.next_wait()
