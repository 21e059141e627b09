"""``python -m kubecore``: the ``kubecore`` command."""

from kubecore._cli import console_main

if __name__ == "__main__":
    console_main()
