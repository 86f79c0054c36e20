"""Configs shipped with the package (the quickstart that runs when no --config is given)."""
