"""Configs shipped with the package: the quickstart that runs when no ``--config`` is given,
the setups that several experiment rows share (``dacl_tabular``, ``dacl_graph``,
``imix_tabular``, ``grace_node``, ``mvgrl_node``), and ``common``: the one grammar of config
arguments (:func:`common.parse_arg`) and :func:`common.apply_setup`. Each paper row's own
file, with its command and its numbers, is in ``experiments/<paper>/``."""
