"""Store URLs: which adapter, where, and how to name it without its password.

- no URL (or `sqlite:` alone): the project's SQLite file `.deepwork/tmp/deepwork.sqlite3`;
- `sqlite:///absolute/path.sqlite3` or `sqlite:relative/path` (relative to the project root);
- `postgresql://user:password@host:port/database` (also `postgres://`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal
from urllib.parse import urlsplit, urlunsplit

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.layout import TMP_DIR
from deepwork_core.state.store.errors import StoreError

#: The environment variable the CLI reads the store URL from (core itself never reads it).
STORE_URL_ENV: Final = "DEEPWORK_STORE_URL"
#: The SQLite file of a project, under its runtime folder.
SQLITE_FILE: Final = "deepwork.sqlite3"
_PG_SCHEMES: Final = ("postgresql", "postgres")
_MASK: Final = "***"


@dataclass(frozen=True, slots=True)
class StoreLocation:
    """A parsed store URL: the adapter, and the file or the connection URL."""

    kind: Literal["sqlite", "postgresql"]
    #: The SQLite file (sqlite only).
    path: Path | None
    #: The URL as given (postgresql only; holds the password: never print it).
    url: str | None

    @property
    def display(self) -> str:
        """What messages name: the file, or the URL with its password masked."""
        if self.path is not None:
            return str(self.path)
        return mask_url(self.url or "")


def default_sqlite_path(project_root: Path) -> Path:
    return project_root / TMP_DIR / SQLITE_FILE


def parse_store_url(url: str | None, project_root: Path) -> StoreLocation:
    """Where the store of `project_root` is. Raises `store.url_invalid` for another scheme."""
    if not url or url.strip() in ("sqlite:", "sqlite://"):
        return StoreLocation("sqlite", default_sqlite_path(project_root), None)
    url = url.strip()
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    if scheme in _PG_SCHEMES:
        return StoreLocation("postgresql", None, url)
    if scheme == "sqlite":
        rest = url[len("sqlite:") :]
        if rest.startswith("//"):
            rest = "/" + rest.lstrip("/")  # sqlite:///abs (or ////abs) -> /abs
        path = Path(rest)
        return StoreLocation("sqlite", path if path.is_absolute() else project_root / path, None)
    raise StoreError(
        f"store URL {mask_url(url)!r} is neither sqlite: nor postgresql://; set "
        "DEEPWORK_STORE_URL or store.url in .deepwork/config.yml to one of those",
        code=ErrorCode.STORE_URL_INVALID,
    )


def mask_url(url: str) -> str:
    """`url` with the password of its user part replaced by `***` (the rest unchanged)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return _MASK
    netloc = parts.netloc
    if "@" not in netloc:
        return url
    user, host = netloc.rsplit("@", 1)
    if ":" in user:
        user = user.split(":", 1)[0] + ":" + _MASK
    return urlunsplit(parts._replace(netloc=f"{user}@{host}"))


def password_of(url: str) -> str | None:
    """The password in `url` (to scrub it from driver messages), or None."""
    try:
        return urlsplit(url).password
    except ValueError:
        return None
