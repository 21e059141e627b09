"""The package's version, in a module of its own: the modules that report it (the API server's
``/version``) import it without importing the package's façade."""

__version__ = "0.1.0"
