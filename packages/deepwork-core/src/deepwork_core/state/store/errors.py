"""The error the store raises and its codes (`store.*`): one family of `Code`, kept beside the
code that reports them as the receipts' and the fan-out's are; docs/errors.md lists them with
every other code. Every message names the store with any password masked
(`deepwork_core.state.store.url.mask_url`)."""

from __future__ import annotations

from deepwork_core.base.error_codes import Code
from deepwork_core.base.errors import DeepWorkError


class StoreCode(Code):
    """A `store.*` code; the string under each member says what it means."""

    STORE_AUTH_FAILED = "store.auth_failed"
    """PostgreSQL refused the store URL's user or password (masked in the message)."""
    STORE_BUSY = "store.busy"
    """Another process held the SQLite store's write lock for over a minute; try again."""
    STORE_CORRUPT = "store.corrupt"
    """The store file is not a readable SQLite database; it is named, and nothing was written."""
    STORE_ERROR = "store.error"
    """Generic store error (the database's own message follows)."""
    STORE_FOREIGN = "store.foreign"
    """The store file or database is not DeepWork's; nothing was written."""
    STORE_JOB_NOT_FOUND = "store.job_not_found"
    """No review job of this project has the given id."""
    STORE_JOB_UNREADABLE = "store.job_unreadable"
    """A review job's payload or result does not fit what this version reads (another version
    wrote it): the job is failed, and the next call of the checkpoint starts a new review."""
    STORE_SCHEMA_NEWER = "store.schema_newer"
    """A newer DeepWork migrated the store; upgrade DeepWork. Nothing was written."""
    STORE_NOT_A_FOLDER = "store.not_a_folder"
    """The folder the SQLite store lives in (`.deepwork/tmp` or a parent) is a file, a FIFO or
    another non-folder (the path is named); move it away. Nothing was written."""
    STORE_UNAVAILABLE = "store.unavailable"
    """PostgreSQL cannot be reached: start it or fix the URL; the next call reconnects."""
    STORE_URL_INVALID = "store.url_invalid"
    """The store URL is neither `sqlite:` nor `postgresql://`."""


class StoreError(DeepWorkError):
    """The store could not be opened, read or written (`store.*` codes)."""

    code = StoreCode.STORE_ERROR
