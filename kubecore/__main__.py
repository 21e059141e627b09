"""``python -m kubecore``: the ``kubecore`` command."""

import sys

from kubecore._cli import main

if __name__ == "__main__":
    sys.exit(main())
