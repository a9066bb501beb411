"""`python -m tests.dispatcher_child HOME DIR COMMAND...`: opens the home, dispatches deven's task in the command
harness, prints the execution id and waits on stdin, to be killed (-9) while its execution runs."""

from __future__ import annotations

import sys

from resident import Runtime


def main() -> None:
    home, directory, *command = sys.argv[1:]
    with Runtime.open(home, realm="none") as rt:
        execution = rt.coordinator.dispatch(
            "deven", "run the held harness", harness="command", command=tuple(command), directory=directory
        )
        print(execution.id, flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
