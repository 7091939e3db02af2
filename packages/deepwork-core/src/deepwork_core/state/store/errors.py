"""The error the store raises (`store.*` codes); every message names the store with any password
masked (`deepwork_core.state.store.url.mask_url`)."""

from __future__ import annotations

from deepwork_core.base.errors import DeepWorkError
from deepwork_core.state.store.codes import StoreCode


class StoreError(DeepWorkError):
    """The store could not be opened, read or written (`store.*` codes)."""

    code = StoreCode.STORE_ERROR
