"""Executors of the Program IR on the host; ``reference`` is the oracle every other one is checked against."""
