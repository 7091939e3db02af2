"""Where each project's approval key lives: the user's state directory, outside `.deepwork/`.

The key that seals human approvals (docs/security.md) must not sit in the project, where the agent
writes freely. It is `<state>/keys/<sha256 of the resolved project root>.key`, where `<state>` is
`DEEPWORK_STATE_DIR` when set (tests, CI), else `$XDG_STATE_HOME/deepwork` (an absolute
`XDG_STATE_HOME` only, as the XDG spec says), else `~/.local/state/deepwork`. The command line
reads the environment and passes the folder down; `deepwork serve` and `deepwork approve` of one
project therefore find the same key.

The same folder holds this machine's gate key, `<state>/gate/gate.key`, which signs the receipt
of every completed run (docs/verify.md), named after the host; and the local human approver's
Ed25519 key, `<state>/approvers/<name>.key`
(`deepwork approver init`), with which `deepwork approve` and the dashboard sign decisions. Which
approver signs: `--approver NAME`, else `DEEPWORK_APPROVER`, else the only key there is. Whether
the run state is shared with other machines (so signatures are required): the project's store
is a PostgreSQL server, chosen by `DEEPWORK_STORE_URL` or else by `store.url` of the project's
`.deepwork/config.yml` (the same precedence that chooses the store itself).
"""

from __future__ import annotations

import hashlib
import os
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from deepwork_core.base.config import load_config
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.receipts.keys import GateKey
from deepwork_core.state.approvals.seal import ApprovalKey, ApprovalKeyError
from deepwork_core.state.approvals.signatures import ApproverSigner, TrustedApprovers
from deepwork_core.state.store.opening import choose_store_url

STATE_DIR_ENV: Final = "DEEPWORK_STATE_DIR"
APPROVER_ENV: Final = "DEEPWORK_APPROVER"
STORE_URL_ENV: Final = "DEEPWORK_STORE_URL"
_SHARED_SCHEMES: Final = ("postgresql:", "postgres:")
_XDG_STATE_HOME: Final = "XDG_STATE_HOME"


def state_dir(env: Mapping[str, str]) -> Path:
    """DeepWork's folder in the user's state directory, from the environment `env`."""
    chosen = env.get(STATE_DIR_ENV)
    if chosen:
        return Path(chosen).expanduser().absolute()
    xdg = env.get(_XDG_STATE_HOME)
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "deepwork"
    home = env.get("HOME")
    return (Path(home) if home else Path.home()) / ".local" / "state" / "deepwork"


def approval_key(state: Path, project_root: Path) -> ApprovalKey:
    """The approval key of `project_root` under the state folder `state` (made on first use)."""
    digest = hashlib.sha256(os.fsencode(project_root.resolve())).hexdigest()
    return ApprovalKey(state / "keys" / f"{digest}.key")


def gate_key(state: Path) -> GateKey:
    """This machine's gate key under the state folder `state` (made on first use)."""
    return GateKey(state / "gate" / "gate.key", socket.gethostname())


def store_is_shared(project_root: Path, env: Mapping[str, str]) -> bool:
    """True when the run state of `project_root` is in a PostgreSQL store other machines
    share: `DEEPWORK_STORE_URL` in `env` names one, else the project's store URL does."""
    url = choose_store_url(project_root, env.get(STORE_URL_ENV)) or ""
    return url.strip().lower().startswith(_SHARED_SCHEMES)


def trusted_approvers(project_root: Path, env: Mapping[str, str]) -> TrustedApprovers:
    """The approvers `project_root` trusts (`.deepwork/approvers/` as committed on the ref
    `approvals.trusted_ref` of its config names, else its base branch), shared as its store is."""
    return TrustedApprovers(
        project_root,
        ref=load_config(project_root).approvals.trusted_ref,
        shared=store_is_shared(project_root, env),
    )


def approver_path(state: Path, name: str) -> Path:
    return state / "approvers" / f"{name}.key"


def local_signer(
    state: Path, env: Mapping[str, str], name: str | None, trusted: TrustedApprovers
) -> ApproverSigner | None:
    """The approver who signs here: `name`, else `DEEPWORK_APPROVER`, else the only key in
    `<state>/approvers/`; None when there is none. Several keys and no name: an error, but only
    where `trusted` requires a signature; elsewhere the project's seal decides and no key is
    chosen (docs/team.md)."""
    chosen = name or env.get(APPROVER_ENV) or None
    if chosen is not None:
        return ApproverSigner(chosen, approver_path(state, chosen))
    if not trusted.required():
        return None
    try:
        names = sorted(p.stem for p in (state / "approvers").glob("*.key"))
    except OSError:
        names = []
    if not names:
        return None
    if len(names) > 1:
        raise ApprovalKeyError(
            f"several approver keys in {state / 'approvers'} ({', '.join(names)}): say which "
            f"signs with --approver NAME or {APPROVER_ENV}",
            code=ErrorCode.APPROVAL_KEY_UNAVAILABLE,
        )
    return ApproverSigner(names[0], approver_path(state, names[0]))
