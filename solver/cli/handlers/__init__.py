"""The commands' handlers: ``handlers/<command>.py`` defines ``handle(args) -> int`` (the exit
status) for the parser of ``cli/<command>.py``.  Imported one at a time, by dotted name, by
:func:`softhard.solver.cli.main` (its ``COMMANDS`` table): only the chosen command's stages load.
The shared pieces: :mod:`.console` (output), :mod:`.formula` (a formula's construction from the
options), :mod:`.certificates` (the human-readable summary of a certificate of each kind)."""
