"""`tf.app` (TensorFlow 1.x): `run(main, argv)` parses the flags and calls main.

    def main(argv):          # argv: the program name plus what the flags did not consume
        ...
    if __name__ == "__main__":
        cf.app.run()         # main defaults to __main__.main

As TensorFlow 1.x's tf.app.run (absl's app.run with unknown flags tolerated): the known
flags of `cf.flags.FLAGS` are parsed out of argv (default sys.argv), unknown ones stay in
the argv handed to main, and the process exits with main's return value (sys.exit).
`--help` / `-h` / `--helpfull` print the flags and exit 0; a bad flag value prints the
error and exits 1.
"""
from __future__ import annotations

import sys
from typing import Any, Callable, List, Optional, Sequence

from . import flags

__all__ = ["run", "flags"]

_HELP = ("--help", "-help", "-h", "--helpshort", "--helpfull", "-?")


def _usage(argv0: str) -> str:
    body = flags.FLAGS.get_help()
    return f"usage: {argv0} [flags]\n\nflags:\n{body}" if body else f"usage: {argv0}\n\n(no flags defined)"


def run(main: Optional[Callable[[List[str]], Any]] = None, argv: Optional[Sequence[str]] = None) -> None:
    """Parses flags from `argv` (default sys.argv), then `sys.exit(main(remaining_argv))`."""
    args = list(sys.argv if argv is None else argv)
    if not args:
        args = [sys.argv[0] if sys.argv else "main"]
    head = args[1:args.index("--")] if "--" in args else args[1:]
    if any(a in _HELP for a in head):
        print(_usage(args[0]))
        sys.exit(0)
    try:
        remaining = flags.FLAGS(args, known_only=True)
    except flags.Error as e:
        print(f"FATAL Flags parsing error: {e}", file=sys.stderr)
        print("Pass --help to see the flags.", file=sys.stderr)
        sys.exit(1)
    if main is None:
        main = getattr(sys.modules.get("__main__"), "main", None)
        if main is None:
            raise TypeError("cf.app.run() needs main=..., or a function named main in the __main__ module")
    sys.exit(main(remaining))
