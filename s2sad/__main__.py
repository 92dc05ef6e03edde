"""``python -m s2sad``: the same CLI as the ``s2sad`` console script."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
