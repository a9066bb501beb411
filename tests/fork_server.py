"""A fork server for crash tests and soaks: one interpreter imports the runtime once, then forks a
fresh process per command, so a process to kill costs milliseconds rather than an interpreter start.

The parent side is `ForkServer(child_script)`; the child script's `--serve` mode calls `serve(run)`,
which reads one command per line on stdin, forks, runs `run(command, arguments)` in the fork, and
prints `pid N` for it and `exited STATUS` once it is gone.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable
from pathlib import Path

__all__ = ["ForkServer", "say", "serve"]

_print_lock = threading.Lock()


def say(line: str) -> None:
    """Print one line whole: a kill can cut the stream between lines but not inside one."""
    with _print_lock:
        sys.stdout.write(f"{line}\n")
        sys.stdout.flush()


def serve(run: Callable[[str, list[str]], None]) -> None:
    """Fork a process per command line on stdin; it runs `run` and exits 0 if that returned."""
    if threading.active_count() != 1:
        raise RuntimeError("the fork server must be single-threaded")
    say("serving")
    for line in sys.stdin:
        command, *arguments = line.split()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                run(command, arguments)
                code = 0
            except BaseException:  # the parent reads the traceback on the server's stderr
                traceback.print_exc()
            finally:
                os._exit(code)
        say(f"pid {pid}")
        _, status = os.waitpid(pid, 0)
        say(f"exited {status}")


class ForkServer:
    """`CHILD --serve` (a script whose `--serve` calls `serve`): forks a fresh process per command.

    Lines the forked processes print arrive in order; `exited STATUS` ends each one.
    """

    def __init__(self, child: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(child), "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
        self._lines: queue.Queue[str] = queue.Queue()
        self._backlog: list[str] = []
        self._pump = threading.Thread(target=self._read, daemon=True)
        self._pump.start()
        assert self.next_line(30) == "serving"

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            # A line cut by a kill has no newline: it was never printed whole.
            if line.endswith("\n"):
                self._lines.put(line[:-1])
        self._lines.put("eof")

    def next_line(self, timeout: float) -> str:
        if self._backlog:
            return self._backlog.pop(0)
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"the fork server said nothing for {timeout} s") from None
        assert line != "eof", "the fork server died"
        return line

    def next_or_none(self, timeout: float) -> str | None:
        """The next line if one comes within `timeout`, else None."""
        if self._backlog:
            return self._backlog.pop(0)
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            return None
        assert line != "eof", "the fork server died"
        return line

    def fork(self, command: str) -> int:
        """Start `command` in a new process; its pid."""
        assert self.process.stdin is not None
        self.process.stdin.write(f"{command}\n")
        self.process.stdin.flush()
        early: list[str] = []
        while not (line := self.next_line(30)).startswith("pid "):
            early.append(line)
        self._backlog = early + self._backlog
        return int(line[4:])

    def until(self, wanted: str, timeout: float = 30) -> list[str]:
        """Lines up to and including `wanted` (which must come before the process exits)."""
        lines: list[str] = []
        while True:
            line = self.next_line(timeout)
            lines.append(line)
            assert not line.startswith("exited "), lines
            if line == wanted:
                return lines

    def kill(self, pid: int) -> tuple[list[str], int]:
        """SIGKILL `pid` (if still running); every line it printed since, and its wait status."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        return self.wait()

    def wait(self) -> tuple[list[str], int]:
        lines: list[str] = []
        while not (line := self.next_line(30)).startswith("exited "):
            lines.append(line)
        return lines, int(line[len("exited ") :])

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=20)
        self._pump.join(timeout=20)
