"""A shown file of an approval request as a card shows it, from the bytes the store keeps
(`state.store.tables.shown_bytes`, docs/team.md). Text here is raw; the templates escape
it."""

from __future__ import annotations

from deepwork_core.state.store.tables.shown_bytes import Kept, ShownBytes
from pydantic import BaseModel, ConfigDict


class FilePreview(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    output: str
    path: str
    sha256: str | None
    #: The bytes shown, as text: those the store keeps (the whole file or its first 256 KiB),
    #: or on the serving checkout for a file that changed since the request, its CURRENT
    #: content (`now_sha256` differs); None when there is nothing to show (`note` says why).
    text: str | None
    note: str | None = None
    #: The file's hash now, when it differs from the asked-about `sha256` (None: unchanged).
    now_sha256: str | None = None
    #: The file's bytes differ from the ones asked about (or it is gone).
    changed: bool = False
    #: The file's size in bytes when the request was made, where the store knows it.
    size: int | None = None
    #: What is shown is not every byte asked about (a first part, a binary file, over the
    #: request's cap): the request cannot be decided away from the checkout that serves it.
    incomplete: bool = False


def stored_preview(stored: ShownBytes, served: str | None) -> FilePreview:
    """`stored` as a card shows it; `served`: where the run is served when it is another
    project's (None: this checkout serves it)."""
    preview = FilePreview(
        output=stored.output,
        path=stored.path,
        sha256=stored.sha256,
        text=None,
        size=stored.size,
        incomplete=not stored.complete,
    )
    if stored.complete:
        if stored.kept is Kept.ABSENT:
            return preview.model_copy(update={"note": "the file was absent when asked about"})
        return preview.model_copy(update={"text": stored.text})
    where = "" if served is None else f"; read it where the run is served, {served}"
    if stored.kept is Kept.NOT_STORED and served is not None:
        note = (
            "this checkout does not hold the bytes asked about (its file of that name, if any, "
            f"is not this request's): not shown. Read them where the run is served, {served}, "
            "before deciding"
        )
        return preview.model_copy(update={"note": note, "changed": True, "incomplete": False})
    if stored.kept is Kept.FIRST_PART:
        note = f"{stored.why_incomplete()}: shown above is the first part only{where}"
        return preview.model_copy(update={"text": stored.text, "note": note})
    if stored.kept is Kept.WHOLE:  # kept bytes that do not hash to the request's SHA-256
        note = f"{stored.why_incomplete()}: not shown{where}"
        return preview.model_copy(update={"note": note})
    return preview.model_copy(update={"note": f"{stored.why_incomplete()}: not shown{where}"})
