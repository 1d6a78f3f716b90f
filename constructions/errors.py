"""The one exception hierarchy of softhard.

Every error the tool raises on bad input derives from :class:`SofthardError`; its message says
what was wrong and where (file, line:column, field, node, parameter).  The CLI prints the message
on one line and exits with status 2.  (ARCHITECTURE.md, "Conventions".)
"""

from __future__ import annotations


class SofthardError(Exception):
    """Root of all errors softhard raises deliberately."""


class FormulaSyntaxError(SofthardError):
    """A formula or ``.ltl`` file does not parse.  Message gives ``source:line:col``."""

    def __init__(self, message: str, *, source: str = "<formula>", line: int | None = None,
                 column: int | None = None):
        self.source, self.line, self.column = source, line, column
        where = source if line is None else f"{source}:{line}:{column}"
        super().__init__(f"{where}: {message}")


class InputFileError(SofthardError):
    """An input file is missing, unreadable or not text (message: the path and what is wrong)."""


class FormulaError(SofthardError):
    """A formula parses but is not acceptable (e.g. a symbol outside the alphabet)."""


class ParameterError(SofthardError):
    """A numeric parameter is out of range or not a number (tau <= 0, NaN, eta not in (0, 1/2), n < 1)."""


class RepresentationError(ParameterError):
    """The parameters call for a number beyond what a numeric format represents (e.g. a required
    1/tau beyond float64, in which numeric runs hold it).  The message names the value and the limit."""


class WorkLimitError(ParameterError):
    """The input is well formed but its work exceeds a documented limit of softhard (every command
    bounded), e.g. a composed bound with more operations than ``solver.models.MAX_BOUND_OPERATIONS``.
    ``verify`` reports a certificate it meets as *could not be re-checked*, not invalid."""


class ModelFormatError(SofthardError):
    """A model file (JSON/NPZ) is malformed: missing array, wrong shape, NaN weight, unknown field."""


class CertificateError(SofthardError):
    """A certificate is malformed or was tampered with; the message names the field, ``path``
    (when known) is its JSON path (``search.per_bound[0]``)."""

    def __init__(self, message: str, *, path: str | None = None):
        self.path = path
        super().__init__(message)


class SolverError(SofthardError):
    """The solver stage cannot encode a claim soundly (e.g. a transcendental term reached Z3)."""


class SearchFailed(SofthardError):
    """A parameter search found nothing it could prove (not bad input: the CLI exits 1)."""

    exit_code = 1


class NotSimulable(SofthardError):
    """A hard-attention model is not simulable by softmax this way: some head has gap 0 on an input
    of length ≤ n_max, or a tie-break changed its hard outputs (THEORY §6).  ``report`` is the gap
    analysis with the witnesses (a :class:`softhard.constructions.gaps.GapReport`).  Not bad input:
    the CLI exits 1."""

    exit_code = 1

    def __init__(self, message: str, report=None):
        super().__init__(message)
        self.report = report
