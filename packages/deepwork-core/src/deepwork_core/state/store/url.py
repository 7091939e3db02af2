"""Store URLs: which adapter, where, and how to name it without its password.

- no URL (or `sqlite:` alone): the project's SQLite file `.deepwork/tmp/deepwork.sqlite3`;
- `sqlite:///absolute/path.sqlite3` or `sqlite:relative/path` (relative to the project root);
- `postgresql://user:password@host:port/database` (also `postgres://`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal
from urllib.parse import unquote

from deepwork_core.base.layout import TMP_DIR
from deepwork_core.state.store.errors import StoreCode, StoreError

#: The environment variable the CLI reads the store URL from (core itself never reads it).
STORE_URL_ENV: Final = "DEEPWORK_STORE_URL"
#: The SQLite file of a project, under its runtime folder.
SQLITE_FILE: Final = "deepwork.sqlite3"
_PG_SCHEMES: Final = ("postgresql", "postgres")
_MASK: Final = "***"
#: A `password=` parameter of a URL's query (its value ends at the next `&`).
_QUERY_PASSWORD: Final = re.compile(r"((?:^|[?&])password=)([^&]*)")


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
        code=StoreCode.STORE_URL_INVALID,
    )


def mask_url(url: str) -> str:
    """`url` with every password libpq would read from it replaced by `***`: the one in its
    user part (which may hold `#` or `?`) and any `password=` of its query; the rest as is."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return _mask_query(url)
    authority, path = _split_authority(rest)
    if "@" in authority:
        user, host = authority.rsplit("@", 1)
        if ":" in user:
            user = user.split(":", 1)[0] + ":" + _MASK
        authority = f"{user}@{host}"
    return f"{scheme}{sep}{authority}{_mask_query(path)}"


def _split_authority(rest: str) -> tuple[str, str]:
    """The user-and-host part of what follows `scheme://`, and the path and query after it.
    As libpq reads it, the user part ends at the `@` before the first `/` (so a password may
    hold `#` or `?`); the host ends at the next `/` or `?`."""
    head = rest.split("/", 1)[0]
    start = head.rfind("@") + 1
    tail = re.search(r"[/?]", rest[start:])
    end = len(rest) if tail is None else start + tail.start()
    return rest[:end], rest[end:]


def _mask_query(text: str) -> str:
    """`text` with the value of every `password=` parameter masked."""
    return _QUERY_PASSWORD.sub(lambda found: found.group(1) + _MASK, text)


def passwords_of(url: str) -> list[str]:
    """Every password in `url`, as written and decoded, longest first (to scrub them from
    driver messages)."""
    found: list[str] = []
    _, sep, rest = url.partition("://")
    user = _split_authority(rest)[0].rsplit("@", 1)[0] if sep and "@" in rest else ""
    if ":" in user:
        found.append(user.split(":", 1)[1])
    found += [match.group(2) for match in _QUERY_PASSWORD.finditer(url)]
    found += [unquote(one) for one in found]
    return sorted({one for one in found if one}, key=len, reverse=True)
