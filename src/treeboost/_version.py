"""The package version, in a leaf module: ``serialization`` records it in model files
without importing the package root (whose ``__init__`` imports the estimators)."""

__version__ = "0.1.0"
