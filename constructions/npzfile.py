"""Reading the arrays of a model file or a Tracr export (``.npz``, NumPy's zip of ``.npy`` files)
without trusting them: never unpickling, and every way a file can fail to be an archive —
not a zip at all, truncated, corrupt — reported as one reason (issue cli6 #7)."""

from __future__ import annotations

import io
import zipfile
import zlib

import numpy as np

#: the first bytes of a zip archive (a local file header; an empty archive's end record)
ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")


def load_npz(data: bytes) -> dict[str, np.ndarray]:
    """The arrays of the ``.npz`` archive ``data`` (its bytes), by member name, each a float/int/bool
    NumPy array as stored (never unpickled: ``allow_pickle=False``).  Raises :class:`ValueError`
    with the reason, for the caller to prefix with the file's name: "not a valid .npz archive
    (...)" when ``data`` is no zip archive or a truncated or corrupt one, or "array NAME: ..." for a
    member that is not a plain array (e.g. pickled object data)."""
    if not data.startswith(ZIP_MAGIC):
        raise ValueError("not a valid .npz archive (not a zip file)")
    try:
        z = np.load(io.BytesIO(data), allow_pickle=False)
        names = list(z.files)
    except (zipfile.BadZipFile, ValueError, EOFError, OSError, zlib.error) as e:
        raise ValueError(f"not a valid .npz archive (truncated or corrupt: {e})") from None
    out = {}
    with z:
        for k in names:
            try:
                out[k] = np.array(z[k])
            except (zipfile.BadZipFile, EOFError, OSError, zlib.error, NotImplementedError) as e:
                raise ValueError(f"not a valid .npz archive (truncated or corrupt at array {k!r}: {e})") from None
            except ValueError as e:  # a member with pickled (object) data, or a broken .npy header
                raise ValueError(f"array {k!r} is not a plain numeric array ({str(e).split('. ')[0]})") from None
    return out
