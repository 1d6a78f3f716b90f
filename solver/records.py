"""Plain records for the modules a verify served by a replay artefact loads, without
:mod:`dataclasses` (it imports :mod:`inspect`, :mod:`ast`, :mod:`dis` and :mod:`tokenize`: ~8 ms of
that verify's CPU, ISSUE 16).  :class:`Record` gives a subclass the ``__repr__`` and ``__eq__``
``@dataclass`` would generate from its fields (:attr:`Record.FIELDS`, in ``__init__``'s order);
:class:`FrozenRecord` also ``@dataclass(frozen=True)``'s ``__hash__`` and read-only attributes.
Standard library only, no import at all.
"""

from __future__ import annotations


class Record:
    """A record's ``repr`` (``Name(field=value, ...)``) and equality (same class, equal fields, as a
    tuple compares them); unhashable, as a mutable dataclass.  Subclasses set :attr:`FIELDS` and an
    ``__init__`` assigning each field."""

    FIELDS: tuple[str, ...] = ()
    __hash__ = None  # type: ignore[assignment]  (mutable: as @dataclass(eq=True))

    def _values(self) -> tuple:
        return tuple(getattr(self, k) for k in self.FIELDS)

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}({', '.join(f'{k}={getattr(self, k)!r}' for k in self.FIELDS)})"

    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()


class FrozenRecord(Record):
    """A :class:`Record` whose fields are set once, by ``__init__`` through :meth:`_set`
    (assigning or deleting an attribute afterwards raises :class:`AttributeError`, as a frozen
    dataclass's ``FrozenInstanceError`` is one); hashable by its fields."""

    def _set(self, **values) -> None:
        for k, v in values.items():
            object.__setattr__(self, k, v)

    def __setattr__(self, name, value):
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name):
        raise AttributeError(f"cannot delete field {name!r}")

    def __hash__(self) -> int:
        return hash(self._values())
