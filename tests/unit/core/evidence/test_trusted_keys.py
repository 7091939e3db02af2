"""Keys trusted from a git ref (docs/security.md): a folder's `.pub` files as committed on the
base branch, never as the working tree or the run's branch holds them."""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path

import pytest
from deepwork_core.evidence.trusted_keys import (
    TrustError,
    public_line,
    resolve_trusted_ref,
    trusted_keys,
    where_key_is,
)

from tests.conftest import Repo

FOLDER = ".deepwork/approvers"
ALICE = bytes(range(32))
BOB = bytes(range(1, 33))


def pub(name: str, key: bytes, kind: str = "deepwork-approver") -> tuple[str, str]:
    return f"{FOLDER}/{name}.pub", public_line(key, kind)


@pytest.fixture
def project(make_repo: Callable[..., Repo]) -> Repo:
    """A repository whose `main` trusts alice."""
    repo = make_repo()
    repo.write(*pub("alice", ALICE))
    repo.write(f"{FOLDER}/README.md", "who approves\n")
    repo.commit("alice approves")
    return repo


def test_the_keys_are_the_pub_files_committed_on_the_ref(project: Repo) -> None:
    assert trusted_keys(project.root, "main", FOLDER) == {"alice": ALICE}
    ref = resolve_trusted_ref(project.root, None)
    assert ref.name == "main"
    assert trusted_keys(project.root, ref, FOLDER) == {"alice": ALICE}


def test_a_key_only_in_the_working_tree_or_on_the_branch_is_not_trusted(project: Repo) -> None:
    project.git("checkout", "-q", "-b", "deepwork/run")
    project.write(*pub("mallory", BOB))  # untracked
    ref = resolve_trusted_ref(project.root, None)
    assert trusted_keys(project.root, ref, FOLDER) == {"alice": ALICE}
    assert "only in the working tree" in where_key_is(project.root, ref, FOLDER, "mallory")

    project.commit("mallory approves")  # on the run's branch
    assert trusted_keys(project.root, resolve_trusted_ref(project.root, None), FOLDER) == {
        "alice": ALICE
    }
    where = where_key_is(project.root, ref, FOLDER, "mallory")
    assert f"{FOLDER}/mallory.pub is committed on the current branch" in where
    assert "main" in where
    assert "no .deepwork/approvers/carol.pub" in where_key_is(project.root, ref, FOLDER, "carol")

    project.git("checkout", "-q", "main")
    project.git("merge", "-q", "deepwork/run")  # merged into the base branch: now it counts
    assert trusted_keys(project.root, "main", FOLDER) == {"alice": ALICE, "mallory": BOB}


def test_an_edit_of_a_trusted_key_in_the_working_tree_changes_nothing(project: Repo) -> None:
    project.write(*pub("alice", BOB))
    assert trusted_keys(project.root, "main", FOLDER) == {"alice": ALICE}


def test_the_remote_default_branch_comes_first(project: Repo, tmp_path: Path) -> None:
    clone = Repo(tmp_path / "clone")
    project.git("clone", "-q", str(project.root), str(clone.root), cwd=tmp_path)
    clone.git("checkout", "-q", "-b", "main2")
    clone.write(*pub("mallory", BOB))
    clone.commit("on a local branch only")
    clone.git("branch", "-f", "main", "main2")  # the local main moved; the remote's did not
    ref = resolve_trusted_ref(clone.root, None)
    assert ref.name == "origin/main"
    assert trusted_keys(clone.root, ref, FOLDER) == {"alice": ALICE}


def test_master_is_the_last_default(make_repo: Callable[..., Repo]) -> None:
    repo = make_repo()
    repo.git("checkout", "-q", "-b", "master")
    repo.write(*pub("alice", ALICE))
    repo.commit()
    assert resolve_trusted_ref(repo.root, None).name == "master"


def test_a_configured_ref_wins_and_must_exist(project: Repo) -> None:
    project.git("checkout", "-q", "-b", "release")
    project.write(*pub("bob", BOB))
    project.commit()
    assert trusted_keys(project.root, resolve_trusted_ref(project.root, "release"), FOLDER) == {
        "alice": ALICE,
        "bob": BOB,
    }
    for missing in ("trunk", "origin/trunk"):
        with pytest.raises(TrustError) as caught:
            resolve_trusted_ref(project.root, missing)
        assert caught.value.code == "trust.ref_not_found"
        assert repr(missing) in caught.value.message
    with pytest.raises(TrustError) as caught:
        trusted_keys(project.root, "trunk", FOLDER)
    assert caught.value.code == "trust.ref_not_found"


@pytest.mark.parametrize("ref", ["--output=/tmp/x", "main..release", "a b", "-"])
def test_a_ref_that_cannot_be_one_is_refused_before_git_sees_it(project: Repo, ref: str) -> None:
    with pytest.raises(TrustError) as caught:
        resolve_trusted_ref(project.root, ref)
    assert caught.value.code == "trust.ref_not_found"


def test_without_any_base_branch_or_outside_git_it_says_so(
    make_repo: Callable[..., Repo], tmp_path: Path
) -> None:
    repo = make_repo()
    repo.git("checkout", "-q", "-b", "trunk")
    repo.commit()
    with pytest.raises(TrustError) as caught:
        resolve_trusted_ref(repo.root, None)
    assert "origin/HEAD, main, master" in caught.value.message
    assert "approvals.trusted_ref" in caught.value.message
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(TrustError) as caught:
        resolve_trusted_ref(plain, None)
    assert caught.value.code == "trust.ref_not_found"
    assert "not in a git repository" in caught.value.message


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("eve.pub", ""),
        ("eve.pub", "ssh-ed25519 AAAA\n"),
        ("eve.pub", "deepwork-approver ed25519 !!!\n"),
        ("eve.pub", "deepwork-approver ed25519 " + base64.b64encode(b"short").decode()),
        ("eve.pub", public_line(BOB) + public_line(ALICE)),
        ("eve.pub", "x" * 5000),
        ("bad name.pub", public_line(BOB)),
    ],
)
def test_a_malformed_pub_on_the_ref_is_an_error_naming_it(
    project: Repo, name: str, text: str
) -> None:
    project.write(f"{FOLDER}/{name}", text)
    project.commit()
    with pytest.raises(TrustError) as caught:
        trusted_keys(project.root, "main", FOLDER)
    assert caught.value.code == "trust.key_malformed"
    assert f"{FOLDER}/{name}" in caught.value.message
    assert "main" in caught.value.message


def test_a_pub_that_is_a_link_or_a_folder_is_malformed(project: Repo) -> None:
    (project.root / FOLDER / "eve.pub").symlink_to("alice.pub")
    project.commit()
    with pytest.raises(TrustError) as caught:
        trusted_keys(project.root, "main", FOLDER)
    assert "not a regular file" in caught.value.message
    project.git("rm", "-q", f"{FOLDER}/eve.pub")
    project.write(f"{FOLDER}/eve.pub/inner", "x")
    project.commit()
    with pytest.raises(TrustError) as caught:
        trusted_keys(project.root, "main", FOLDER)
    assert caught.value.code == "trust.key_malformed"


def test_the_folder_and_kind_are_the_callers(project: Repo) -> None:
    project.write(".deepwork/gate_keys/laptop.pub", public_line(BOB, "deepwork-gate"))
    project.commit()
    assert trusted_keys(project.root, "main", ".deepwork/gate_keys", kind="deepwork-gate") == {
        "laptop": BOB
    }
    with pytest.raises(TrustError):  # an approver's line is no gate key
        trusted_keys(project.root, "main", FOLDER, kind="deepwork-gate")
    assert trusted_keys(project.root, "main", ".deepwork/ci_keys") == {}


def test_a_new_commit_on_the_ref_is_seen_at_once(project: Repo) -> None:
    assert trusted_keys(project.root, "main", FOLDER) == {"alice": ALICE}
    project.git("rm", "-q", f"{FOLDER}/alice.pub")
    project.write(*pub("bob", BOB))
    project.commit("bob instead")
    assert trusted_keys(project.root, "main", FOLDER) == {"bob": BOB}


def test_a_project_in_a_subfolder_of_the_repository(make_repo: Callable[..., Repo]) -> None:
    repo = make_repo()
    repo.write(f"sub/{FOLDER}/alice.pub", public_line(ALICE))
    repo.write(f"{FOLDER}/bob.pub", public_line(BOB))
    repo.commit()
    sub = repo.root / "sub"
    assert trusted_keys(sub, resolve_trusted_ref(sub, None), FOLDER) == {"alice": ALICE}
