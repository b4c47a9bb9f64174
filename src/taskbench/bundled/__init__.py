"""Bundled demo datasets (our own files): taskbench.bundled.path(name) gives their directory."""
